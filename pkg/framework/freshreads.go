package framework

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// freshReadsTTL bounds how long a written object is kept: far longer than
// a watch event takes to arrive, short enough that the entries a large
// roll leaves behind do not stay in memory (an entry whose event arrived
// is dropped at its next read anyway).
const freshReadsTTL = 10 * time.Second

// freshReadsSize is how many written objects each child kind remembers.
const freshReadsSize = 2048

// FreshReads reads a child kind from its informer's cache, except that an
// object this controller wrote and whose watch event has not arrived yet
// is read as the API server answered the write (client-go's
// MutationCache, compared by resourceVersion). Without it, a sync brought
// by the event of one child just written (the ConfigMap) finds another
// (the Deployment) as it was before the same sync's patch, patches it
// again from the old resourceVersion, and gets 409 Conflict: a wasted
// request and a retry on every roll. written goes in ChildOps.Written.
// Only patched objects are kept (the MutationCache returns nothing the
// cache does not hold), so creating children costs no memory here.
func FreshReads[T runtime.Object](indexer cache.Indexer, resource schema.GroupResource) (get func(namespace, name string) (T, error), written func(T)) {
	mc := cache.NewIntegerResourceVersionMutationCacheWithOptions(klog.Background(), indexer,
		cache.MutationCacheOptions{Indexer: indexer, TTL: freshReadsTTL, MaxCacheSize: freshReadsSize})
	get = func(namespace, name string) (T, error) {
		var zero T
		obj, ok, err := mc.GetByKey(namespace + "/" + name)
		if err != nil {
			return zero, err
		}
		if !ok {
			return zero, apierrors.NewNotFound(resource, name)
		}
		t, ok := obj.(T)
		if !ok {
			return zero, apierrors.NewNotFound(resource, name)
		}
		return t, nil
	}
	written = func(obj T) { mc.Mutation(obj) }
	return get, written
}
