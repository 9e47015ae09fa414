package framework

import (
	"errors"
	"slices"

	"k8s.io/client-go/tools/cache"
)

// Informer is one informer kind across every watch scope: a namespace-
// filtered informer per watched namespace (RBAC may allow nothing wider),
// seen as one. Its handlers are added to every part, so one controller
// with one queue serves all namespaces and --workers means what it says;
// its Indexer reads all parts, so a generated lister built on it finds an
// object in whichever namespace it lives.
//
// With a single scope (one namespace, or all) it is the informer itself,
// at no cost.
type Informer struct {
	parts   []cache.SharedIndexInformer
	indexer cache.Indexer
}

func newInformer(parts []cache.SharedIndexInformer) *Informer {
	i := &Informer{parts: parts}
	if len(parts) == 1 {
		i.indexer = parts[0].GetIndexer()
	} else {
		i.indexer = &unionIndexer{Indexer: parts[0].GetIndexer(), parts: parts}
	}
	return i
}

// Indexer reads every scope. Lister constructors take it.
func (i *Informer) Indexer() cache.Indexer { return i.indexer }

// AddEventHandler adds h to every scope and returns what reports that the
// handler has seen every object the informers listed at start.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.InformerSynced, error) {
	regs := make([]cache.ResourceEventHandlerRegistration, 0, len(i.parts))
	for _, p := range i.parts {
		r, err := p.AddEventHandler(h)
		if err != nil {
			return nil, err
		}
		regs = append(regs, r)
	}
	return func() bool {
		for _, r := range regs {
			if !r.HasSynced() {
				return false
			}
		}
		return true
	}, nil
}

// HasSynced reports whether every scope's cache is filled.
func (i *Informer) HasSynced() bool {
	for _, p := range i.parts {
		if !p.HasSynced() {
			return false
		}
	}
	return true
}

// AddIndexers adds indexers to every scope, unless they are there already
// (several controllers may ask for the same one). It must run before the
// informers start.
func (i *Informer) AddIndexers(idx cache.Indexers) error {
	for _, p := range i.parts {
		missing := cache.Indexers{}
		have := p.GetIndexer().GetIndexers()
		for name, f := range idx {
			if _, ok := have[name]; !ok {
				missing[name] = f
			}
		}
		if len(missing) == 0 {
			continue
		}
		if err := p.AddIndexers(missing); err != nil {
			return err
		}
	}
	return nil
}

// errReadOnly refuses writes to a unionIndexer: only informers fill caches.
var errReadOnly = errors.New("the union of several scopes' caches is read-only")

// unionIndexer reads the caches of several scopes as one. Keys are
// "<namespace>/<name>" and each object lives in exactly one scope, so a
// lookup asks every part and the parts never overlap. Every read a lister
// makes is overridden below; the embedded first part only completes the
// interface (store bookkeeping no reader calls).
type unionIndexer struct {
	cache.Indexer
	parts []cache.SharedIndexInformer
}

func (u *unionIndexer) each(f func(cache.Indexer)) {
	for _, p := range u.parts {
		f(p.GetIndexer())
	}
}

func (u *unionIndexer) Add(any) error                    { return errReadOnly }
func (u *unionIndexer) Update(any) error                 { return errReadOnly }
func (u *unionIndexer) Delete(any) error                 { return errReadOnly }
func (u *unionIndexer) Replace([]any, string) error      { return errReadOnly }
func (u *unionIndexer) Resync() error                    { return nil }
func (u *unionIndexer) AddIndexers(cache.Indexers) error { return errReadOnly }

func (u *unionIndexer) List() []any {
	var out []any
	u.each(func(ix cache.Indexer) { out = append(out, ix.List()...) })
	return out
}

func (u *unionIndexer) ListKeys() []string {
	var out []string
	u.each(func(ix cache.Indexer) { out = append(out, ix.ListKeys()...) })
	return out
}

func (u *unionIndexer) Get(obj any) (any, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return u.GetByKey(key)
}

func (u *unionIndexer) GetByKey(key string) (any, bool, error) {
	for _, p := range u.parts {
		if obj, ok, err := p.GetIndexer().GetByKey(key); ok || err != nil {
			return obj, ok, err
		}
	}
	return nil, false, nil
}

func (u *unionIndexer) Index(name string, obj any) ([]any, error) {
	return u.gather(func(ix cache.Indexer) ([]any, error) { return ix.Index(name, obj) })
}

func (u *unionIndexer) ByIndex(name, value string) ([]any, error) {
	return u.gather(func(ix cache.Indexer) ([]any, error) { return ix.ByIndex(name, value) })
}

func (u *unionIndexer) IndexKeys(name, value string) ([]string, error) {
	var out []string
	for _, p := range u.parts {
		keys, err := p.GetIndexer().IndexKeys(name, value)
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	return out, nil
}

func (u *unionIndexer) ListIndexFuncValues(name string) []string {
	var out []string
	u.each(func(ix cache.Indexer) { out = append(out, ix.ListIndexFuncValues(name)...) })
	slices.Sort(out)
	return slices.Compact(out)
}

func (u *unionIndexer) GetIndexers() cache.Indexers {
	return u.parts[0].GetIndexer().GetIndexers()
}

func (u *unionIndexer) gather(f func(cache.Indexer) ([]any, error)) ([]any, error) {
	var out []any
	for _, p := range u.parts {
		objs, err := f(p.GetIndexer())
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}
