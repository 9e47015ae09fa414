package framework

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

const ownerUID = types.UID("uid-current")

func newChild(ns, name, rv string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, ResourceVersion: rv, OwnerReferences: refs,
	}}
}

func tombstone(obj *corev1.ConfigMap) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: obj.Namespace + "/" + obj.Name, Obj: obj}
}

func ownerRef(apiVersion, kind, name string, uid types.UID, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: uid,
		Controller: ptr.To(controller),
	}
}

func goodRef() metav1.OwnerReference {
	return ownerRef(thv1.SchemeGroupVersion.String(), thv1.KindMCPServer, "srv", ownerUID, true)
}

// lookup knows one owner, ns/srv, with ownerUID.
func lookup(namespace, name string) (types.UID, bool) {
	if namespace == "ns" && name == "srv" {
		return ownerUID, true
	}
	return "", false
}

type recorder struct{ keys []string }

func (r *recorder) enqueue(key cache.ObjectName) { r.keys = append(r.keys, key.String()) }

func TestMetaFromObj(t *testing.T) {
	cm := newChild("ns", "c", "1")
	if m, ok := MetaFromObj(cm); !ok || m.GetName() != "c" {
		t.Fatalf("live object: got %v, %v", m, ok)
	}
	if m, ok := MetaFromObj(tombstone(cm)); !ok || m.GetName() != "c" || m.GetNamespace() != "ns" {
		t.Fatalf("tombstone not unwrapped: got %v, %v", m, ok)
	}
	if _, ok := MetaFromObj("not an object"); ok {
		t.Fatal("a string was accepted")
	}
	if _, ok := MetaFromObj(cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: 42}); ok {
		t.Fatal("a tombstone of a non-object was accepted")
	}
}

func TestChildHandlerAddAndDelete(t *testing.T) {
	owner := thv1.Kind(thv1.KindMCPServer)
	otherUID := ownerRef(thv1.SchemeGroupVersion.String(), thv1.KindMCPServer, "srv", "uid-old", true)
	wrongGroup := ownerRef("other.example.com/v1beta1", thv1.KindMCPServer, "srv", ownerUID, true)
	coreGroup := ownerRef("v1", thv1.KindMCPServer, "srv", ownerUID, true)
	wrongKind := ownerRef(thv1.SchemeGroupVersion.String(), thv1.KindMCPRemoteProxy, "srv", ownerUID, true)
	notController := ownerRef(thv1.SchemeGroupVersion.String(), thv1.KindMCPServer, "srv", ownerUID, false)
	noControllerField := goodRef()
	noControllerField.Controller = nil
	ownerGone := ownerRef(thv1.SchemeGroupVersion.String(), thv1.KindMCPServer, "deleted", ownerUID, true)

	tests := []struct {
		name string
		refs []metav1.OwnerReference
		want []string
	}{
		{"controller owner", []metav1.OwnerReference{goodRef()}, []string{"ns/srv"}},
		{"controller owner among other refs", []metav1.OwnerReference{notController, goodRef()}, []string{"ns/srv"}},
		{"no owner", nil, nil},
		{"owner of the same name with another UID", []metav1.OwnerReference{otherUID}, nil},
		{"owner no longer exists", []metav1.OwnerReference{ownerGone}, nil},
		{"wrong group", []metav1.OwnerReference{wrongGroup}, nil},
		{"core group", []metav1.OwnerReference{coreGroup}, nil},
		{"wrong kind", []metav1.OwnerReference{wrongKind}, nil},
		{"non-controller owner ref", []metav1.OwnerReference{notController}, nil},
		{"owner ref without controller field", []metav1.OwnerReference{noControllerField}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			child := newChild("ns", "c", "1", tc.refs...)
			events := map[string]func(r *recorder){
				"add": func(r *recorder) { ChildHandler(owner, lookup, r.enqueue).OnAdd(child, false) },
				"delete": func(r *recorder) {
					ChildHandler(owner, lookup, r.enqueue).OnDelete(child)
				},
				"delete tombstone": func(r *recorder) {
					ChildHandler(owner, lookup, r.enqueue).OnDelete(tombstone(child))
				},
			}
			for ev, fire := range events {
				r := &recorder{}
				fire(r)
				if !slices.Equal(r.keys, tc.want) {
					t.Errorf("%s: enqueued %v, want %v", ev, r.keys, tc.want)
				}
			}
		})
	}
}

func TestChildHandlerUpdate(t *testing.T) {
	owner := thv1.Kind(thv1.KindMCPServer)
	r := &recorder{}
	h := ChildHandler(owner, lookup, r.enqueue)
	h.OnUpdate(newChild("ns", "c", "5", goodRef()), newChild("ns", "c", "5", goodRef()))
	if len(r.keys) != 0 {
		t.Fatalf("resync update (same resourceVersion) enqueued %v", r.keys)
	}

	h.OnUpdate(newChild("ns", "c", "5", goodRef()), newChild("ns", "c", "6", goodRef()))
	if !slices.Equal(r.keys, []string{"ns/srv"}) {
		t.Fatalf("real update enqueued %v, want [ns/srv]", r.keys)
	}

	// An update that is not a resync still goes through the owner checks.
	r.keys = nil
	foreign := ownerRef(thv1.SchemeGroupVersion.String(), thv1.KindMCPServer, "srv", "uid-old", true)
	h.OnUpdate(newChild("ns", "c", "6", foreign), newChild("ns", "c", "7", foreign))
	if len(r.keys) != 0 {
		t.Fatalf("update of a child of a previous owner enqueued %v", r.keys)
	}
}

