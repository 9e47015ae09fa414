// Package mcpserver is the MCPServer controller: it runs each MCP server
// behind ToolHive's proxy runner (RunConfig ConfigMap, runner RBAC, proxy
// Deployment and Service), rolls the proxy when its RunConfig changes, and
// reports status. build.go and the comparators in pkg/workload are pure;
// sync.go is the only file that writes.
package mcpserver

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
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
	synced := []cache.InformerSynced{servers.Informer().HasSynced, oidc.Informer().HasSynced, groups.Informer().HasSynced}
	for _, inf := range childInformers {
		synced = append(synced, inf.HasSynced)
	}
	c.Loop = controller.NewLoop(Name+d.QueueSuffix, c.sync, synced...)

	if _, err := servers.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.Enqueue,
		UpdateFunc: func(_, obj any) { c.Enqueue(obj) },
		DeleteFunc: c.Enqueue,
	}); err != nil {
		return nil, err
	}
	owner := thv1.Kind(thv1.KindMCPServer)
	lookup := func(ns, name string) (types.UID, bool) {
		s, err := c.servers.MCPServers(ns).Get(name)
		if err != nil {
			return "", false
		}
		return s.UID, true
	}
	for _, inf := range childInformers {
		if _, err := inf.AddEventHandler(controller.ChildHandler(owner, lookup, c.EnqueueKey)); err != nil {
			return nil, err
		}
	}
	if _, err := oidc.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOIDCReferrers,
		UpdateFunc: c.oidcConfigUpdated,
		DeleteFunc: c.enqueueOIDCReferrers,
	}); err != nil {
		return nil, err
	}
	if _, err := groups.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueGroupMembers,
		DeleteFunc: c.enqueueGroupMembers,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueueByIndex enqueues every MCPServer whose index value is the key of
// obj. It costs O(referrers): no namespace is listed.
func (c *Controller) enqueueByIndex(indexName string, obj any) {
	m, ok := controller.MetaFromObj(obj)
	if !ok {
		return
	}
	names, err := index.Referrers(c.serverIndex, indexName, index.Key(m.GetNamespace(), m.GetName()))
	if err != nil {
		return
	}
	for _, n := range names {
		c.EnqueueKey(m.GetNamespace() + "/" + n)
	}
}

func (c *Controller) enqueueOIDCReferrers(obj any) { c.enqueueByIndex(index.ByOIDCConfig, obj) }

func (c *Controller) enqueueGroupMembers(obj any) { c.enqueueByIndex(index.ByGroup, obj) }

// oidcConfigUpdated re-syncs the referrers only when something they
// consume changed: the spec, the config hash, validity or deletion. The
// MCPOIDCConfig controller rewrites referencingWorkloads whenever a
// referrer comes or goes; re-syncing every referrer for that would make
// creating N referrers cost O(N²) syncs.
func (c *Controller) oidcConfigUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*thv1.MCPOIDCConfig)
	n, ok2 := newObj.(*thv1.MCPOIDCConfig)
	if !ok1 || !ok2 {
		return
	}
	if apiequality.Semantic.DeepEqual(o.Spec, n.Spec) &&
		o.Status.ConfigHash == n.Status.ConfigHash &&
		validStatus(o) == validStatus(n) &&
		(o.DeletionTimestamp == nil) == (n.DeletionTimestamp == nil) {
		return
	}
	c.enqueueOIDCReferrers(newObj)
}

func validStatus(cfg *thv1.MCPOIDCConfig) string {
	if cond := meta.FindStatusCondition(cfg.Status.Conditions, thv1.ConditionValid); cond != nil {
		return string(cond.Status)
	}
	return ""
}

// Register is the constructor pkg/app/controllers registers.
func Register(d *app.Deps) (app.Runnable, error) {
	c, err := New(d)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	return c, nil
}
