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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
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
const Name = "mcpremoteproxy"

// Controller converges MCPRemoteProxies.
type Controller struct {
	*workload.Base

	toolhive versioned.Interface
	proxies  thlisters.MCPRemoteProxyLister
	// pods holds the proxy pods (naming.RemoteProxyPodSelector), trimmed
	// to their containers' states (framework.TrimPod).
	pods cache.Indexer
}

// New builds the controller and registers its event handlers.
func New(d *framework.Deps) (*Controller, error) {
	proxies := workload.Informer(d, thv1.KindMCPRemoteProxy)
	c := &Controller{toolhive: d.Toolhive, proxies: thlisters.NewMCPRemoteProxyLister(proxies.Indexer())}
	var err error
	c.Base, err = workload.NewBase(d, workload.Spec{Name: Name, Resource: "mcpremoteproxies", Kind: thv1.KindMCPRemoteProxy,
		Primary: proxies, GroupMember: true, Sync: c.sync,
		Phases: workload.Phases{Pending: thv1.MCPRemoteProxyPhasePending, Failed: thv1.MCPRemoteProxyPhaseFailed}})
	if err != nil {
		return nil, err
	}
	// spec.podTemplateSpec is merged into the proxy pod; what only it
	// sets is compared through its hash annotation.
	c.Children.Deployments = workload.WithPodTemplateSpec(c.Children.Deployments)
	if err := c.watchPods(d); err != nil {
		return nil, err
	}
	return c, nil
}

// watchPods re-syncs a proxy when one of its pods appears, goes away, or
// changes what its status reads of it (viewPod): a pod's other status
// writes, such as its conditions' probe times, enqueue nothing.
func (c *Controller) watchPods(d *framework.Deps) error {
	pods, err := d.SelectedInformer(naming.RemoteProxyPodSelector, func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	})
	if err != nil {
		return err
	}
	c.pods = pods.Indexer()
	synced, err := pods.AddEventHandler(c.podHandler())
	if err != nil {
		return err
	}
	c.AddSynced(synced)
	return nil
}

// podHandler enqueues the proxy of a pod added or deleted, or whose
// viewPod changed.
func (c *Controller) podHandler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueProxyOf,
		DeleteFunc: c.enqueueProxyOf,
		UpdateFunc: func(oldObj, newObj any) {
			if viewPod(oldObj) != viewPod(newObj) {
				c.enqueueProxyOf(newObj)
			}
		},
	}
}

// enqueueProxyOf enqueues the MCPRemoteProxy a proxy pod (or its
// tombstone) belongs to, named by its instance label.
func (c *Controller) enqueueProxyOf(obj any) {
	if m, ok := framework.MetaFromObj(obj); ok {
		if name := m.GetLabels()[naming.LabelInstance]; name != "" {
			c.EnqueueKey(cache.NewObjectName(m.GetNamespace(), name))
		}
	}
}

// podView is what a proxy's status reads of one of its pods.
type podView struct {
	labels  string
	failure string
}

func viewPod(obj any) podView {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return podView{}
	}
	return podView{labels: labels.Set(pod.Labels).String(), failure: podFailure(pod)}
}

// proxyPods are the cached pods of proxy p, selected as ToolHive's
// operator selects them: by all of the proxy's workload labels.
func (c *Controller) proxyPods(p *thv1.MCPRemoteProxy) []*corev1.Pod {
	objs, err := c.pods.ByIndex(cache.NamespaceIndex, p.Namespace)
	if err != nil {
		return nil
	}
	want := labels.SelectorFromSet(naming.Labels(naming.AppMCPRemoteProxy, p.Name))
	var out []*corev1.Pod
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && want.Matches(labels.Set(pod.Labels)) {
			out = append(out, pod)
		}
	}
	return out
}
