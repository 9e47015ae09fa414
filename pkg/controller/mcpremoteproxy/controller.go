// Package mcpremoteproxy is the MCPRemoteProxy controller: it puts
// ToolHive's proxy runner in front of an MCP server outside the cluster
// (RunConfig ConfigMap with remote_url, runner RBAC unless the spec names
// its own service account, proxy Deployment and Service), rolls the proxy
// when its RunConfig changes or its podTemplateSpec is edited, and reports
// status. A spec whose remote URL or forwarded headers fail the checks
// (checkSpec, with pkg/toolhive/wiring's url_validation.go and
// headerforward.go) is not deployed, and what an earlier spec deployed is
// left as it is.
//
// There is no finalizer: unlike the MCPServer runner, the remote proxy
// runner creates no objects of its own, and every child carries an owner
// reference, so garbage collection is the whole cleanup.
//
// The children are built by pkg/toolhive/render/proxy (BuildRemoteProxy)
// and compared by pkg/drift, both pure; sync.go is the only file that
// writes.
package mcpremoteproxy

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and its metrics
// label.
const Name = "mcpremoteproxy"

// Controller converges MCPRemoteProxies.
type Controller struct {
	*workload.Base

	toolhive versioned.Interface
	proxies  thlisters.MCPRemoteProxyLister
	// pods are the proxy pods, whose failures the status reports.
	pods *workload.ProxyPods
}

// New builds the controller and registers its event handlers.
func New(d *framework.Deps) (*Controller, error) {
	proxies := workload.Informer(d, thv1.KindMCPRemoteProxy)
	c := &Controller{toolhive: d.Toolhive, proxies: thlisters.NewMCPRemoteProxyLister(proxies.Indexer())}
	var err error
	c.Base, err = workload.NewBase(d, workload.Spec{Name: Name, Resource: "mcpremoteproxies", Kind: thv1.KindMCPRemoteProxy,
		Primary: proxies, GroupMember: true, Sync: c.sync,
		Phases: workload.Phases{Pending: thv1.MCPRemoteProxyPhasePending, Failed: thv1.MCPRemoteProxyPhaseFailed, RefFailed: true}})
	if err != nil {
		return nil, err
	}
	// spec.podTemplateSpec is merged into the proxy pod; what only it
	// sets is compared through its hash annotation.
	c.Children.Deployments = workload.WithPodTemplateSpec(c.Children.Deployments)
	if c.pods, err = workload.WatchProxyPods(d, c.Loop, naming.AppMCPRemoteProxy); err != nil {
		return nil, err
	}
	return c, nil
}
