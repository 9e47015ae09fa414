// Package mcpremoteproxy is the MCPRemoteProxy controller: it puts
// ToolHive's proxy runner in front of an MCP server outside the cluster
// (RunConfig ConfigMap with remote_url, runner RBAC unless the spec names
// its own service account, proxy Deployment and Service), rolls the proxy
// when its RunConfig changes, and reports status.
//
// There is no finalizer: unlike the MCPServer runner, the remote proxy
// runner creates no objects of its own, and every child carries an owner
// reference, so garbage collection is the whole cleanup.
//
// build.go and the comparators in pkg/workload are pure; sync.go is the
// only file that writes.
package mcpremoteproxy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
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
const Name = "mcpremoteproxy"

// resource is the metrics label of the custom resource.
const resource = "mcpremoteproxies"

// Controller converges MCPRemoteProxies.
type Controller struct {
	*controller.Loop

	toolhive versioned.Interface
	writer   *controller.Writer
	recorder record.EventRecorder
	clock    clock.PassiveClock

	proxies     thlisters.MCPRemoteProxyLister
	proxyIndex  cache.Indexer
	oidcConfigs thlisters.MCPOIDCConfigLister
	groups      thlisters.MCPGroupLister
	children    *workload.Children

	runnerImage string
	// runnerClusterRole is what each runner's RoleBinding grants.
	runnerClusterRole string
}

// New builds the controller from the shared informer factories and
// registers its event handlers. The MCPRemoteProxy informer must carry the
// reference indexes (index.AddToInformers).
func New(d *app.Deps) (*Controller, error) {
	th := d.ToolhiveInformers.Toolhive().V1beta1()
	proxies := th.MCPRemoteProxies()
	oidc := th.MCPOIDCConfigs()
	groups := th.MCPGroups()
	children, childInformers := workload.NewChildren(d.Kube, d.KubeInformers)

	c := &Controller{
		toolhive:    d.Toolhive,
		writer:      controller.NewWriter(Name),
		recorder:    d.Recorder,
		clock:       clock.RealClock{},
		proxies:     proxies.Lister(),
		proxyIndex:  proxies.Informer().GetIndexer(),
		oidcConfigs: oidc.Lister(),
		groups:      groups.Lister(),
		children:    children,
		runnerImage: d.Options.RunnerImage,
	}
	c.runnerClusterRole = d.Options.Runners.WithDefaults().RemoteProxyRunner
	wiring := workload.Wiring{
		Primary: proxies.Informer(),
		Owner:   thv1.Kind(thv1.KindMCPRemoteProxy),
		Lookup: func(ns, name string) (types.UID, bool) {
			p, err := c.proxies.MCPRemoteProxies(ns).Get(name)
			if err != nil {
				return "", false
			}
			return p.UID, true
		},
		Children:    childInformers,
		OIDCConfigs: oidc.Informer(),
	}
	c.Loop = controller.NewLoop(Name+d.QueueSuffix, c.sync, wiring.Synced(groups.Informer())...)
	if err := wiring.Register(c.Loop); err != nil {
		return nil, err
	}
	// A group's creation or deletion flips GroupRefValidated of its members.
	if _, err := groups.Informer().AddEventHandler(mcpgroup.MemberHandler(c.proxyIndex, c.EnqueueKey)); err != nil {
		return nil, err
	}
	return c, nil
}

// Register is the constructor pkg/app/controllers registers.
func Register(d *app.Deps) (app.Runnable, error) {
	c, err := New(d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return c, nil
}
