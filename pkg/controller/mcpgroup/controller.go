package mcpgroup

import (
	"fmt"
	"slices"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	listers "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

const (
	// Name is the controller's name: the base of its queue name and the
	// controller label of its metrics.
	Name = "mcpgroup"
	// Resource is the resource label of the controller's write metrics.
	Resource = "mcpgroups"
)

// Controller keeps MCPGroup.status equal to the group's membership as seen
// through the ByGroup index of the MCPServer and MCPRemoteProxy informers.
type Controller struct {
	*controller.Loop

	client versioned.Interface
	groups listers.MCPGroupLister
	// servers and proxies are the workload informers' indexers; only their
	// ByGroup index is read, never a namespace list.
	servers cache.Indexer
	proxies cache.Indexer
	writer  *controller.Writer
	clock   clock.PassiveClock
}

// NewFromDeps is the app.Constructor of the controller. The queue name gets
// Deps.QueueSuffix so that one controller per watched namespace still has a
// unique queue.
func NewFromDeps(d *app.Deps) (app.Runnable, error) {
	return New(Name+d.QueueSuffix, d.Toolhive, d.ToolhiveInformers, clock.RealClock{})
}

// New builds the controller on the informers of f and registers its event
// handlers. The workload informers of f must carry the index.ByGroup index
// (index.AddToInformers); without it every group syncs to phase Failed.
// clk stamps condition transition times, so tests can fix it.
func New(name string, client versioned.Interface, f informers.SharedInformerFactory, clk clock.PassiveClock) (*Controller, error) {
	groupInformer := f.Toolhive().V1beta1().MCPGroups()
	serverInformer := index.InformerFor(f, thv1.KindMCPServer)
	proxyInformer := index.InformerFor(f, thv1.KindMCPRemoteProxy)

	c := &Controller{
		client:  client,
		groups:  groupInformer.Lister(),
		servers: serverInformer.GetIndexer(),
		proxies: proxyInformer.GetIndexer(),
		writer:  controller.NewWriter(name),
		clock:   clk,
	}

	groupReg, err := groupInformer.Informer().AddEventHandler(c.groupHandler())
	if err != nil {
		return nil, fmt.Errorf("adding MCPGroup handler: %w", err)
	}
	serverReg, err := serverInformer.AddEventHandler(c.workloadHandler(thv1.KindMCPServer))
	if err != nil {
		return nil, fmt.Errorf("adding MCPServer handler: %w", err)
	}
	proxyReg, err := proxyInformer.AddEventHandler(c.workloadHandler(thv1.KindMCPRemoteProxy))
	if err != nil {
		return nil, fmt.Errorf("adding MCPRemoteProxy handler: %w", err)
	}
	// Waiting for the handler registrations (not just the informers) means
	// every initial object has been delivered before the first sync.
	c.Loop = controller.NewLoop(name, c.sync, groupReg.HasSynced, serverReg.HasSynced, proxyReg.HasSynced)
	return c, nil
}

// groupHandler enqueues a group when it appears or changes. Resyncs are
// kept: for the primary resource they are the periodic re-check. A change
// of the status alone is this controller's own write and is dropped. A
// deleted group needs no work here: there is no status left to write, and
// the workload controllers learn of it through MemberHandler.
func (c *Controller) groupHandler() cache.ResourceEventHandlerFuncs {
	// Closures, not the method value c.Enqueue: New registers the handlers
	// before it creates c.Loop, and a method value would bind the nil Loop.
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.Enqueue(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			if !controller.StatusOnlyUpdate(oldObj, newObj) {
				c.Enqueue(newObj)
			}
		},
	}
}

// workloadHandler re-syncs the groups a workload of kind belongs to. On an
// update it enqueues both the old and the new group, so a workload that
// switches from A to B leaves A and joins B; when the group did not change
// (including resyncs and the workloads' frequent status writes) membership
// cannot have changed and nothing is enqueued. Tombstones are unwrapped so a
// deletion missed by the watch still shrinks the group it was in.
func (c *Controller) workloadHandler(kind string) cache.ResourceEventHandlerFuncs {
	groupsOf := func(obj any) []string {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		return index.References(kind, index.ByGroup, obj)
	}
	enqueue := func(keys ...[]string) {
		for _, ks := range keys {
			for _, k := range ks {
				c.EnqueueKey(k)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { enqueue(groupsOf(obj)) },
		UpdateFunc: func(oldObj, newObj any) {
			oldKeys, newKeys := groupsOf(oldObj), groupsOf(newObj)
			if slices.Equal(oldKeys, newKeys) {
				return
			}
			enqueue(oldKeys, newKeys)
		},
		DeleteFunc: func(obj any) { enqueue(groupsOf(obj)) },
	}
}
