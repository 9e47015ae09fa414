// Package mcpserver is the MCPServer controller: it runs each MCP server
// behind ToolHive's proxy runner (RunConfig ConfigMap, runner ServiceAccount
// bound to the proxy-runner ClusterRole, proxy Deployment and Service),
// rolls the proxy when its RunConfig changes, and reports status. The
// children are built by pkg/toolhive/render/proxy (BuildMCPServer) and
// compared by pkg/drift, both pure; sync.go is the only file that writes.
package mcpserver

import (
	"k8s.io/client-go/kubernetes"

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
	return c, nil
}
