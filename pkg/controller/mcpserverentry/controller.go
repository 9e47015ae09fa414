// Package mcpserverentry is the MCPServerEntry controller. An entry runs
// nothing: it declares a remote MCP server as a member of a group, for the
// group's VirtualMCPServers to reach directly. The controller checks what
// ToolHive's operator checks — the remote URL (the same gate as a remote
// proxy's), the group (exists and Ready), the MCPExternalAuthConfig it
// names (exists) — and writes the phase (Valid or Failed) and one
// condition per check; the status is its only write.
//
// Two of ToolHive's checks are not made: the CA bundle ConfigMap is
// reported Unknown (not yet checked for an entry, as it is for a
// VirtualMCPServer), and the header Secrets (hivekeeper cannot read
// Secrets) are not reported. Neither fails the entry; the vMCP that
// mounts or reads them finds out.
//
// Membership (MCPGroup.status.entries) and the MCPExternalAuthConfig's
// referrers come from the reference index (index.ByGroup,
// index.ByExternalAuthConfig), like a workload's.
package mcpserverentry

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcpserverentry"

// resource is the resource label of the controller's writes.
const resource = "mcpserverentries"

// Controller converges the status of MCPServerEntries.
type Controller struct {
	*framework.Loop

	client   versioned.Interface
	entries  thlisters.MCPServerEntryLister
	indexer  cache.Indexer
	groups   thlisters.MCPGroupLister
	authCfgs cache.Indexer
	writer   *framework.Writer
	recorder record.EventRecorder
	clock    clock.PassiveClock
}

// New builds the controller and registers its event handlers. The entry
// informer must carry the reference indexes (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	entries := workload.Informer(d, thv1.KindMCPServerEntry)
	groups := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPGroups().Informer()
	})
	authCfgs := d.ToolhiveInformer(workload.ExternalAuthConfigs.Informer)
	c := &Controller{
		client:   d.Toolhive,
		entries:  thlisters.NewMCPServerEntryLister(entries.Indexer()),
		indexer:  entries.Indexer(),
		groups:   thlisters.NewMCPGroupLister(groups.Indexer()),
		authCfgs: authCfgs.Indexer(),
		writer:   d.NewWriter(Name),
		recorder: d.Recorder,
		clock:    d.Clock,
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Loop = framework.NewLoop(Name, c.sync)
	for _, h := range []struct {
		inf *framework.Informer
		h   cache.ResourceEventHandler
	}{
		{entries, framework.PrimaryHandler(c.Loop, c.writer)},
		{groups, c.groupsHandler()},
		{authCfgs, c.authHandler()},
	} {
		synced, err := h.inf.AddEventHandler(h.h)
		if err != nil {
			return nil, fmt.Errorf("adding handler: %w", err)
		}
		c.AddSynced(synced)
	}
	return c, nil
}

// referrers enqueues the entries whose index indexName names obj: O(entries
// that name it), no namespace is listed.
func (c *Controller) referrers(indexName string) func(obj any) {
	return func(obj any) { workload.EnqueueReferrers(c.indexer, indexName, obj, c.EnqueueKey) }
}

// groupsHandler re-syncs the entries of a group that appears, goes away or
// changes phase (an entry needs its group Ready); the group's status
// writes of its member lists do not matter to an entry.
func (c *Controller) groupsHandler() cache.ResourceEventHandlerFuncs {
	enqueue := c.referrers(index.ByGroup)
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		DeleteFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*thv1.MCPGroup)
			n, ok2 := newObj.(*thv1.MCPGroup)
			if ok1 && ok2 && o.Status.Phase != n.Status.Phase {
				enqueue(newObj)
			}
		},
	}
}

// authHandler re-syncs the entries of an MCPExternalAuthConfig that
// appears or goes away: existence is all an entry checks of it.
func (c *Controller) authHandler() cache.ResourceEventHandlerFuncs {
	enqueue := c.referrers(index.ByExternalAuthConfig)
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, DeleteFunc: enqueue}
}
