package mcpgroup

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	listers "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

func TestGroupRefCondition(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(group(ns, "g1", 1, thv1.MCPGroupStatus{})); err != nil {
		t.Fatal(err)
	}
	lister := listers.NewMCPGroupLister(indexer)

	tests := []struct {
		name       string
		namespace  string
		group      string
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{"group exists", ns, "g1", metav1.ConditionTrue, thv1.ReasonGroupRefValid,
			`MCPGroup "g1" exists`},
		{"group missing", ns, "g2", metav1.ConditionFalse, thv1.ReasonGroupRefNotFound,
			`MCPGroup "g2" not found in namespace "team-a"`},
		{"a group of that name in another namespace does not count", "team-b", "g1", metav1.ConditionFalse, thv1.ReasonGroupRefNotFound,
			`MCPGroup "g1" not found in namespace "team-b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, reason, msg := GroupRefCondition(lister, tc.namespace, tc.group)
			if status != tc.wantStatus || reason != tc.wantReason || msg != tc.wantMsg {
				t.Errorf("got (%s, %s, %q), want (%s, %s, %q)", status, reason, msg, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

// TestMemberHandler: a workload controller registers it on the MCPGroup
// informer; a group appearing or disappearing enqueues exactly its members
// in its namespace, updates enqueue nothing.
func TestMemberHandler(t *testing.T) {
	idx, err := index.Indexers(thv1.KindMCPServer)
	if err != nil {
		t.Fatal(err)
	}
	servers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, idx)
	for _, s := range []*thv1.MCPServer{
		server(ns, "b", "g1"), server(ns, "a", "g1"), server(ns, "c", "g2"),
		server(ns, "d", ""), server("team-b", "e", "g1"),
	} {
		if err := servers.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	members := []string{ns + "/a", ns + "/b"}

	tests := []struct {
		name string
		fire func(h cache.ResourceEventHandler)
		want []string
	}{
		{"group added", func(h cache.ResourceEventHandler) { h.OnAdd(group(ns, "g1", 1, thv1.MCPGroupStatus{}), false) }, members},
		{"group deleted", func(h cache.ResourceEventHandler) { h.OnDelete(group(ns, "g1", 1, thv1.MCPGroupStatus{})) }, members},
		{"group deleted, seen as a tombstone", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: ns + "/g1", Obj: group(ns, "g1", 1, thv1.MCPGroupStatus{})})
		}, members},
		{"group updated", func(h cache.ResourceEventHandler) {
			g := group(ns, "g1", 1, thv1.MCPGroupStatus{})
			h.OnUpdate(g, withRV(g.DeepCopy(), "2"))
		}, nil},
		{"group without members", func(h cache.ResourceEventHandler) { h.OnAdd(group(ns, "empty", 1, thv1.MCPGroupStatus{}), false) }, nil},
		{"same group name in another namespace", func(h cache.ResourceEventHandler) {
			h.OnAdd(group("team-b", "g1", 1, thv1.MCPGroupStatus{}), false)
		}, []string{"team-b/e"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			tc.fire(MemberHandler(servers, func(key string) { got = append(got, key) }))
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
	var got []string
	MemberHandler(servers, func(key string) { got = append(got, key) }).OnAdd(group(ns, "g1", 1, thv1.MCPGroupStatus{}), false)
	if got != nil {
		t.Errorf("enqueued %v", got)
	}
}
