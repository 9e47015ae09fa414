// Package mcpoidcconfig is the MCPOIDCConfig controller. It validates each
// config, publishes a hash of its spec for the workloads that use it, and is
// the only writer of status.referencingWorkloads, which it recomputes in full
// from the workload reference index on every sync. It also holds a finalizer
// so that a config still in use cannot disappear from under its workloads.
package mcpoidcconfig

import (
	"slices"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	listers "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// ControllerName names the queue (plus Deps.QueueSuffix) and the controller
// label of the metrics.
const ControllerName = "mcpoidcconfig"

// Resource is the resource label of this controller's writes.
const Resource = "mcpoidcconfigs"

// Finalizer keeps a config that workloads still reference from being
// removed; it is released by the first sync that finds no referrer.
const Finalizer = "mcpoidcconfig.toolhive.stacklok.dev/finalizer"

// Event reasons. They equal the condition reasons so that `kubectl describe`
// and the conditions tell the same story.
const (
	// EventReasonConfigInvalid is the Warning emitted when Valid turns False.
	EventReasonConfigInvalid = thv1.ReasonConfigInvalid
	// EventReasonDeletionBlocked is the Warning emitted when a deletion
	// starts to wait for referrers.
	EventReasonDeletionBlocked = thv1.ReasonReferencedByWorkloads
)

// Recompute results, the result label of
// hivekeeper_referencing_workloads_recomputes_total.
const (
	RecomputeChanged   = "changed"
	RecomputeUnchanged = "unchanged"
	RecomputeError     = "error"
)

// workloadSource is one row of index.Workloads bound to its informer's
// indexer, so that a recompute walks the table instead of naming kinds.
type workloadSource struct {
	kind    string
	indexer cache.Indexer
}

// Controller reconciles MCPOIDCConfigs.
type Controller struct {
	*controller.Loop

	client    versioned.Interface
	lister    listers.MCPOIDCConfigLister
	workloads []workloadSource
	recorder  record.EventRecorder
	writer    *controller.Writer
	// clock stamps condition transition times; tests inject a fake one.
	clock clock.PassiveClock
}

// New builds the controller from the process dependencies; it is the
// app.Constructor registered in pkg/app/controllers.
func New(d *app.Deps) (app.Runnable, error) {
	return newController(d.Toolhive, d.ToolhiveInformers, d.Recorder, clock.RealClock{}, d.QueueSuffix)
}

// newController wires the controller to a factory whose workload informers
// already carry the reference indexers (index.AddToInformers).
func newController(client versioned.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, clk clock.PassiveClock, queueSuffix string) (*Controller, error) {
	configs := f.Toolhive().V1beta1().MCPOIDCConfigs()
	c := &Controller{
		client:   client,
		lister:   configs.Lister(),
		recorder: recorder,
		clock:    clk,
	}
	synced := []cache.InformerSynced{configs.Informer().HasSynced}
	for _, w := range index.Workloads {
		if w.OIDCConfig == nil {
			continue
		}
		inf := index.InformerFor(f, w.Kind)
		c.workloads = append(c.workloads, workloadSource{kind: w.Kind, indexer: inf.GetIndexer()})
		synced = append(synced, inf.HasSynced)
	}
	name := ControllerName + queueSuffix
	c.Loop = controller.NewLoop(name, c.sync, synced...)
	c.writer = controller.NewWriter(name)

	if _, err := configs.Informer().AddEventHandler(c.configHandler()); err != nil {
		return nil, err
	}
	for _, w := range c.workloads {
		if _, err := index.InformerFor(f, w.kind).AddEventHandler(c.workloadHandler(w.kind)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// configHandler enqueues a config on add and on every update, resyncs
// included: the sync is cheap and writes nothing at steady state, and a
// periodic resync is what heals a key dropped after too many retries. A
// change of the status alone is this controller's own write and is
// dropped. Deletions need no sync: nothing outside the object is left to
// clean up.
func (c *Controller) configHandler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: c.Enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			if !controller.StatusOnlyUpdate(oldObj, newObj) {
				c.Enqueue(newObj)
			}
		},
	}
}

// workloadHandler enqueues the configs a workload of kind references before
// and after each change, so that moving from config A to B re-syncs both and
// a deleted workload (or its tombstone) re-syncs the one it used. It never
// lists: the references are read from the event objects through the index
// table. An update that keeps the same references is dropped, because a
// config's status depends only on who references it; otherwise every
// workload status write would wake its config.
func (c *Controller) workloadHandler(kind string) cache.ResourceEventHandlerFuncs {
	refs := func(obj any) []string {
		m, ok := controller.MetaFromObj(obj)
		if !ok {
			return nil
		}
		return index.References(kind, index.ByOIDCConfig, m)
	}
	enqueue := func(obj any) {
		for _, key := range refs(obj) {
			c.EnqueueKey(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			if controller.IsResync(oldObj, newObj) {
				return
			}
			before, after := refs(oldObj), refs(newObj)
			if slices.Equal(before, after) {
				return
			}
			for _, key := range before {
				c.EnqueueKey(key)
			}
			for _, key := range after {
				c.EnqueueKey(key)
			}
		},
		DeleteFunc: enqueue,
	}
}
