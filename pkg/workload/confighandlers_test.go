package workload

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
)

// withRV returns a copy of a workload with another resourceVersion, as the
// new object of a real update event.
func withRV[T interface {
	runtime.Object
	SetResourceVersion(string)
}](obj T, rv string) T {
	c := obj.DeepCopyObject().(T)
	c.SetResourceVersion(rv)
	return c
}

// The workload handlers enqueue the configs referenced before and after a
// change, read from the event objects alone, for every workload kind.
func TestWorkloadHandlers(t *testing.T) {
	type event struct {
		kind     string
		op       string // add, update, delete
		old, obj any
	}
	tombstone := func(obj runtime.Object) cache.DeletedFinalStateUnknown {
		return cache.DeletedFinalStateUnknown{Key: "team-a/x", Obj: obj}
	}
	tests := []struct {
		name string
		ev   event
		want []string
	}{
		{"add enqueues the referenced config",
			event{thv1.KindMCPServer, "add", nil, server(testNS, "s", "a")}, []string{"team-a/a"}},
		{"add without a reference enqueues nothing",
			event{thv1.KindMCPServer, "add", nil, server(testNS, "s", "")}, nil},
		{"MCPServer switching from A to B enqueues both",
			event{thv1.KindMCPServer, "update", server(testNS, "s", "a"), withRV(server(testNS, "s", "b"), "2")}, []string{"team-a/a", "team-a/b"}},
		{"MCPRemoteProxy switching from A to B enqueues both",
			event{thv1.KindMCPRemoteProxy, "update", proxy(testNS, "p", "a"), withRV(proxy(testNS, "p", "b"), "2")}, []string{"team-a/a", "team-a/b"}},
		{"VirtualMCPServer switching from A to B enqueues both",
			event{thv1.KindVirtualMCPServer, "update", vmcp(testNS, "v", "a"), withRV(vmcp(testNS, "v", "b"), "2")}, []string{"team-a/a", "team-a/b"}},
		{"dropping a reference enqueues the old config",
			event{thv1.KindVirtualMCPServer, "update", vmcp(testNS, "v", "a"), withRV(vmcp(testNS, "v", ""), "2")}, []string{"team-a/a"}},
		{"gaining a reference enqueues the new config",
			event{thv1.KindMCPRemoteProxy, "update", proxy(testNS, "p", ""), withRV(proxy(testNS, "p", "b"), "2")}, []string{"team-a/b"}},
		{"an update that keeps the reference enqueues nothing",
			event{thv1.KindMCPServer, "update", server(testNS, "s", "a"), withRV(server(testNS, "s", "a"), "2")}, nil},
		{"a resync enqueues nothing",
			event{thv1.KindMCPServer, "update", server(testNS, "s", "a"), server(testNS, "s", "a")}, nil},
		{"delete enqueues the old config",
			event{thv1.KindMCPServer, "delete", nil, server(testNS, "s", "a")}, []string{"team-a/a"}},
		{"a tombstone enqueues the old config",
			event{thv1.KindVirtualMCPServer, "delete", nil, tombstone(vmcp(testNS, "v", "a"))}, []string{"team-a/a"}},
		{"an MCPRemoteProxy tombstone enqueues the old config",
			event{thv1.KindMCPRemoteProxy, "delete", nil, tombstone(proxy(testNS, "p", "a"))}, []string{"team-a/a"}},
		{"a tombstone of something else enqueues nothing",
			event{thv1.KindMCPServer, "delete", nil, cache.DeletedFinalStateUnknown{Key: "x", Obj: "junk"}}, nil},
		{"keys carry the workload's namespace",
			event{thv1.KindMCPServer, "add", nil, server("team-b", "s", "a")}, []string{"team-b/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			h := f.c.referrerHandler(tc.ev.kind)
			switch tc.ev.op {
			case "add":
				h.OnAdd(tc.ev.obj, false)
			case "update":
				h.OnUpdate(tc.ev.old, tc.ev.obj)
			case "delete":
				h.OnDelete(tc.ev.obj)
			}
			got := drain(f.c)
			slices.Sort(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("enqueued %q, want %q", got, tc.want)
			}
			f.expectNoActions()
		})
	}
}

