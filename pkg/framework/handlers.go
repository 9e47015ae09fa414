package framework

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// MetaFromObj returns the object metadata of an informer event object,
// unwrapping a DeletedFinalStateUnknown tombstone. ok is false for anything
// else.
func MetaFromObj(obj any) (metav1.Object, bool) {
	if t, isTombstone := obj.(cache.DeletedFinalStateUnknown); isTombstone {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	return m, ok
}

// OwnerLookup returns the UID of the current owner named ns/name, or
// ok=false when it does not exist. Controllers pass a lister lookup.
type OwnerLookup func(namespace, name string) (uid types.UID, ok bool)

// OwnerKey maps a child to the name of its controller owner.
// The owner reference must name the expected kind and API group, and its UID
// must be the UID of the owner that exists now: a child left behind by a
// deleted owner of the same name is not mapped to the new one.
func OwnerKey(child metav1.Object, owner schema.GroupKind, lookup OwnerLookup) (cache.ObjectName, bool) {
	ref := metav1.GetControllerOf(child)
	if ref == nil || ref.Kind != owner.Kind {
		return cache.ObjectName{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != owner.Group {
		return cache.ObjectName{}, false
	}
	uid, ok := lookup(child.GetNamespace(), ref.Name)
	if !ok || uid != ref.UID {
		return cache.ObjectName{}, false
	}
	return cache.NewObjectName(child.GetNamespace(), ref.Name), true
}

// IsResync reports whether an update event is a periodic resync of an
// unchanged object (the same resourceVersion), which children handlers drop.
func IsResync(oldObj, newObj any) bool {
	o, ok1 := MetaFromObj(oldObj)
	n, ok2 := MetaFromObj(newObj)
	return ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion()
}

// StatusOnlyUpdate reports whether an update event changed nothing but the
// object's status: a new resourceVersion with the same generation, labels,
// annotations, finalizers, owner references and deletion timestamp.
// Controllers drop these for their primary resource. The status is their
// own output, so syncing on it again can only repeat work; and when a
// status field follows something that changes on every attempt (an API
// error that carries a counter), each failed attempt would write a new
// status whose event re-queued the key at once, bypassing the backoff.
// A periodic resync (an unchanged resourceVersion) is not status-only.
func StatusOnlyUpdate(oldObj, newObj any) bool {
	o, ok1 := MetaFromObj(oldObj)
	n, ok2 := MetaFromObj(newObj)
	if !ok1 || !ok2 || o.GetResourceVersion() == n.GetResourceVersion() {
		return false
	}
	return o.GetGeneration() == n.GetGeneration() &&
		maps.Equal(o.GetLabels(), n.GetLabels()) &&
		maps.Equal(o.GetAnnotations(), n.GetAnnotations()) &&
		slices.Equal(o.GetFinalizers(), n.GetFinalizers()) &&
		equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) &&
		o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}

// ChildHandler returns event handlers for a child informer that enqueue the
// child's controller owner of kind owner, through enqueue. Resync updates
// with an unchanged resourceVersion are dropped.
func ChildHandler(owner schema.GroupKind, lookup OwnerLookup, enqueue func(cache.ObjectName)) cache.ResourceEventHandlerFuncs {
	handle := func(obj any) {
		m, ok := MetaFromObj(obj)
		if !ok {
			return
		}
		if key, ok := OwnerKey(m, owner, lookup); ok {
			enqueue(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: handle,
		UpdateFunc: func(oldObj, newObj any) {
			if IsResync(oldObj, newObj) {
				return
			}
			handle(newObj)
		},
		DeleteFunc: handle,
	}
}

// PrimaryHandler returns the event handlers of a controller's own kind:
// add and every update enqueue the object, resyncs included (they are the
// periodic re-check, and a converged sync costs no API call), except a
// change of its status alone, which is the controller's own output (see
// StatusOnlyUpdate). A deletion needs no sync: garbage collection removes
// the children; it makes w forget the object, so the writer's memory stays
// as large as the set of live objects.
func PrimaryHandler(l *Loop, w *Writer) cache.ResourceEventHandlerFuncs {
	return PrimaryHandlerReading(l, w, nil)
}

// PrimaryHandlerReading is PrimaryHandler for a kind whose status has a
// part another writer owns and the controller reads (a VirtualMCPServer's
// status.runtime, written by vmcp): a status-only update for which
// foreign(oldObj, newObj) is true enqueues the object too. The
// controller's own writes never change that part, so they still do not.
func PrimaryHandlerReading(l *Loop, w *Writer, foreign func(oldObj, newObj any) bool) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: l.Enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			if !StatusOnlyUpdate(oldObj, newObj) || (foreign != nil && foreign(oldObj, newObj)) {
				l.Enqueue(newObj)
			}
		},
		DeleteFunc: func(obj any) {
			if m, ok := MetaFromObj(obj); ok {
				w.Forget(m.GetUID())
			}
		},
	}
}
