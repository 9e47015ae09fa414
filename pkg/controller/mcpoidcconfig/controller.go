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
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	listers "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcpoidcconfig"

// resource is the resource label of this controller's writes.
const resource = "mcpoidcconfigs"

// finalizer keeps a config that workloads still reference from being
// removed; it is released by the first sync that finds no referrer.
const finalizer = thv1.MCPOIDCConfigFinalizer

// Event reasons. They equal the condition reasons so that `kubectl describe`
// and the conditions tell the same story.
const (
	// eventReasonConfigInvalid is the Warning emitted when Valid turns False.
	eventReasonConfigInvalid = thv1.ReasonConfigInvalid
	// eventReasonDeletionBlocked is the Warning emitted when a deletion
	// starts to wait for referrers.
	eventReasonDeletionBlocked = thv1.ReasonReferencedByWorkloads
)

// Recompute results, the result label of
// hivekeeper_referencing_workloads_recomputes_total.
const (
	recomputeChanged   = "changed"
	recomputeUnchanged = "unchanged"
	recomputeError     = "error"
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

// New builds the controller and registers its event handlers. The
// workload informers must carry the reference indexes
// (index.AddToInformers).
func New(d *controller.Deps) (*Controller, error) {
	configs := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPOIDCConfigs().Informer()
	})
	c := &Controller{
		client:   d.Toolhive,
		lister:   listers.NewMCPOIDCConfigLister(configs.Indexer()),
		recorder: d.Recorder,
		clock:    d.Clock,
		writer:   d.NewWriter(Name),
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Loop = controller.NewLoop(Name, c.sync)
	synced, err := configs.AddEventHandler(c.configHandler())
	if err != nil {
		return nil, err
	}
	c.AddSynced(synced)
	for _, w := range index.Workloads {
		if w.OIDCConfig == nil {
			continue
		}
		inf := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return index.InformerFor(f, w.Kind)
		})
		c.workloads = append(c.workloads, workloadSource{kind: w.Kind, indexer: inf.Indexer()})
		synced, err := inf.AddEventHandler(c.workloadHandler(w.Kind))
		if err != nil {
			return nil, err
		}
		c.AddSynced(synced)
	}
	return c, nil
}

// configHandler is the MCPOIDCConfig handler: the sync is cheap and
// writes nothing at steady state, and a periodic resync is what heals a
// key dropped after too many retries.
func (c *Controller) configHandler() cache.ResourceEventHandlerFuncs {
	return controller.PrimaryHandler(c.Loop, c.writer)
}

// workloadHandler enqueues the configs a workload of kind references before
// and after each change, so that moving from config A to B re-syncs both and
// a deleted workload (or its tombstone) re-syncs the one it used. It never
// lists: the references are read from the event objects through the index
// table. An update that keeps the same references is dropped, because a
// config's status depends only on who references it; otherwise every
// workload status write would wake its config.
func (c *Controller) workloadHandler(kind string) cache.ResourceEventHandlerFuncs {
	refs := func(obj any) []cache.ObjectName {
		m, ok := controller.MetaFromObj(obj)
		if !ok {
			return nil
		}
		return index.ReferenceNames(kind, index.ByOIDCConfig, m)
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