// The handlers are registered for every workload kind that can reference a
// config, and the config's own events enqueue it.
func TestHandlersRegistered(t *testing.T) {
	f := newFixture(t)
	var kinds []string
	for _, w := range f.c.referrers {
		kinds = append(kinds, w.row.Kind)
	}
	slices.Sort(kinds)
	if want := []string{thv1.KindMCPRemoteProxy, thv1.KindMCPServer, thv1.KindVirtualMCPServer}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("workload kinds = %q, want %q", kinds, want)
	}

	h := framework.PrimaryHandler(f.c.Loop, f.c.writer)
	h.OnAdd(config(testNS, "a"), false)
	edited := withRV(config(testNS, "b"), "8")
	edited.Generation = 2
	h.OnUpdate(config(testNS, "b"), edited)
	// A resync is the periodic re-check; a status write is this
	// controller's own output and is dropped.
	h.OnUpdate(config(testNS, "c"), config(testNS, "c"))
	statusWritten := withRV(config(testNS, "d"), "8")
	statusWritten.Status.ConfigHash = "new"
	h.OnUpdate(config(testNS, "d"), statusWritten)
	got := drain(f.c)
	slices.Sort(got)
	if want := []string{"team-a/a", "team-a/b", "team-a/c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %q, want %q", got, want)
	}
}

// Referrer events are added to the queue after the fan-in delay, never at
// once, and later for a config that already lists many referrers unless it
// is being deleted; the
// delaying queue folds the adds of one key into one sync.
func TestReferrerEventsCoalesce(t *testing.T) {
	big := config(testNS, "big", func(c *thv1.MCPOIDCConfig) { c.Status.ReferenceCount = 2500 })
	deleting := config(testNS, "deleting", func(c *thv1.MCPOIDCConfig) {
		c.Status.ReferenceCount = 2500
		c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		c.Finalizers = []string{thv1.MCPOIDCConfigFinalizer}
	})
	f := newFixture(t, big, deleting, config(testNS, "small"))
	f.c.fanIn = time.Second
	q := &delayRecorder{TypedRateLimitingInterface: f.c.Queue}
	f.c.Queue = q
	h := f.c.referrerHandler(thv1.KindMCPServer)
	for i := range 100 {
		h.OnAdd(server(testNS, fmt.Sprintf("s-%d", i), "small"), false)
		h.OnDelete(server(testNS, fmt.Sprintf("b-%d", i), "big"))
		h.OnDelete(server(testNS, fmt.Sprintf("d-%d", i), "deleting"))
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d keys added at once, want none", n)
	}
	// 2500 referrers listed: one window plus 25 more; a config being
	// deleted waits one window whatever it lists, so that its finalizer
	// follows its last referrer promptly.
	want := map[string]time.Duration{"team-a/small": time.Second, "team-a/big": 26 * time.Second, "team-a/deleting": time.Second}
	if !reflect.DeepEqual(q.delays, want) {
		t.Errorf("delays %v, want %v", q.delays, want)
	}
	f.expectNoActions()
}

// delayRecorder records the delay of each AddAfter by key (all of a key's
// must agree) and passes every call on.
type delayRecorder struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]
	delays map[string]time.Duration
}

func (q *delayRecorder) AddAfter(key cache.ObjectName, d time.Duration) {
	if q.delays == nil {
		q.delays = map[string]time.Duration{}
	}
	if old, ok := q.delays[key.String()]; ok && old != d {
		q.delays[key.String()] = -1
	} else {
		q.delays[key.String()] = d
	}
	q.TypedRateLimitingInterface.AddAfter(key, d)
}
