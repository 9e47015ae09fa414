package workload

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// Wiring is the informer plumbing every workload controller shares: its own
// kind, its children, and the MCPOIDCConfigs it references.
type Wiring struct {
	// Primary is the informer of the workload kind; it must carry the
	// index.ByOIDCConfig index.
	Primary cache.SharedIndexInformer
	// Owner and Lookup map a child to its workload (kind, group and UID).
	Owner  schema.GroupKind
	Lookup controller.OwnerLookup
	// Children are the child informers (workload.NewChildren).
	Children []cache.SharedIndexInformer
	// OIDCConfigs is the MCPOIDCConfig informer.
	OIDCConfigs cache.SharedIndexInformer
}

// Synced lists what the workers wait for, plus any extra informers.
func (w Wiring) Synced(extra ...cache.SharedIndexInformer) []cache.InformerSynced {
	all := append([]cache.SharedIndexInformer{w.Primary, w.OIDCConfigs}, w.Children...)
	all = append(all, extra...)
	out := make([]cache.InformerSynced, len(all))
	for i, inf := range all {
		out[i] = inf.HasSynced
	}
	return out
}

// Register adds the event handlers to loop's queue: every event of the
// workload kind (resyncs included: a converged sync costs no API call)
// except a change of its status alone, which is the controller's own
// output; child events mapped to their owner; and MCPOIDCConfig changes a
// workload consumes, mapped to exactly the referrers through the reference
// index.
func (w Wiring) Register(loop *controller.Loop) error {
	if _, err := w.Primary.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: loop.Enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			if !controller.StatusOnlyUpdate(oldObj, newObj) {
				loop.Enqueue(newObj)
			}
		},
		DeleteFunc: loop.Enqueue,
	}); err != nil {
		return err
	}
	for _, inf := range w.Children {
		if _, err := inf.AddEventHandler(controller.ChildHandler(w.Owner, w.Lookup, loop.EnqueueKey)); err != nil {
			return err
		}
	}
	referrers := func(obj any) { EnqueueReferrers(w.Primary.GetIndexer(), index.ByOIDCConfig, obj, loop.EnqueueKey) }
	_, err := w.OIDCConfigs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: referrers,
		UpdateFunc: func(oldObj, newObj any) {
			if OIDCConfigChangeMatters(oldObj, newObj) {
				referrers(newObj)
			}
		},
		DeleteFunc: referrers,
	})
	return err
}

// EnqueueReferrers enqueues every object of indexer whose indexName value is
// the key of obj (a referenced object or its tombstone). It costs
// O(referrers): no namespace is listed.
func EnqueueReferrers(indexer cache.Indexer, indexName string, obj any, enqueueKey func(string)) {
	m, ok := controller.MetaFromObj(obj)
	if !ok {
		return
	}
	names, err := index.Referrers(indexer, indexName, index.Key(m.GetNamespace(), m.GetName()))
	if err != nil {
		return
	}
	for _, n := range names {
		enqueueKey(index.Key(m.GetNamespace(), n))
	}
}
