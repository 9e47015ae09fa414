package mcpgroup

import (
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/dump"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// readyStatus is the status of a converged group at generation gen whose
// Ready condition turned True at transition.
func readyStatus(gen int64, transition metav1.Time, servers, proxies []string) thv1.MCPGroupStatus {
	return thv1.MCPGroupStatus{
		Servers:            servers,
		ServerCount:        int32(len(servers)),
		RemoteProxies:      proxies,
		RemoteProxyCount:   int32(len(proxies)),
		Phase:              thv1.MCPGroupPhaseReady,
		ObservedGeneration: gen,
		Conditions:         []metav1.Condition{readyCondition(gen, transition), checkedCondition(gen, transition)},
	}
}

// TestSyncMembership covers how the membership lists follow the workloads:
// each case seeds the caches as they are after the event, syncs the listed
// groups once, and expects one status patch per changed group with exactly
// the given status. It then feeds the patched groups back into the cache and
// syncs again, which must make no API call at all (invariant 2).
func TestSyncMembership(t *testing.T) {
	nowT := metav1.NewTime(now)
	tests := []struct {
		name    string
		objs    []runtime.Object
		sync    []string
		patched []string
		want    map[string]thv1.MCPGroupStatus
	}{
		{
			name: "first sync lists servers and remote proxies sorted, ignoring non-members",
			objs: []runtime.Object{
				group(ns, "g1", 3, thv1.MCPGroupStatus{}),
				server(ns, "c", "g1"), server(ns, "a", "g1"), server(ns, "b", "g1"),
				server(ns, "loner", ""), server(ns, "other", "g2"),
				proxy(ns, "p2", "g1"), proxy(ns, "p1", "g1"), proxy(ns, "p3", ""),
			},
			sync:    []string{ns + "/g1"},
			patched: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": readyStatus(3, nowT, []string{"a", "b", "c"}, []string{"p1", "p2"}),
			},
		},
		{
			name: "MCPServerEntries are members too, listed in entries, and a steady group is not patched",
			objs: []runtime.Object{
				group(ns, "g1", 2, thv1.MCPGroupStatus{}),
				server(ns, "s", "g1"), entry(ns, "e2", "g1"), entry(ns, "e1", "g1"), entry(ns, "elsewhere", "g2"),
			},
			sync:    []string{ns + "/g1"},
			patched: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": withEntries(readyStatus(2, nowT, []string{"s"}, nil), "e1", "e2"),
			},
		},
		{
			name: "a server joins an existing group; the Ready transition time is kept",
			objs: []runtime.Object{
				group(ns, "g1", 1, readyStatus(1, earlier, []string{"b"}, nil)),
				server(ns, "a", "g1"), server(ns, "b", "g1"),
			},
			sync:    []string{ns + "/g1"},
			patched: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": readyStatus(1, earlier, []string{"a", "b"}, nil),
			},
		},
		{
			name: "a server leaves by clearing its groupRef",
			objs: []runtime.Object{
				group(ns, "g1", 1, readyStatus(1, earlier, []string{"a", "b"}, []string{"p1"})),
				server(ns, "a", "g1"), server(ns, "b", ""), proxy(ns, "p1", "g1"),
			},
			sync:    []string{ns + "/g1"},
			patched: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": readyStatus(1, earlier, []string{"a"}, []string{"p1"}),
			},
		},
		{
			name: "a server and a proxy switch groups: both groups change",
			objs: []runtime.Object{
				group(ns, "g1", 1, readyStatus(1, earlier, []string{"a", "b"}, []string{"p1"})),
				group(ns, "g2", 1, readyStatus(1, earlier, []string{"z"}, nil)),
				server(ns, "a", "g1"), server(ns, "b", "g2"), server(ns, "z", "g2"), proxy(ns, "p1", "g2"),
			},
			sync:    []string{ns + "/g1", ns + "/g2"},
			patched: []string{ns + "/g1", ns + "/g2"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": readyStatus(1, earlier, []string{"a"}, nil),
				ns + "/g2": readyStatus(1, earlier, []string{"b", "z"}, []string{"p1"}),
			},
		},
		{
			name: "deleted members disappear",
			objs: []runtime.Object{
				group(ns, "g1", 1, readyStatus(1, earlier, []string{"a", "b"}, []string{"p1"})),
				server(ns, "a", "g1"),
			},
			sync:    []string{ns + "/g1"},
			patched: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": readyStatus(1, earlier, []string{"a"}, nil),
			},
		},
		{
			name: "the last member is deleted: lists and counts are cleared, the group stays Ready",
			objs: []runtime.Object{
				group(ns, "g1", 1, readyStatus(1, earlier, []string{"a"}, []string{"p1"})),
			},
			sync:    []string{ns + "/g1"},
			patched: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": readyStatus(1, earlier, nil, nil),
			},
		},
		{
			name: "a group of the same name in another namespace has its own members",
			objs: []runtime.Object{
				group(ns, "g1", 1, thv1.MCPGroupStatus{}),
				group("team-b", "g1", 1, thv1.MCPGroupStatus{}),
				server(ns, "a", "g1"), server("team-b", "z", "g1"),
				proxy(ns, "p1", "g1"), proxy("team-b", "p9", "g1"),
			},
			sync:    []string{ns + "/g1", "team-b/g1"},
			patched: []string{ns + "/g1", "team-b/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1":  readyStatus(1, nowT, []string{"a"}, []string{"p1"}),
				"team-b/g1": readyStatus(1, nowT, []string{"z"}, []string{"p9"}),
			},
		},
		{
			name: "a new generation is observed even when the members did not change",
			objs: []runtime.Object{
				group(ns, "g1", 2, readyStatus(1, earlier, []string{"a"}, nil)),
				server(ns, "a", "g1"),
			},
			sync:    []string{ns + "/g1"},
			patched: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": readyStatus(2, earlier, []string{"a"}, nil),
			},
		},
		{
			name: "conditions of other writers are carried over",
			objs: []runtime.Object{
				group(ns, "g1", 1, thv1.MCPGroupStatus{Conditions: []metav1.Condition{{
					Type: "Audited", Status: metav1.ConditionTrue, Reason: "ByPolicy", LastTransitionTime: earlier,
				}}}),
				server(ns, "a", "g1"),
			},
			sync:    []string{ns + "/g1"},
			patched: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": func() thv1.MCPGroupStatus {
					s := readyStatus(1, nowT, []string{"a"}, nil)
					s.Conditions = append([]metav1.Condition{{
						Type: "Audited", Status: metav1.ConditionTrue, Reason: "ByPolicy", LastTransitionTime: earlier,
					}}, s.Conditions...)
					return s
				}(),
			},
		},
		{
			name: "a converged group is not written",
			objs: []runtime.Object{
				group(ns, "g1", 4, readyStatus(4, earlier, []string{"a", "b"}, []string{"p1"})),
				server(ns, "a", "g1"), server(ns, "b", "g1"), proxy(ns, "p1", "g1"),
			},
			sync: []string{ns + "/g1"},
			want: map[string]thv1.MCPGroupStatus{
				ns + "/g1": readyStatus(4, earlier, []string{"a", "b"}, []string{"p1"}),
			},
		},
		{
			name: "a deleted group is not written",
			objs: []runtime.Object{server(ns, "a", "g1")},
			sync: []string{ns + "/g1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true, tc.objs...)
			cached := snapshotGroups(f)

			for _, key := range tc.sync {
				f.sync(key)
			}
			f.expectStatusPatches(tc.patched...)
			for key, want := range tc.want {
				gns, gname := splitKey(t, key)
				if got := f.stored(gns, gname).Status; !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("status of %s:\n got %s\nwant %s", key, dump.Pretty(got), dump.Pretty(want))
				}
			}
			// The sync read the cache but must not have written into it.
			if after := snapshotGroups(f); !equality.Semantic.DeepEqual(cached, after) {
				t.Errorf("sync mutated cached groups:\nbefore %s\nafter  %s", dump.Pretty(cached), dump.Pretty(after))
			}

			// Steady state: the patched status comes back through the watch.
			for _, key := range tc.patched {
				f.feedBack(splitKey(t, key))
			}
			f.client.ClearActions()
			for _, key := range tc.sync {
				f.sync(key)
			}
			f.expectNoActions()
		})
	}
}

