// Package mcpserver is the MCPServer controller: it runs each MCP server
// behind ToolHive's proxy runner (RunConfig ConfigMap, runner ServiceAccount
// bound to the proxy-runner ClusterRole, proxy Deployment and Service),
// rolls the proxy when its RunConfig changes, and reports status. build.go
// and the comparators in pkg/workload are pure; sync.go is the only file
// that writes.
package mcpserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue and its metrics label.
const Name = "mcpserver"

// resource is the metrics label of the custom resource.
const resource = "mcpservers"

// Controller converges MCPServers.
type Controller struct {
	*controller.Loop

	kube     kubernetes.Interface
	toolhive versioned.Interface
	writer   *controller.Writer
	recorder record.EventRecorder
	clock    clock.PassiveClock

	servers     thlisters.MCPServerLister
	serverIndex cache.Indexer
	oidcConfigs thlisters.MCPOIDCConfigLister
	groups      thlisters.MCPGroupLister
	children    *workload.Children

	runnerImage string
	// runnerClusterRole is what each runner's RoleBinding grants.
	runnerClusterRole string
}

// New builds the controller from the shared informer factories and
// registers its event handlers.
func New(d *app.Deps) (*Controller, error) {
	th := d.ToolhiveInformers.Toolhive().V1beta1()
	servers := th.MCPServers()
	oidc := th.MCPOIDCConfigs()
	groups := th.MCPGroups()
	children, childInformers := workload.NewChildren(d.Kube, d.KubeInformers)

	c := &Controller{
		kube:        d.Kube,
		toolhive:    d.Toolhive,
		writer:      controller.NewWriter(Name),
		recorder:    d.Recorder,
		clock:       clock.RealClock{},
		servers:     servers.Lister(),
		serverIndex: servers.Informer().GetIndexer(),
		oidcConfigs: oidc.Lister(),
		groups:      groups.Lister(),
		children:    children,
		runnerImage: d.Options.RunnerImage,
	}
	c.runnerClusterRole = d.Options.Runners.WithDefaults().ProxyRunner
	wiring := workload.Wiring{
		Primary: servers.Informer(),
		Owner:   thv1.Kind(thv1.KindMCPServer),
		Lookup: func(ns, name string) (types.UID, bool) {
			s, err := c.servers.MCPServers(ns).Get(name)
			if err != nil {
				return "", false
			}
			return s.UID, true
		},
		Children:    childInformers,
		OIDCConfigs: oidc.Informer(),
	}
	c.Loop = controller.NewLoop(Name+d.QueueSuffix, c.sync, wiring.Synced(groups.Informer())...)
	if err := wiring.Register(c.Loop); err != nil {
		return nil, err
	}
	// A group's creation or deletion flips GroupRefValidated of its members.
	if _, err := groups.Informer().AddEventHandler(mcpgroup.MemberHandler(c.serverIndex, c.EnqueueKey)); err != nil {
		return nil, err
	}
	return c, nil
}

// Register is the constructor pkg/app/controllers registers.
func Register(d *app.Deps) (app.Runnable, error) {
	c, err := New(d)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	return c, nil
}
