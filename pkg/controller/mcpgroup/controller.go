package mcpgroup

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	listers "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

const (
	// Name is the controller's name: its queue, its writer and the
	// controller label of its metrics.
	Name = "mcpgroup"
	// resource is the resource label of the controller's write metrics.
	resource = "mcpgroups"
)

// Controller keeps MCPGroup.status equal to the group's membership as seen
// through the ByGroup index of the MCPServer, MCPRemoteProxy and
// MCPServerEntry informers.
type Controller struct {
	*framework.Loop

	client versioned.Interface
	groups listers.MCPGroupLister
	// servers and proxies are the workload informers' indexers; only their
	// ByGroup index is read, never a namespace list.
	servers cache.Indexer
	proxies cache.Indexer
	entries cache.Indexer
	writer  *framework.Writer
	clock   clock.PassiveClock
	// fanIn is the base delay of a recompute woken by a member.
	fanIn time.Duration
}

// New builds the controller and registers its event handlers. The
// workload informers must carry the index.ByGroup index
// (index.AddToInformers); without it every group syncs to phase Failed.
func New(d *framework.Deps) (*Controller, error) {
	groups := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPGroups().Informer()
	})
	servers := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return index.InformerFor(f, thv1.KindMCPServer)
	})
	proxies := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return index.InformerFor(f, thv1.KindMCPRemoteProxy)
	})
	entries := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return index.InformerFor(f, thv1.KindMCPServerEntry)
	})
	c := &Controller{
		client:  d.Toolhive,
		groups:  listers.NewMCPGroupLister(groups.Indexer()),
		servers: servers.Indexer(),
		proxies: proxies.Indexer(),
		entries: entries.Indexer(),
		writer:  d.NewWriter(Name),
		clock:   d.Clock,
		fanIn:   d.FanInWindow,
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Loop = framework.NewLoop(Name, c.sync)
	c.AddPrimary(groups.Indexer())
	// Waiting for the handler registrations (not just the informers) means
	// every initial object has been delivered before the first sync.
	for _, h := range []struct {
		inf *framework.Informer
		h   cache.ResourceEventHandler
	}{{groups, c.groupHandler()}, {servers, c.workloadHandler(thv1.KindMCPServer)}, {proxies, c.workloadHandler(thv1.KindMCPRemoteProxy)},
		{entries, c.workloadHandler(thv1.KindMCPServerEntry)}} {
		synced, err := h.inf.AddEventHandler(h.h)
		if err != nil {
			return nil, fmt.Errorf("adding handler: %w", err)
		}
		c.AddSynced(synced)
	}
	return c, nil
}

// groupHandler is the MCPGroup handler. A deleted group needs no sync:
// there is no status left to write, and the workload controllers learn of
// it through MemberHandler.
func (c *Controller) groupHandler() cache.ResourceEventHandlerFuncs {
	return framework.PrimaryHandler(c.Loop, c.writer)
}

// workloadHandler re-syncs the groups a workload of kind belongs to. On an
// update it enqueues both the old and the new group, so a workload that
// switches from A to B leaves A and joins B; when the group did not change
// (including resyncs and the workloads' frequent status writes) membership
// cannot have changed and nothing is enqueued. Tombstones are unwrapped so a
// deletion missed by the watch still shrinks the group it was in.
//
// A group is enqueued after framework.FanInDelay, so that members joining
// or leaving together cost one write of the member lists, not one each.
func (c *Controller) workloadHandler(kind string) cache.ResourceEventHandlerFuncs {
	groupsOf := func(obj any) []cache.ObjectName {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		return index.ReferenceNames(kind, index.ByGroup, obj)
	}
	enqueue := func(keys ...[]cache.ObjectName) {
		for _, ks := range keys {
			for _, k := range ks {
				listed := 0
				if g, err := c.groups.MCPGroups(k.Namespace).Get(k.Name); err == nil {
					listed = int(g.Status.ServerCount + g.Status.RemoteProxyCount + g.Status.EntryCount)
				}
				c.EnqueueCoalesced(k, framework.FanInDelay(c.fanIn, listed))
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
