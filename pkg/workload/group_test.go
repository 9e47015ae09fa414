package workload

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	listers "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

const groupNS = "team-a"

func testGroup(ns, name string) *thv1.MCPGroup {
	return &thv1.MCPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Status: thv1.MCPGroupStatus{Phase: thv1.MCPGroupPhaseReady}}
}

func testMember(ns, name, group string) *thv1.MCPServer {
	s := &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if group != "" {
		s.Spec.GroupRef = &thv1.GroupRef{Name: group}
	}
	return s
}

func TestResolveGroup(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(testGroup(groupNS, "g1")); err != nil {
		t.Fatal(err)
	}
	b := &Base{Groups: listers.NewMCPGroupLister(indexer), Clock: clocktesting.NewFakePassiveClock(metav1.Now().Time),
		Recorder: record.NewFakeRecorder(10)}

	tests := []struct {
		name       string
		namespace  string
		group      string
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{"group exists", groupNS, "g1", metav1.ConditionTrue, thv1.ReasonGroupRefValid,
			`MCPGroup "g1" exists`},
		{"group missing", groupNS, "g2", metav1.ConditionFalse, thv1.ReasonGroupRefNotFound,
			`MCPGroup "g2" not found in namespace "team-a"`},
		{"a group of that name in another namespace does not count", "team-b", "g1", metav1.ConditionFalse, thv1.ReasonGroupRefNotFound,
			`MCPGroup "g1" not found in namespace "team-b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testMember(tc.namespace, "srv", tc.group)
			r := b.NewReport(s, &s.Status.Conditions, &s.Status.Phase, &s.Status.Message)
			found := b.ResolveGroup(r, tc.namespace, tc.group)
			c := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionGroupRefValidated)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason || c.Message != tc.wantMsg {
				t.Errorf("got %+v, want (%s, %s, %q)", c, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if found != (tc.wantStatus == metav1.ConditionTrue) {
				t.Errorf("found = %v", found)
			}
		})
	}
	// No group named: no condition.
	s := testMember(groupNS, "srv", "")
	s.Status.Conditions = []metav1.Condition{{Type: thv1.ConditionGroupRefValidated}}
	b.ResolveGroup(b.NewReport(s, &s.Status.Conditions, &s.Status.Phase, &s.Status.Message), groupNS, "")
	if len(s.Status.Conditions) != 0 {
		t.Errorf("conditions %+v, want none", s.Status.Conditions)
	}
}

// TestMemberHandler: a workload controller registers it on the MCPGroup
// informer; a group appearing or disappearing enqueues exactly its members
// in its namespace, and so does the start of its deletion; other updates
// enqueue nothing.
func TestMemberHandler(t *testing.T) {
	idx, err := index.Indexers(thv1.KindMCPServer)
	if err != nil {
		t.Fatal(err)
	}
	servers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, idx)
	for _, s := range []*thv1.MCPServer{
		testMember(groupNS, "b", "g1"), testMember(groupNS, "a", "g1"), testMember(groupNS, "c", "g2"),
		testMember(groupNS, "d", ""), testMember("team-b", "e", "g1"),
	} {
		if err := servers.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	members := []string{groupNS + "/a", groupNS + "/b"}
	withRV := func(g *thv1.MCPGroup, rv string) *thv1.MCPGroup { g.ResourceVersion = rv; return g }

	tests := []struct {
		name string
		fire func(h cache.ResourceEventHandler)
		want []string
	}{
		{"group added", func(h cache.ResourceEventHandler) { h.OnAdd(testGroup(groupNS, "g1"), false) }, members},
		{"group deleted", func(h cache.ResourceEventHandler) { h.OnDelete(testGroup(groupNS, "g1")) }, members},
		{"group deleted, seen as a tombstone", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: groupNS + "/g1", Obj: testGroup(groupNS, "g1")})
		}, members},
		{"group updated", func(h cache.ResourceEventHandler) {
			g := testGroup(groupNS, "g1")
			h.OnUpdate(g, withRV(g.DeepCopy(), "2"))
		}, nil},
		{"group's phase changes", func(h cache.ResourceEventHandler) {
			g := testGroup(groupNS, "g1")
			g.Status.Phase = ""
			ready := withRV(g.DeepCopy(), "2")
			ready.Status.Phase = thv1.MCPGroupPhaseReady
			h.OnUpdate(g, ready)
		}, members},
		{"group's deletion starts", func(h cache.ResourceEventHandler) {
			g := testGroup(groupNS, "g1")
			d := withRV(g.DeepCopy(), "2")
			ts := metav1.Now()
			d.DeletionTimestamp = &ts
			h.OnUpdate(g, d)
		}, members},
		{"group without members", func(h cache.ResourceEventHandler) { h.OnAdd(testGroup(groupNS, "empty"), false) }, nil},
		{"same group name in another namespace", func(h cache.ResourceEventHandler) {
			h.OnAdd(testGroup("team-b", "g1"), false)
		}, []string{"team-b/e"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			tc.fire(MemberHandler(servers, func(key cache.ObjectName) { got = append(got, key.String()) }))
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("enqueued %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMemberHandlerWithoutIndex: an indexer without the ByGroup index is a
// wiring bug; the handler reports it and enqueues nothing instead of
// panicking inside the informer.
func TestMemberHandlerWithoutIndex(t *testing.T) {
	servers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	var got []cache.ObjectName
	MemberHandler(servers, func(key cache.ObjectName) { got = append(got, key) }).OnAdd(testGroup(groupNS, "g1"), false)
	if got != nil {
		t.Errorf("enqueued %v", got)
	}
}

// A member's controller reports its group being deleted as ToolHive's
// operator reports it on the members of a group it deletes; ResolveGroup
// (a VirtualMCPServer's) still sees the group until it is gone.
func TestResolveMemberGroupBeingDeleted(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	g := testGroup(groupNS, "g1")
	ts := metav1.Now()
	g.DeletionTimestamp = &ts
	if err := indexer.Add(g); err != nil {
		t.Fatal(err)
	}
	if err := indexer.Add(testGroup(groupNS, "live")); err != nil {
		t.Fatal(err)
	}
	b := &Base{Groups: listers.NewMCPGroupLister(indexer), Clock: clocktesting.NewFakePassiveClock(metav1.Now().Time),
		Recorder: record.NewFakeRecorder(10)}
	s := testMember(groupNS, "srv", "g1")
	if b.ResolveMemberGroup(b.NewReport(s, &s.Status.Conditions, &s.Status.Phase, &s.Status.Message), groupNS, "g1") {
		t.Error("a group being deleted resolved")
	}
	c := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionGroupRefValidated)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonGroupRefNotFound || c.Message != "Referenced MCPGroup is being deleted" {
		t.Errorf("got %+v", c)
	}
	s = testMember(groupNS, "srv", "live")
	if !b.ResolveMemberGroup(b.NewReport(s, &s.Status.Conditions, &s.Status.Phase, &s.Status.Message), groupNS, "live") {
		t.Error("a live group did not resolve")
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionGroupRefValidated); c == nil || c.Reason != thv1.ReasonGroupRefValidated || c.Message != "MCPGroup 'live' is valid and ready" {
		t.Errorf("live group: %+v", c)
	}
	// A group its controller has not marked Ready yet: served, and said.
	pending := testGroup(groupNS, "pending")
	pending.Status.Phase = ""
	if err := indexer.Add(pending); err != nil {
		t.Fatal(err)
	}
	s = testMember(groupNS, "srv", "pending")
	if !b.ResolveMemberGroup(b.NewReport(s, &s.Status.Conditions, &s.Status.Phase, &s.Status.Message), groupNS, "pending") {
		t.Error("a group not Ready yet did not resolve")
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionGroupRefValidated); c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != thv1.ReasonGroupRefNotReady || c.Message != "MCPGroup 'pending' is not ready (current phase: )" {
		t.Errorf("group not Ready: %+v", c)
	}
	s = testMember(groupNS, "vmcp", "g1")
	if !b.ResolveGroup(b.NewReport(s, &s.Status.Conditions, &s.Status.Phase, &s.Status.Message), groupNS, "g1") {
		t.Error("ResolveGroup no longer sees a group being deleted")
	}
}