func TestIsResync(t *testing.T) {
	a, b := newChild("ns", "c", "1"), newChild("ns", "c", "1")
	if !IsResync(a, b) {
		t.Fatal("same resourceVersion is a resync")
	}
	if IsResync(a, newChild("ns", "c", "2")) {
		t.Fatal("different resourceVersion is not a resync")
	}
	if IsResync("x", "x") {
		t.Fatal("non-objects are not a resync")
	}
}

// TestStatusOnlyUpdate: only an update that changed the status alone is
// status-only. A resync, a spec change (a new generation) and every
// metadata change a sync acts on (restart annotations, finalizers, the
// deletion timestamp) are not.
func TestStatusOnlyUpdate(t *testing.T) {
	base := &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "srv", ResourceVersion: "1", Generation: 1,
		Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"},
		Finalizers: []string{"example.com/f"},
	}}
	now := metav1.Now()
	cases := []struct {
		name   string
		change func(*thv1.MCPServer)
		want   bool
	}{
		{"resync", func(s *thv1.MCPServer) {}, false},
		{"status message", func(s *thv1.MCPServer) {
			s.ResourceVersion = "2"
			s.Status.Message = "exceeded quota: used=7"
		}, true},
		{"spec", func(s *thv1.MCPServer) { s.ResourceVersion, s.Generation = "2", 2 }, false},
		{"label", func(s *thv1.MCPServer) { s.ResourceVersion, s.Labels = "2", map[string]string{"team": "b"} }, false},
		{"annotation", func(s *thv1.MCPServer) { s.ResourceVersion, s.Annotations = "2", nil }, false},
		{"finalizer", func(s *thv1.MCPServer) { s.ResourceVersion, s.Finalizers = "2", nil }, false},
		{"owner", func(s *thv1.MCPServer) {
			s.ResourceVersion, s.OwnerReferences = "2", []metav1.OwnerReference{goodRef()}
		}, false},
		{"deletion", func(s *thv1.MCPServer) { s.ResourceVersion, s.DeletionTimestamp = "2", &now }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changed := base.DeepCopy()
			tc.change(changed)
			if got := StatusOnlyUpdate(base, changed); got != tc.want {
				t.Errorf("StatusOnlyUpdate = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPrimaryHandlerForgetsDeletedObjects: the delete event is where a
// controller learns its object is gone; the writer's memory of it must go
// with it, and no sync is queued for an object with nothing left to do.
func TestPrimaryHandlerForgetsDeletedObjects(t *testing.T) {
	l, _ := newTestLoop(t, "test-primary-handler", func(context.Context, cache.ObjectName) error { return nil })
	w := NewWriter("test-primary-handler", nil)
	cs := kubefake.NewSimpleClientset(newChild("ns", "c", "1"))
	obj := newChild("ns", "owner", "1")
	obj.UID = "owner-uid"
	if err := PatchChild(context.Background(), w, obj.UID, "configmaps", "ns", "c", "1", cs.CoreV1().ConfigMaps("ns").Patch, []byte(`{"data":{"k":"v"}}`)); err != nil {
		t.Fatal(err)
	}
	PrimaryHandler(l, w).OnDelete(tombstone(obj))
	if got := w.remembered(); got != 0 {
		t.Errorf("remembered %d owners after the delete event, want 0", got)
	}
	if n := l.Queue.Len(); n != 0 {
		t.Errorf("queue length %d after a delete, want 0", n)
	}
}

// TestPrimaryHandlerReading: a status-only update is still dropped, unless
// it changed the part of the status another writer owns and the sync
// reads; every other update enqueues as before.
func TestPrimaryHandlerReading(t *testing.T) {
	l, _ := newTestLoop(t, "test-primary-reading", func(context.Context, cache.ObjectName) error { return nil })
	foreign := func(oldObj, newObj any) bool {
		return oldObj.(*thv1.MCPServer).Status.URL != newObj.(*thv1.MCPServer).Status.URL
	}
	h := PrimaryHandlerReading(l, NewWriter("test-primary-reading", nil), foreign)
	base := &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "srv", ResourceVersion: "1", Generation: 1}}
	queued := func(change func(*thv1.MCPServer)) int {
		changed := base.DeepCopy()
		changed.ResourceVersion = "2"
		change(changed)
		h.OnUpdate(base, changed)
		n := l.Queue.Len()
		for l.Queue.Len() > 0 {
			k, _ := l.Queue.Get()
			l.Queue.Done(k)
			l.Queue.Forget(k)
		}
		return n
	}
	if n := queued(func(s *thv1.MCPServer) { s.Status.Message = "ours" }); n != 0 {
		t.Errorf("our own status write enqueued %d", n)
	}
	if n := queued(func(s *thv1.MCPServer) { s.Status.URL = "http://theirs" }); n != 1 {
		t.Errorf("the other writer's status write enqueued %d, want 1", n)
	}
	if n := queued(func(s *thv1.MCPServer) { s.Generation = 2 }); n != 1 {
		t.Errorf("a spec change enqueued %d, want 1", n)
	}
}