// TestSyncPatchBody pins the exact merge patch of a membership change: only
// the changed fields, the removed list as null, and no conditions because
// the Ready condition did not change.
func TestSyncPatchBody(t *testing.T) {
	f := newFixture(t, true,
		group(ns, "g1", 1, readyStatus(1, earlier, []string{"a", "b"}, []string{"p1"})),
		server(ns, "a", "g1"),
	)
	f.sync(ns + "/g1")
	p := f.expectStatusPatches(ns + "/g1")[0]
	want := `{"status":{"remoteProxies":null,"remoteProxyCount":null,"serverCount":1,"servers":["a"]}}`
	if got := string(p.GetPatch()); got != want {
		t.Errorf("patch:\n got %s\nwant %s", got, want)
	}
}

// TestSyncMembershipUnavailable covers the defence in depth for a wiring
// bug: informers without the ByGroup index. The group turns Failed with the
// reason in its Ready condition, keeps its last known lists rather than
// claiming to be empty, the sync returns nil (a retry cannot add an index),
// and a second sync writes nothing.
func TestSyncMembershipUnavailable(t *testing.T) {
	f := newFixture(t, false,
		group(ns, "g1", 2, readyStatus(1, earlier, []string{"a"}, []string{"p1"})),
		server(ns, "a", "g1"),
	)
	f.sync(ns + "/g1")
	f.expectStatusPatches(ns + "/g1")

	got := f.stored(ns, "g1").Status
	if got.Phase != thv1.MCPGroupPhaseFailed || got.ObservedGeneration != 2 {
		t.Errorf("phase %q observedGeneration %d, want Failed and 2", got.Phase, got.ObservedGeneration)
	}
	if !equality.Semantic.DeepEqual(got.Servers, []string{"a"}) || !equality.Semantic.DeepEqual(got.RemoteProxies, []string{"p1"}) ||
		got.ServerCount != 1 || got.RemoteProxyCount != 1 {
		t.Errorf("last known lists not kept: %s", dump.Pretty(got))
	}
	if len(got.Conditions) != 2 {
		t.Fatalf("conditions: %s", dump.Pretty(got.Conditions))
	}
	c := got.Conditions[0]
	if c.Type != thv1.ConditionReady || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonMembershipUnavailable ||
		c.ObservedGeneration != 2 || !c.LastTransitionTime.Equal(&metav1.Time{Time: now}) || c.Message == "" {
		t.Errorf("Ready condition: %s", dump.Pretty(c))
	}
	// ToolHive's condition, with its reason and message, turns False too.
	c = got.Conditions[1]
	if c.Type != thv1.ConditionMCPServersChecked || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonListMCPServersCheckFailed ||
		c.Message != "Failed to list MCPServers in namespace" || c.ObservedGeneration != 2 || !c.LastTransitionTime.Equal(&metav1.Time{Time: now}) {
		t.Errorf("MCPServersChecked condition: %s", dump.Pretty(c))
	}

	f.feedBack(ns, "g1")
	f.client.ClearActions()
	f.sync(ns + "/g1")
	f.expectNoActions()
}

