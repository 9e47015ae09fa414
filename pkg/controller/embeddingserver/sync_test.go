package embeddingserver

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

const testNS = "team-a"

var assertActions = workloadtest.AssertActions

// fixture is the shared fixture (fake clientsets, informer indexers seeded
// directly, exact action assertions) with the controller built on it.
type fixture struct {
	*workloadtest.Fixture
	t *testing.T
	c *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	wf := workloadtest.New(t, objs...)
	c, err := New(wf.Deps(framework.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	f := &fixture{Fixture: wf, t: t, c: c}
	f.Refresh()
	return f
}

func (f *fixture) syncErr(name string) error {
	return f.c.sync(context.Background(), cache.NewObjectName(testNS, name))
}

// sync runs one sync and returns the write actions it sent.
func (f *fixture) sync(name string) []core.Action {
	f.t.Helper()
	if err := f.syncErr(name); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	return f.Writes()
}

func (f *fixture) converge(name string) {
	f.t.Helper()
	f.Converge(func() error { return f.syncErr(name) })
}

func (f *fixture) server(name string) *thv1.EmbeddingServer {
	f.t.Helper()
	e, err := f.Toolhive.ToolhiveV1beta1().EmbeddingServers(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *fixture) statefulSet(name string) *appsv1.StatefulSet {
	f.t.Helper()
	s, err := f.Kube.AppsV1().StatefulSets(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// update writes obj to its fake clientset and refreshes the caches, as a
// change by someone else would reach the controller.
func (f *fixture) update(obj runtime.Object) {
	f.t.Helper()
	ctx := context.Background()
	var err error
	switch o := obj.(type) {
	case *thv1.EmbeddingServer:
		_, err = f.Toolhive.ToolhiveV1beta1().EmbeddingServers(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	case *appsv1.StatefulSet:
		_, err = f.Kube.AppsV1().StatefulSets(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	}
	if err != nil {
		f.t.Fatal(err)
	}
	f.Refresh()
}

func newServer(mut ...func(*thv1.EmbeddingServer)) *thv1.EmbeddingServer {
	return toolhivetest.NewEmbeddingServer(testNS, "embed", mut...)
}

// The first sync creates the StatefulSet and Service, adds ToolHive's
// finalizer with a locked patch and writes the status once: Pending, the
// URL, a valid pod template.
func TestFirstSyncCreatesChildren(t *testing.T) {
	f := newFixture(t, newServer(toolhivetest.WithModelCache("20Gi")))
	acts := f.sync("embed")
	assertActions(t, acts, "create statefulsets", "create services", "patch embeddingservers", "patch embeddingservers/status")
	md := workloadtest.PatchBody(t, acts[2])["metadata"].(map[string]any)
	if md["resourceVersion"] != "1" || md["finalizers"].([]any)[0] != thv1.EmbeddingServerFinalizer {
		t.Errorf("finalizer patch %v", md)
	}
	e := f.server("embed")
	if e.Status.Phase != thv1.EmbeddingServerPhasePending || e.Status.URL != "http://embed.team-a.svc.cluster.local:8080" || e.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", e.Status)
	}
	if c := meta.FindStatusCondition(e.Status.Conditions, thv1.ConditionPodTemplateValid); c == nil || c.Status != metav1.ConditionTrue || c.Message != "No PodTemplateSpec provided" {
		t.Errorf("PodTemplateValid %+v", c)
	}
	if s := f.statefulSet("embed"); len(s.Spec.VolumeClaimTemplates) != 1 || s.Labels[naming.LabelToolhive] != "" {
		t.Errorf("StatefulSet %+v", s.ObjectMeta)
	}
}

// A sync that finds the server still at the version its own status write
// started from — a child's event arrived before the write's own — writes
// nothing and looks again shortly; from the written version it goes on,
// and, converged, writes nothing. Syncing from the stale copy would
// repeat the finalizer patch and rebuild the status from one the server
// no longer has.
func TestSyncWaitsForItsOwnStatusWrite(t *testing.T) {
	f := newFixture(t, newServer())
	f.VersionWrites()
	stale := f.server("embed")
	assertActions(t, f.sync("embed"), "create statefulsets", "create services", "patch embeddingservers", "patch embeddingservers/status")
	f.Refresh()
	informer := f.ToolhiveInformers.Toolhive().V1beta1().EmbeddingServers().Informer()
	if err := informer.GetIndexer().Update(stale); err != nil {
		t.Fatal(err)
	}
	assertActions(t, f.sync("embed"))
	if key, _ := f.c.Queue.Get(); key != cache.NewObjectName(testNS, "embed") {
		t.Errorf("queued %v, want the server looked at again", key)
	}
	f.Refresh()
	assertActions(t, f.sync("embed"))
}

// Invariant 2: a converged server costs nothing, through API server
// defaulting and marks of other controllers.
func TestSteadyStateMakesNoWrites(t *testing.T) {
	f := newFixture(t, newServer(toolhivetest.WithModelCache("20Gi"), func(e *thv1.EmbeddingServer) {
		e.Spec.PodTemplateSpec = toolhivetest.Raw(toolhivetest.EmbeddingFullTemplate)
		e.Spec.HFTokenSecretRef = &thv1.SecretKeyRef{Name: "hf", Key: "token"}
	}))
	f.converge("embed")
	assertActions(t, f.sync("embed"))
	assertActions(t, f.sync("embed"))
}

// The phase follows the StatefulSet's status, read from the informer:
// Downloading while replicas exist but none is ready, Ready once one is;
// nothing but the status is written.
func TestPhaseFollowsTheStatefulSet(t *testing.T) {
	f := newFixture(t, newServer())
	f.converge("embed")
	for _, c := range []struct {
		replicas, ready int32
		phase, message  string
	}{
		{1, 0, thv1.EmbeddingServerPhaseDownloading, "Downloading embedding model"},
		{1, 1, thv1.EmbeddingServerPhaseReady, "Embedding server is running"},
		// readyReplicas is the ready count, not the replicas.
		{3, 2, thv1.EmbeddingServerPhaseReady, "Embedding server is running"},
		{0, 0, thv1.EmbeddingServerPhasePending, "Waiting for statefulset"},
	} {
		s := f.statefulSet("embed")
		s.Status.Replicas, s.Status.ReadyReplicas = c.replicas, c.ready
		f.update(s)
		assertActions(t, f.sync("embed"), "patch embeddingservers/status")
		e := f.server("embed")
		if e.Status.Phase != c.phase || e.Status.Message != c.message || e.Status.ReadyReplicas != c.ready {
			t.Errorf("replicas %d ready %d: status %+v", c.replicas, c.ready, e.Status)
		}
		f.Refresh()
		assertActions(t, f.sync("embed"))
	}
}

// A spec change patches the StatefulSet once; a new port also moves the
// Service and the URL.
func TestSpecChangePatchesOnce(t *testing.T) {
	f := newFixture(t, newServer())
	f.converge("embed")
	e := f.server("embed")
	e.Spec.Port, e.Generation = 9000, 2
	f.update(e)
	acts := f.sync("embed")
	assertActions(t, acts, "patch statefulsets", "patch services", "patch embeddingservers/status")
	if u := f.server("embed").Status.URL; u != "http://embed.team-a.svc.cluster.local:9000" {
		t.Errorf("URL %s", u)
	}
	f.converge("embed")
	if a := f.statefulSet("embed").Spec.Template.Spec.Containers[0].Args; strings.Join(a, " ") != "--model-id BAAI/bge-small-en-v1.5 --port 9000" {
		t.Errorf("args %v", a)
	}
}

// A replica count set by someone else is put back, as ToolHive's
// operator puts it back.
func TestReplicasArePutBack(t *testing.T) {
	f := newFixture(t, newServer())
	f.converge("embed")
	s := f.statefulSet("embed")
	s.Spec.Replicas = ptr.To[int32](5)
	f.update(s)
	acts := f.sync("embed")
	assertActions(t, acts, "patch statefulsets")
	if r := workloadtest.PatchBody(t, acts[0])["spec"].(map[string]any)["replicas"]; r != 1.0 {
		t.Errorf("replicas patched to %v", r)
	}
}

// The volume claim templates cannot change in place: a new cache size
// deletes the StatefulSet (its claims stay), and the next sync creates it.
func TestCacheChangeRecreatesTheStatefulSet(t *testing.T) {
	f := newFixture(t, newServer(toolhivetest.WithModelCache("20Gi")))
	f.converge("embed")
	e := f.server("embed")
	e.Spec.ModelCache.Size, e.Generation = "40Gi", 2
	f.update(e)
	acts := f.sync("embed")
	assertActions(t, acts, "delete statefulsets", "patch embeddingservers/status")
	f.Refresh()
	assertActions(t, f.sync("embed"), "create statefulsets")
}

// A podTemplateSpec no pod can be built from is reported (PodTemplateValid
// False, phase Failed, one Warning event) and leaves the children as they
// are; fixing it converges again.
func TestInvalidTemplateLeavesTheChildren(t *testing.T) {
	f := newFixture(t, newServer())
	f.converge("embed")
	f.Events()
	e := f.server("embed")
	e.Spec.PodTemplateSpec, e.Generation = toolhivetest.Raw(`{"spec":{"containers":"no"}}`), 2
	f.update(e)
	assertActions(t, f.sync("embed"), "patch embeddingservers/status")
	e = f.server("embed")
	c := meta.FindStatusCondition(e.Status.Conditions, thv1.ConditionPodTemplateValid)
	if e.Status.Phase != thv1.EmbeddingServerPhaseFailed || c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonPodTemplateInvalid {
		t.Errorf("status %+v", e.Status)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonPodTemplateInvalid) {
		t.Errorf("events %q", evs)
	}
	f.Refresh()
	assertActions(t, f.sync("embed"))
	if evs := f.Events(); len(evs) != 0 {
		t.Errorf("a lasting problem repeated its event: %q", evs)
	}
}

// A StatefulSet of that name controlled by something else is not touched:
// phase Failed, looked at again in a minute. One carrying an
// EmbeddingServer's labels is in the cache and seen before any write; one
// without them is not (the cache is selected by label, as in the fixture),
// so the create is tried and its 409 tells the same.
func TestForeignStatefulSetIsAConflict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		actions []string
	}{
		{"labelled", naming.EmbeddingServerLabels("embed"), []string{"patch embeddingservers", "patch embeddingservers/status"}},
		{"unlabelled", nil, []string{"create statefulsets", "patch embeddingservers", "patch embeddingservers/status"}},
	} {
		t.Run(tc.name, func(t *testing.T) { foreignStatefulSetIsAConflict(t, tc.labels, tc.actions) })
	}
}

func foreignStatefulSetIsAConflict(t *testing.T, labels map[string]string, actions []string) {
	other := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "embed", Namespace: testNS, ResourceVersion: "1", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "x", Controller: ptr.To(true)}}}}
	f := newFixture(t, newServer(), other)
	spy := workloadtest.SpyRequeues(f.c.Loop)
	assertActions(t, f.sync("embed"), actions...)
	e := f.server("embed")
	if e.Status.Phase != thv1.EmbeddingServerPhaseFailed || !strings.Contains(e.Status.Message, "controlled by Deployment/x") {
		t.Errorf("status %+v", e.Status)
	}
	if after := spy.After(); len(after) != 1 || after[0] != time.Minute {
		t.Errorf("requeues %v", after)
	}
}

// Deletion: status Terminating, ToolHive's finalizer released with a
// patch locked to the status write's resourceVersion, one Normal event.
func TestDeletionReleasesTheFinalizer(t *testing.T) {
	f := newFixture(t, newServer())
	f.converge("embed")
	f.Events()
	e := f.server("embed")
	e.DeletionTimestamp = &metav1.Time{Time: toolhivetest.Now}
	f.update(e)
	acts := f.sync("embed")
	assertActions(t, acts, "patch embeddingservers/status", "patch embeddingservers")
	if fin := workloadtest.PatchBody(t, acts[1])["metadata"].(map[string]any)["finalizers"]; fin != nil {
		t.Errorf("finalizers patched to %v", fin)
	}
	if evs := f.Events(); len(evs) != 1 || evs[0] != "Normal Deleted EmbeddingServer has been finalized" {
		t.Errorf("events %q", evs)
	}
}
