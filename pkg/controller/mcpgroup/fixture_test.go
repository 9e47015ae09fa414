package mcpgroup

import (
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

const ns = "team-a"

var (
	// now is the fixture clock; conditions written by a sync carry it.
	now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// earlier is the transition time of conditions seeded as already set.
	earlier = metav1.NewTime(time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC))

	mcpgroupsResource = thv1.SchemeGroupVersion.WithResource("mcpgroups")
)

// fixture is one controller on a fake clientset whose informer indexers are
// seeded directly; the informers are never started, so every recorded
// action is one the sync made.
type fixture struct {
	t       *testing.T
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	c       *Controller
}

// newFixture seeds objs into both the fake clientset (so patches apply) and
// the informer indexers (what the controller reads). withIndex=false builds
// informers without the ByGroup index, the wiring bug the Failed phase
// reports.
func newFixture(t *testing.T, withIndex bool, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	if withIndex {
		if err := index.AddToInformers(factory); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(&framework.Deps{Toolhive: client, Scopes: []framework.Scope{{Toolhive: factory}}, Clock: testingclock.NewFakePassiveClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	f := &fixture{t: t, client: client, factory: factory, c: c}
	for _, o := range objs {
		f.seed(o)
	}
	client.ClearActions()
	return f
}

// indexerFor returns the informer indexer that holds obj's kind.
func (f *fixture) indexerFor(obj runtime.Object) cache.Indexer {
	v := f.factory.Toolhive().V1beta1()
	switch obj.(type) {
	case *thv1.MCPGroup:
		return v.MCPGroups().Informer().GetIndexer()
	case *thv1.MCPServer:
		return v.MCPServers().Informer().GetIndexer()
	case *thv1.MCPRemoteProxy:
		return v.MCPRemoteProxies().Informer().GetIndexer()
	case *thv1.MCPServerEntry:
		return v.MCPServerEntries().Informer().GetIndexer()
	}
	f.t.Fatalf("no indexer for %T", obj)
	return nil
}

// seed puts a copy of obj into its informer cache, as a watch event would.
func (f *fixture) seed(obj runtime.Object) {
	f.t.Helper()
	if err := f.indexerFor(obj).Update(obj.DeepCopyObject()); err != nil {
		f.t.Fatal(err)
	}
}

// sync runs one sync of key and fails the test on error.
func (f *fixture) sync(key string) {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	name, err := cache.ParseObjectName(key)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.c.sync(ctx, name); err != nil {
		f.t.Fatalf("sync %s: %v", key, err)
	}
}

// stored returns the group as the fake API server holds it now.
func (f *fixture) stored(namespace, name string) *thv1.MCPGroup {
	f.t.Helper()
	obj, err := f.client.Tracker().Get(mcpgroupsResource, namespace, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*thv1.MCPGroup)
}

// feedBack copies the stored group into the informer cache, as the watch
// event of the controller's own patch would.
func (f *fixture) feedBack(namespace, name string) {
	f.seed(f.stored(namespace, name))
}

// expectStatusPatches asserts that the recorded actions are exactly one
// merge patch of the status subresource per key, in order.
func (f *fixture) expectStatusPatches(keys ...string) []core.PatchAction {
	f.t.Helper()
	actions := f.client.Actions()
	if len(actions) != len(keys) {
		f.t.Fatalf("want %d actions (status patches of %v), got %d: %v", len(keys), keys, len(actions), actions)
	}
	out := make([]core.PatchAction, 0, len(actions))
	for i, a := range actions {
		p, ok := a.(core.PatchAction)
		if !ok || !a.Matches("patch", "mcpgroups") || a.GetSubresource() != "status" {
			f.t.Fatalf("action %d: want patch mcpgroups/status, got %v", i, a)
		}
		if got := p.GetNamespace() + "/" + p.GetName(); got != keys[i] {
			f.t.Fatalf("action %d patched %s, want %s", i, got, keys[i])
		}
		if p.GetPatchType() != "application/merge-patch+json" {
			f.t.Fatalf("action %d: patch type %s, want merge patch", i, p.GetPatchType())
		}
		out = append(out, p)
	}
	return out
}

// expectNoActions asserts that the controller made no API call at all.
func (f *fixture) expectNoActions() {
	f.t.Helper()
	if actions := f.client.Actions(); len(actions) != 0 {
		f.t.Fatalf("want no actions, got %d: %v", len(actions), actions)
	}
}

// drain returns the keys in the controller's queue, sorted, and empties it.
func drain(c *Controller) []string {
	var keys []string
	for c.Queue.Len() > 0 {
		k, _ := c.Queue.Get()
		keys = append(keys, k.String())
		c.Queue.Done(k)
		c.Queue.Forget(k)
	}
	sort.Strings(keys)
	return keys
}

// Object builders.

// group is a group as the controller left it: holding ToolHive's
// finalizer (bareGroup is one that does not hold it yet).
func group(namespace, name string, generation int64, status thv1.MCPGroupStatus) *thv1.MCPGroup {
	g := bareGroup(namespace, name, generation, status)
	g.Finalizers = []string{thv1.MCPGroupFinalizer}
	return g
}

func bareGroup(namespace, name string, generation int64, status thv1.MCPGroupStatus) *thv1.MCPGroup {
	return &thv1.MCPGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: generation, ResourceVersion: "1"},
		Status:     status,
	}
}

func server(namespace, name, groupName string) *thv1.MCPServer {
	s := &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: "1"},
		Spec:       thv1.MCPServerSpec{Image: "example/mcp:1"},
	}
	if groupName != "" {
		s.Spec.GroupRef = &thv1.GroupRef{Name: groupName}
	}
	return s
}

func proxy(namespace, name, groupName string) *thv1.MCPRemoteProxy {
	p := &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: "1"},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://mcp.example.com"},
	}
	if groupName != "" {
		p.Spec.GroupRef = &thv1.GroupRef{Name: groupName}
	}
	return p
}

func entry(namespace, name, groupName string) *thv1.MCPServerEntry {
	return &thv1.MCPServerEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: "1"},
		Spec: thv1.MCPServerEntrySpec{RemoteURL: "https://mcp.example.com", Transport: thv1.TransportStreamableHTTP,
			GroupRef: &thv1.GroupRef{Name: groupName}},
	}
}

// readyCondition is the Ready condition a successful sync writes.
func readyCondition(generation int64, transition metav1.Time) metav1.Condition {
	return metav1.Condition{
		Type:               thv1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             thv1.ReasonMembershipComputed,
		Message:            messageMembershipComputed,
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
}

// checkedCondition is ToolHive's MCPServersChecked a successful sync
// writes beside Ready.
func checkedCondition(generation int64, transition metav1.Time) metav1.Condition {
	return metav1.Condition{
		Type:               thv1.ConditionMCPServersChecked,
		Status:             metav1.ConditionTrue,
		Reason:             thv1.ReasonListMCPServersCheckSucceeded,
		Message:            "Successfully listed MCPServers, MCPRemoteProxies, and MCPServerEntries in namespace",
		ObservedGeneration: generation,
		LastTransitionTime: transition,
	}
}
