package mcpgroup

import (
	"fmt"
	"time"

	"testing"

	"k8s.io/client-go/util/workqueue"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// withRV returns a copy of a workload with another resourceVersion, so an
// update event is not a resync.
func withRV[T interface{ SetResourceVersion(string) }](obj T, rv string) T {
	obj.SetResourceVersion(rv)
	return obj
}

// TestWorkloadHandler checks which groups a workload event re-syncs: the
// group it joins, the group it leaves, both when it switches, none when its
// group did not change.
func TestWorkloadHandler(t *testing.T) {
	type event struct {
		op       string // add, update, delete
		old, obj any
	}
	tests := []struct {
		name  string
		kind  string
		event event
		want  []string
	}{
		{"server added to a group", thv1.KindMCPServer,
			event{op: "add", obj: server(ns, "a", "g1")}, []string{ns + "/g1"}},
		{"server added without a group", thv1.KindMCPServer,
			event{op: "add", obj: server(ns, "a", "")}, nil},
		{"server joins a group", thv1.KindMCPServer,
			event{op: "update", old: server(ns, "a", ""), obj: withRV(server(ns, "a", "g1"), "2")}, []string{ns + "/g1"}},
		{"server leaves a group", thv1.KindMCPServer,
			event{op: "update", old: server(ns, "a", "g1"), obj: withRV(server(ns, "a", ""), "2")}, []string{ns + "/g1"}},
		{"server switches groups: old and new", thv1.KindMCPServer,
			event{op: "update", old: server(ns, "a", "g1"), obj: withRV(server(ns, "a", "g2"), "2")}, []string{ns + "/g1", ns + "/g2"}},
		{"server changes something else: no membership change", thv1.KindMCPServer,
			event{op: "update", old: server(ns, "a", "g1"), obj: withRV(server(ns, "a", "g1"), "2")}, nil},
		{"server resync", thv1.KindMCPServer,
			event{op: "update", old: server(ns, "a", "g1"), obj: server(ns, "a", "g1")}, nil},
		{"server deleted", thv1.KindMCPServer,
			event{op: "delete", obj: server(ns, "a", "g1")}, []string{ns + "/g1"}},
		{"server deleted, seen as a tombstone", thv1.KindMCPServer,
			event{op: "delete", obj: cache.DeletedFinalStateUnknown{Key: ns + "/a", Obj: server(ns, "a", "g1")}}, []string{ns + "/g1"}},
		{"server without a group deleted", thv1.KindMCPServer,
			event{op: "delete", obj: server(ns, "a", "")}, nil},
		{"proxy added", thv1.KindMCPRemoteProxy,
			event{op: "add", obj: proxy("team-b", "p", "g1")}, []string{"team-b/g1"}},
		{"proxy switches groups: old and new", thv1.KindMCPRemoteProxy,
			event{op: "update", old: proxy(ns, "p", "g1"), obj: withRV(proxy(ns, "p", "g2"), "2")}, []string{ns + "/g1", ns + "/g2"}},
		{"proxy deleted, seen as a tombstone", thv1.KindMCPRemoteProxy,
			event{op: "delete", obj: cache.DeletedFinalStateUnknown{Key: ns + "/p", Obj: proxy(ns, "p", "g2")}}, []string{ns + "/g2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true)
			h := f.c.workloadHandler(tc.kind)
			switch tc.event.op {
			case "add":
				h.OnAdd(tc.event.obj, false)
			case "update":
				h.OnUpdate(tc.event.old, tc.event.obj)
			case "delete":
				h.OnDelete(tc.event.obj)
			}
			if got := drain(f.c); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("enqueued %v, want %v", got, tc.want)
			}
			f.expectNoActions()
		})
	}
}

// TestGroupHandler: a group is synced when it appears and on every update,
// resyncs included (they are the primary resource's periodic re-check),
// except a write of its status alone (this controller's own output); its
// deletion needs no sync.
func TestGroupHandler(t *testing.T) {
	f := newFixture(t, true)
	h := f.c.groupHandler()
	g := group(ns, "g1", 1, thv1.MCPGroupStatus{})

	h.OnAdd(g, false)
	if got := drain(f.c); !equality.Semantic.DeepEqual(got, []string{ns + "/g1"}) {
		t.Errorf("add enqueued %v", got)
	}
	h.OnUpdate(g, g)
	if got := drain(f.c); !equality.Semantic.DeepEqual(got, []string{ns + "/g1"}) {
		t.Errorf("resync enqueued %v", got)
	}
	edited := withRV(group(ns, "g1", 2, thv1.MCPGroupStatus{}), "2")
	h.OnUpdate(g, edited)
	if got := drain(f.c); !equality.Semantic.DeepEqual(got, []string{ns + "/g1"}) {
		t.Errorf("spec update enqueued %v", got)
	}
	h.OnUpdate(g, withRV(group(ns, "g1", 1, thv1.MCPGroupStatus{ServerCount: 3}), "2"))
	if got := drain(f.c); got != nil {
		t.Errorf("a status-only update enqueued %v", got)
	}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: ns + "/g1", Obj: g})
	if got := drain(f.c); got != nil {
		t.Errorf("delete enqueued %v", got)
	}
}

// TestOneControllerServesEveryScope: with several watched namespaces there
// is still one controller, one queue named after it, and its lister finds
// a group in whichever namespace's informer holds it.
func TestOneControllerServesEveryScope(t *testing.T) {
	client := fake.NewSimpleClientset()
	var scopes []framework.Scope
	for _, ns := range []string{"team-a", "team-b"} {
		factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
		if err := index.AddToInformers(factory); err != nil {
			t.Fatal(err)
		}
		if err := factory.Toolhive().V1beta1().MCPGroups().Informer().GetIndexer().Add(group(ns, "g-"+ns, 1, thv1.MCPGroupStatus{})); err != nil {
			t.Fatal(err)
		}
		scopes = append(scopes, framework.Scope{Namespace: ns, Toolhive: factory})
	}
	c, err := New(&framework.Deps{Toolhive: client, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	if c.Name != Name {
		t.Errorf("queue name %q, want %q", c.Name, Name)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := c.groups.MCPGroups(ns).Get("g-" + ns); err != nil {
			t.Errorf("group of %s: %v", ns, err)
		}
	}
	if all, _ := c.groups.List(labels.Everything()); len(all) != 2 {
		t.Errorf("listed %d groups, want 2", len(all))
	}
}

// Member events are added to the queue after the fan-in delay, never at
// once, and later for a group that already lists many members.
func TestMemberEventsCoalesce(t *testing.T) {
	f := newFixture(t, true, group("ns", "big", 1, thv1.MCPGroupStatus{ServerCount: 1500, RemoteProxyCount: 600}), group("ns", "small", 1, thv1.MCPGroupStatus{}))
	f.c.fanIn = time.Second
	q := &delayRecorder{TypedRateLimitingInterface: f.c.Queue}
	f.c.Queue = q
	servers, proxies := f.c.workloadHandler(thv1.KindMCPServer), f.c.workloadHandler(thv1.KindMCPRemoteProxy)
	for i := range 100 {
		servers.OnAdd(server("ns", fmt.Sprintf("s-%d", i), "small"), false)
		proxies.OnDelete(proxy("ns", fmt.Sprintf("p-%d", i), "big"))
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d keys added at once, want none", n)
	}
	// 2100 members listed: one window plus 21 more.
	want := map[string]time.Duration{"ns/small": time.Second, "ns/big": 22 * time.Second}
	if !equality.Semantic.DeepEqual(q.delays, want) {
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
