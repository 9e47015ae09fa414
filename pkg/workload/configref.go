package workload

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// ConfigKind declares a config kind that workloads reference by name
// (MCPOIDCConfig today; MCPToolConfig, MCPTelemetryConfig and the others
// are declared the same way). Everything a workload controller does with
// such a reference follows from it: the lister it reads, the condition it
// reports, the referrers it re-syncs when the config changes.
type ConfigKind[T any] struct {
	// Kind names the config kind in messages.
	Kind string
	// Informer picks the kind's informer from a factory.
	Informer func(informers.SharedInformerFactory) cache.SharedIndexInformer
	// Get reads a config from an indexer holding the kind (a lister).
	Get func(indexer cache.Indexer, namespace, name string) (T, error)
	// Index maps a workload to "<ns>/<name>" of the config it references.
	Index string
	// Condition is the workload condition that reports the reference.
	Condition string
	// Check turns the referenced config (the zero value when the lister
	// does not have it) into that condition; ok when the workload may be
	// deployed with it.
	Check func(name string, cfg T, found bool) Check
	// ChangeMatters reports whether an update of a config changes what its
	// referrers consume; other updates (its own bookkeeping) re-sync no
	// one.
	ChangeMatters func(oldObj, newObj any) bool
}

// Check is the outcome of resolving one reference.
type Check struct {
	OK              bool
	Reason, Message string
}

// ConfigRefs is a ConfigKind bound to the informers of a controller.
type ConfigRefs[T any] struct {
	ConfigKind[T]
	informer *controller.Informer
}

// Bind binds the kind to d's informers.
func (k ConfigKind[T]) Bind(d *controller.Deps) *ConfigRefs[T] {
	return &ConfigRefs[T]{ConfigKind: k, informer: d.ToolhiveInformer(k.Informer)}
}

// Resolve reads the config a workload in namespace names from the lister
// (never the API, never a write: the config's own controller owns it) and
// sets the reference's condition. ok is false when the workload must wait:
// a workload is not deployed without a configuration it asked for. The
// config's own events re-sync it through the reference index.
func (c *ConfigRefs[T]) Resolve(r *Report, namespace, name string) (cfg T, ok bool) {
	cfg, err := c.Get(c.informer.Indexer(), namespace, name)
	check := c.Check(name, cfg, err == nil)
	if !check.OK {
		r.SetFalse(c.Condition, check.Reason, check.Message)
		var zero T
		return zero, false
	}
	r.Set(c.Condition, metav1.ConditionTrue, check.Reason, check.Message)
	return cfg, true
}

// WatchReferrers re-syncs, through enqueue, exactly the workloads of
// primary that reference a config that appeared, went away or changed in a
// way that matters, and makes loop wait for the config cache.
func (c *ConfigRefs[T]) WatchReferrers(primary *controller.Informer, enqueue func(cache.ObjectName), loop *controller.Loop) error {
	referrers := func(obj any) { EnqueueReferrers(primary.Indexer(), c.Index, obj, enqueue) }
	synced, err := c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: referrers,
		UpdateFunc: func(oldObj, newObj any) {
			if c.ChangeMatters(oldObj, newObj) {
				referrers(newObj)
			}
		},
		DeleteFunc: referrers,
	})
	if err != nil {
		return err
	}
	loop.AddSynced(synced)
	return nil
}

// EnqueueReferrers enqueues every object of indexer whose indexName value is
// the key of obj (a referenced object or its tombstone). It costs
// O(referrers): no namespace is listed.
func EnqueueReferrers(indexer cache.Indexer, indexName string, obj any, enqueue func(cache.ObjectName)) {
	m, ok := controller.MetaFromObj(obj)
	if !ok {
		return
	}
	names, err := index.Referrers(indexer, indexName, index.Key(m.GetNamespace(), m.GetName()))
	if err != nil {
		return
	}
	for _, n := range names {
		enqueue(cache.NewObjectName(m.GetNamespace(), n))
	}
}

// OIDCConfigs is the MCPOIDCConfig reference every workload kind may make.
var OIDCConfigs = ConfigKind[*thv1.MCPOIDCConfig]{
	Kind: thv1.KindMCPOIDCConfig,
	Informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPOIDCConfigs().Informer()
	},
	Get: func(indexer cache.Indexer, ns, name string) (*thv1.MCPOIDCConfig, error) {
		return thlisters.NewMCPOIDCConfigLister(indexer).MCPOIDCConfigs(ns).Get(name)
	},
	Index:     index.ByOIDCConfig,
	Condition: thv1.ConditionOIDCConfigRefValidated,
	Check: func(name string, cfg *thv1.MCPOIDCConfig, found bool) Check {
		if !found {
			cfg = nil
		}
		r := CheckOIDCRef(&thv1.OIDCConfigReference{Name: name}, cfg)
		return Check{OK: r.Usable(), Reason: r.Reason, Message: r.Message}
	},
	ChangeMatters: OIDCConfigChangeMatters,
}

// ResolveOIDC resolves a workload's MCPOIDCConfig reference (nil: none)
// and returns the config and its hash, which the workload records in
// status.oidcConfigHash. ok is false when the workload must wait; the
// report then says so (Pending, Ready=False WaitingForOIDCConfig).
func (b *Base) ResolveOIDC(r *Report, namespace string, ref *thv1.OIDCConfigReference) (cfg *thv1.MCPOIDCConfig, hash string, ok bool) {
	if ref == nil {
		r.Remove(thv1.ConditionOIDCConfigRefValidated)
		return nil, "", true
	}
	cfg, ok = b.OIDC.Resolve(r, namespace, ref.Name)
	if !ok {
		c := meta.FindStatusCondition(*r.conditions, thv1.ConditionOIDCConfigRefValidated)
		r.Pending(thv1.ReasonWaitingForOIDC, c.Message)
		return nil, "", false
	}
	return cfg, cfg.Status.ConfigHash, true
}
