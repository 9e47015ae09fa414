// Package mcpserver is the MCPServer controller: it runs each MCP server
// behind ToolHive's proxy runner (RunConfig ConfigMap, runner ServiceAccount
// bound to the proxy-runner ClusterRole, proxy Deployment and Service),
// rolls the proxy when its RunConfig changes, and reports status. The
// children are built by pkg/toolhive/render/proxy (BuildMCPServer) and
// compared by pkg/drift, both pure; sync.go is the only file that writes.
package mcpserver

import (
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and its metrics
// label.
const Name = "mcpserver"

// resource is the metrics label of the custom resource.
const resource = "mcpservers"

// Controller converges MCPServers.
type Controller struct {
	*workload.Base

	kube     kubernetes.Interface
	toolhive versioned.Interface
	servers  thlisters.MCPServerLister
	// pods are the proxy pods, whose failures the status reports.
	pods *workload.ProxyPods
	// runners caches the StatefulSets labelled toolhive=true, among them
	// the one ToolHive's runner creates for each MCPServer (named as the
	// server): a proxy that is up while that StatefulSet is gone serves a
	// dead backend, and the status says so.
	runners cache.Indexer
}

// New builds the controller and registers its event handlers.
func New(d *framework.Deps) (*Controller, error) {
	servers := workload.Informer(d, thv1.KindMCPServer)
	c := &Controller{kube: d.Kube, toolhive: d.Toolhive, servers: thlisters.NewMCPServerLister(servers.Indexer())}
	var err error
	c.Base, err = workload.NewBase(d, workload.Spec{Name: Name, Resource: resource, Kind: thv1.KindMCPServer, Primary: servers,
		GroupMember: true, Sync: c.sync, Phases: workload.Phases{Pending: thv1.MCPServerPhasePending, Failed: thv1.MCPServerPhaseFailed, ReadyReasons: true, RefFailed: true}})
	if err != nil {
		return nil, err
	}
	if c.pods, err = workload.WatchProxyPods(d, c.Loop, naming.AppMCPServer); err != nil {
		return nil, err
	}
	sts := d.KubeInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Apps().V1().StatefulSets().Informer()
	})
	c.runners = sts.Indexer()
	// Only a StatefulSet's coming and going changes the status; its
	// updates (replica counts, the runner's own writes) do not.
	synced, err := sts.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: c.enqueueRunner, DeleteFunc: c.enqueueRunner})
	if err != nil {
		return nil, err
	}
	c.Loop.AddSynced(synced)
	return c, nil
}

// enqueueRunner re-syncs the MCPServer a runner StatefulSet belongs to:
// the one its toolhive-name label names, else the one named as it (the
// runner names it so).
func (c *Controller) enqueueRunner(obj any) {
	m, ok := framework.MetaFromObj(obj)
	if !ok {
		return
	}
	name := m.GetLabels()[naming.LabelToolhiveName]
	if name == "" {
		name = m.GetName()
	}
	c.Loop.EnqueueKey(cache.NewObjectName(m.GetNamespace(), name))
}

// runnerMissing reports whether the runner's StatefulSet of the MCPServer
// namespace/name is absent from the cache.
func (c *Controller) runnerMissing(namespace, name string) bool {
	_, exists, err := c.runners.GetByKey(namespace + "/" + naming.MCPServerRunnerStatefulSetName(name))
	return err == nil && !exists
}