// snapshotGroups deep-copies the cached groups, so that a sync writing
// into a cached object shows up as a difference.
func snapshotGroups(f *fixture) []*thv1.MCPGroup {
	var out []*thv1.MCPGroup
	for _, o := range f.factory.Toolhive().V1beta1().MCPGroups().Informer().GetIndexer().List() {
		out = append(out, o.(*thv1.MCPGroup).DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

func splitKey(t *testing.T, key string) (string, string) {
	t.Helper()
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return namespace, name
}

// withEntries sets the entry list of a status.
func withEntries(s thv1.MCPGroupStatus, entries ...string) thv1.MCPGroupStatus {
	s.Entries = entries
	s.EntryCount = int32(len(entries))
	return s
}

// describe renders actions as "verb resource[/sub] body" for exact
// comparisons.
func describe(actions []core.Action) []string {
	var out []string
	for _, a := range actions {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		if p, ok := a.(core.PatchAction); ok && p.GetSubresource() == "" {
			s += " " + string(p.GetPatch())
		}
		out = append(out, s)
	}
	return out
}

// TestFinalizer: the group holds ToolHive's finalizer, added once with a
// patch locked to the resourceVersion read, before the status write of
// the same sync; a group that holds it costs no finalizer write; on
// deletion the finalizer is released in one locked patch, another
// writer's finalizer kept, members or not, and no status is written (nor
// any member's: their controllers report the group being deleted); a
// group being deleted without it is left alone.
func TestFinalizer(t *testing.T) {
	deleting := func(g *thv1.MCPGroup, finalizers ...string) *thv1.MCPGroup {
		ts := metav1.NewTime(now)
		g.DeletionTimestamp = &ts
		g.Finalizers = finalizers
		return g
	}
	tests := []struct {
		name string
		objs []runtime.Object
		want []string
	}{
		{"a new group: the finalizer, then the status",
			[]runtime.Object{bareGroup(ns, "g1", 1, thv1.MCPGroupStatus{}), server(ns, "a", "g1")},
			[]string{`patch mcpgroups {"metadata":{"finalizers":["toolhive.stacklok.dev/mcpgroup-finalizer"],"resourceVersion":"1"}}`, "patch mcpgroups/status"}},
		{"a converged group holding it: nothing",
			[]runtime.Object{group(ns, "g1", 1, readyStatus(1, earlier, []string{"a"}, nil)), server(ns, "a", "g1")},
			nil},
		{"a group with members being deleted: the release alone",
			[]runtime.Object{deleting(group(ns, "g1", 1, readyStatus(1, earlier, []string{"a"}, []string{"p"})), thv1.MCPGroupFinalizer),
				server(ns, "a", "g1"), proxy(ns, "p", "g1"), entry(ns, "e", "g1")},
			[]string{`patch mcpgroups {"metadata":{"finalizers":null,"resourceVersion":"1"}}`}},
		{"another writer's finalizer is kept",
			[]runtime.Object{deleting(group(ns, "g1", 1, thv1.MCPGroupStatus{}), "example.com/theirs", thv1.MCPGroupFinalizer)},
			[]string{`patch mcpgroups {"metadata":{"finalizers":["example.com/theirs"],"resourceVersion":"1"}}`}},
		{"being deleted without it: nothing",
			[]runtime.Object{deleting(group(ns, "g1", 1, thv1.MCPGroupStatus{}), "example.com/theirs")},
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true, tc.objs...)
			f.sync(ns + "/g1")
			if got := describe(f.client.Actions()); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("actions:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
