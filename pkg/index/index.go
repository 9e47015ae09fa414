// Package index holds the reference indexes hivekeeper's controllers use
// instead of listing a namespace: which MCPOIDCConfig each workload
// references, and which MCPGroup each workload belongs to.
//
// Index values are namespaced keys "<ns>/<name>" because client-go indexes
// are global across namespaces. One table row per workload kind describes
// how to read a reference, so adding a kind is one row.
package index

import (
	"fmt"
	"sort"

	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Index names.
const (
	// ByOIDCConfig maps a workload to "<ns>/<config>" of the MCPOIDCConfig it references.
	ByOIDCConfig = "toolhive.stacklok.dev/oidc-config"
	// ByGroup maps a workload to "<ns>/<group>" of the MCPGroup it belongs to.
	ByGroup = "toolhive.stacklok.dev/group"
)

// Workload is one row of the table: a workload kind and how to read its
// references. A nil reader means the kind has no such reference.
type Workload struct {
	Kind string
	// OIDCConfig returns the referenced MCPOIDCConfig name, or "".
	OIDCConfig func(obj any) string
	// Group returns the referenced MCPGroup name, or "".
	Group func(obj any) string
}

// Workloads is the table of workload kinds that reference MCPOIDCConfigs
// and MCPGroups.
var Workloads = []Workload{
	{
		Kind: thv1.KindMCPServer,
		OIDCConfig: func(obj any) string {
			if s, ok := obj.(*thv1.MCPServer); ok && s.Spec.OIDCConfigRef != nil {
				return s.Spec.OIDCConfigRef.Name
			}
			return ""
		},
		Group: func(obj any) string {
			if s, ok := obj.(*thv1.MCPServer); ok && s.Spec.GroupRef != nil {
				return s.Spec.GroupRef.Name
			}
			return ""
		},
	},
	{
		Kind: thv1.KindMCPRemoteProxy,
		OIDCConfig: func(obj any) string {
			if p, ok := obj.(*thv1.MCPRemoteProxy); ok && p.Spec.OIDCConfigRef != nil {
				return p.Spec.OIDCConfigRef.Name
			}
			return ""
		},
		Group: func(obj any) string {
			if p, ok := obj.(*thv1.MCPRemoteProxy); ok && p.Spec.GroupRef != nil {
				return p.Spec.GroupRef.Name
			}
			return ""
		},
	},
	{
		Kind: thv1.KindVirtualMCPServer,
		OIDCConfig: func(obj any) string {
			if v, ok := obj.(*thv1.VirtualMCPServer); ok && v.Spec.IncomingAuth.OIDCConfigRef != nil {
				return v.Spec.IncomingAuth.OIDCConfigRef.Name
			}
			return ""
		},
		// A VirtualMCPServer aggregates a group rather than joining it.
	},
}

// WorkloadFor returns the table row of kind.
func WorkloadFor(kind string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Kind == kind {
			return w, true
		}
	}
	return Workload{}, false
}

// Key is the namespaced index value of a referenced object.
func Key(namespace, name string) string { return namespace + "/" + name }

func namespaceOf(obj any) string {
	if m, err := metaNamespace(obj); err == nil {
		return m
	}
	return ""
}

func keyFunc(read func(any) string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		if read == nil {
			return nil, nil
		}
		name := read(obj)
		if name == "" {
			return nil, nil
		}
		return []string{Key(namespaceOf(obj), name)}, nil
	}
}

// Indexers returns the indexers to add to the informer of kind.
func Indexers(kind string) (cache.Indexers, error) {
	w, ok := WorkloadFor(kind)
	if !ok {
		return nil, fmt.Errorf("no index table row for kind %q", kind)
	}
	idx := cache.Indexers{}
	if w.OIDCConfig != nil {
		idx[ByOIDCConfig] = keyFunc(w.OIDCConfig)
	}
	if w.Group != nil {
		idx[ByGroup] = keyFunc(w.Group)
	}
	return idx, nil
}

// References returns the index values obj has under index name; the
// event handlers call it on the old and the new object so that a change
// from A to B re-syncs both A and B.
func References(kind, indexName string, obj any) []string {
	idx, err := Indexers(kind)
	if err != nil {
		return nil
	}
	f, ok := idx[indexName]
	if !ok {
		return nil
	}
	keys, _ := f(obj)
	return keys
}

// ReferenceNames is References as the names of the referenced objects,
// the keys of their controllers' queues.
func ReferenceNames(kind, indexName string, obj any) []cache.ObjectName {
	keys := References(kind, indexName, obj)
	out := make([]cache.ObjectName, 0, len(keys))
	for _, k := range keys {
		if n, err := cache.ParseObjectName(k); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Referrers returns the sorted names of the objects in indexer whose index
// indexName has value key. It costs O(referrers), not O(namespace).
func Referrers(indexer cache.Indexer, indexName, key string) ([]string, error) {
	objs, err := indexer.ByIndex(indexName, key)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		if m, err := metaName(o); err == nil {
			names = append(names, m)
		}
	}
	sort.Strings(names)
	return names, nil
}
