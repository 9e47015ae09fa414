package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

var (
	assertActions = workloadtest.AssertActions
	patchBody     = workloadtest.PatchBody
)

// The first sync adds the finalizer with a patch locked to the
// resourceVersion that carries nothing else, and goes on to create the
// children and write status in the same sync.
func TestFirstSyncAddsFinalizerWithLockedPatch(t *testing.T) {
	s := newServer("fetch")
	s.Finalizers = nil
	f := newFixture(t, s)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "create serviceaccounts", "create rolebindings", "create serviceaccounts", "create configmaps",
		"create services", "create deployments", "patch mcpservers", "patch mcpservers/status")
	body := patchBody(t, acts[6])
	if _, hasSpec := body["spec"]; hasSpec {
		t.Errorf("finalizer patch carries spec: %v", body)
	}
	md := body["metadata"].(map[string]any)
	if md["resourceVersion"] != "1" {
		t.Errorf("finalizer patch lacks the resourceVersion lock: %v", body)
	}
	if fin := md["finalizers"].([]any); len(fin) != 1 || fin[0] != thv1.MCPServerFinalizer {
		t.Errorf("finalizers = %v", fin)
	}
}

func TestCreateThenSteadyStateMakesNoWrites(t *testing.T) {
	s := newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp"}
		s.Spec.ResourceOverrides = toolhivetest.MCPServerOverrides["both"]
		s.Spec.Secrets = []thv1.SecretRef{{Name: "gh", Key: "token", TargetEnvName: "GITHUB_TOKEN"}, {Name: "api", Key: "API_KEY"}}
	})
	f := newFixture(t, s, newOIDCConfig("auth", true, true))
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts,
		"create serviceaccounts", "create rolebindings", "create serviceaccounts",
		"create configmaps", "create services", "create deployments", "patch mcpservers/status")
	for _, a := range acts {
		if a.GetResource().Resource == "mcpoidcconfigs" {
			t.Fatalf("workload sync touched mcpoidcconfigs: %s", describe([]core.Action{a}))
		}
	}

	// The server defaults everything, other controllers annotate; the
	// second round writes nothing at all.
	f.applyServerBehaviour()
	f.refresh()
	before := testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues(Name, "deployments"))
	for i := range 3 {
		acts, err = f.sync("fetch")
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 0 {
			t.Fatalf("round %d of a converged server wrote: %s", i, describe(acts))
		}
	}
	if after := testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues(Name, "deployments")); after != before {
		t.Errorf("churn moved at steady state: %v -> %v", before, after)
	}
}

func TestChildrenShape(t *testing.T) {
	s := newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.Transport = thv1.TransportSSE
		s.Spec.ProxyPort = 9090
		s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp", ResourceURL: "https://mcp.example.com"}
		s.Spec.ResourceOverrides = toolhivetest.MCPServerOverrides["conflicting-operator-keys"]
	})
	f := newFixture(t, s, newOIDCConfig("auth", true, true))
	f.converge("fetch")
	ctx := context.Background()
	dep, err := f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tpl := dep.Spec.Template
	if tpl.Labels[naming.LabelInstance] != "fetch" || dep.Labels[naming.LabelApp] != naming.AppMCPServer {
		t.Errorf("operator keys did not win: %v / %v", tpl.Labels, dep.Labels)
	}
	cm, _ := f.kube.CoreV1().ConfigMaps(testNS).Get(ctx, "fetch-runconfig", metav1.GetOptions{})
	sum := cm.Annotations[schema.ChecksumAnnotation]
	if tpl.Annotations[naming.AnnotationRunConfigChecksum] != sum || tpl.Annotations[naming.AnnotationMCPServerGeneration] != "1" {
		t.Errorf("template annotations %v lost the checksum %s or generation", tpl.Annotations, sum)
	}
	c := tpl.Spec.Containers[0]
	if c.Name != "toolhive" || c.Image != "runner:test" || c.Args[0] != "run" || !strings.HasPrefix(c.Args[1], "--k8s-pod-patch=") || c.Args[2] != s.Spec.Image {
		t.Errorf("container %s %s %v", c.Name, c.Image, c.Args)
	}
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	want := "TOOLHIVE_OIDC_CLIENT_SECRET,HOME,THV_MCPSERVER_GENERATION,XDG_CONFIG_HOME,TOOLHIVE_RUNTIME,UNSTRUCTURED_LOGS"
	if strings.Join(names, ",") != want {
		t.Errorf("env order %v, want %s", names, want)
	}
	gen := c.Env[2].ValueFrom.FieldRef
	if gen.APIVersion != "v1" || gen.FieldPath != "metadata.annotations['toolhive.stacklok.dev/mcpserver-generation']" {
		t.Errorf("generation env %+v", gen)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if rc.ProxyMode != "sse" || rc.Port != 9090 || rc.TargetPort != 8080 || rc.Host != "0.0.0.0" || rc.OIDCConfig == nil ||
		rc.OIDCConfig.CACertPath != "/config/certs/idp-ca/ca.crt" || rc.OIDCConfig.ResourceURL != "https://mcp.example.com" {
		t.Errorf("runconfig %+v oidc %+v", rc, rc.OIDCConfig)
	}
	if strings.Contains(cm.Data[schema.Key], "secret") {
		t.Errorf("a secret reached the ConfigMap: %s", cm.Data[schema.Key])
	}
	svc, _ := f.kube.CoreV1().Services(testNS).Get(ctx, "mcp-fetch-proxy", metav1.GetOptions{})
	if svc.Spec.Ports[0].Port != 9090 || svc.Spec.Ports[0].TargetPort.IntVal != 9090 || svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || svc.Labels[naming.LabelToolhive] != "true" {
		t.Errorf("service %+v labels %v", svc.Spec, svc.Labels)
	}
	for _, obj := range []metav1.Object{dep, cm, svc} {
		ref := metav1.GetControllerOf(obj)
		if ref == nil || ref.UID != s.UID || ref.Kind != thv1.KindMCPServer {
			t.Errorf("%s has owner %+v", obj.GetName(), ref)
		}
	}
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if got.Status.URL != "http://mcp-fetch-proxy.team-a.svc.cluster.local:9090/sse#fetch" || got.Status.OIDCConfigHash != "hash-auth" ||
		got.Status.Phase != thv1.MCPServerPhasePending || got.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", got.Status)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionOIDCConfigRefValidated) {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}
}

func TestRestartRollingPatchesOnlyTheTemplateAnnotationOnce(t *testing.T) {
	s := newServer("fetch")
	f := newFixture(t, s)
	f.converge("fetch")
	live, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	live = live.DeepCopy()
	live.Annotations = map[string]string{thv1.AnnotationRestartedAt: "2026-11-21T12:30:00Z"}
	if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch deployments", "patch mcpservers")
	dp := string(acts[0].(core.PatchAction).GetPatch())
	want := `{"metadata":{"resourceVersion":`
	if !strings.HasPrefix(dp, want) || !strings.Contains(dp, `"spec":{"template":{"metadata":{"annotations":{"mcpserver.toolhive.stacklok.dev/restarted-at":"2026-11-21T12:30:00Z"}}}}`) {
		t.Errorf("rolling restart patch %s", dp)
	}
	rec := patchBody(t, acts[1])
	if _, hasSpec := rec["spec"]; hasSpec || rec["metadata"].(map[string]any)["resourceVersion"] == nil {
		t.Errorf("restart record patch %v", rec)
	}
	f.refresh()
	acts, _ = f.sync("fetch")
	assertActions(t, acts) // processed once
}

// A restart requested before the first sync waits for the sync that sees
// the finalizer: in the sync that adds it, the server's resourceVersion is
// stale and the locked record patch could only conflict.
func TestRestartWaitsForTheFinalizerPatch(t *testing.T) {
	s := newServer("fetch")
	s.Finalizers = nil
	s.Annotations = map[string]string{thv1.AnnotationRestartedAt: "2026-11-21T12:30:00Z"}
	f := newFixture(t, s)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	workloadtest.AssertNoActionOn(t, acts, "pods")
	if got := acts[len(acts)-2]; got.GetVerb() != "patch" || patchBody(t, got)["metadata"].(map[string]any)["annotations"] != nil {
		t.Fatalf("the first sync recorded the restart: %s", describe(acts))
	}
	f.refresh()
	acts, err = f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch deployments", "patch mcpservers")
}

func TestRestartImmediateDeletesProxyPods(t *testing.T) {
	s := newServer("fetch")
	f := newFixture(t, s)
	f.converge("fetch")
	live, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	live = live.DeepCopy()
	live.Annotations = map[string]string{thv1.AnnotationRestartedAt: "2026-11-21T12:30:00Z", thv1.AnnotationRestartStrategy: thv1.RestartImmediate}
	_, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), live, metav1.UpdateOptions{})
	f.refresh()
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	// Pods deleted, the Deployment marked (so a retry does not delete them
	// again), then the request recorded.
	assertActions(t, acts, "delete-collection pods", "patch deployments", "patch mcpservers")
	sel := acts[0].(core.DeleteCollectionAction).GetListRestrictions().Labels.String()
	if !strings.Contains(sel, "app.kubernetes.io/instance=fetch") {
		t.Errorf("selector %s", sel)
	}
}

func TestRestartUnparsableIsIgnored(t *testing.T) {
	s := newServer("fetch")
	f := newFixture(t, s)
	f.converge("fetch")
	live, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	live = live.DeepCopy()
	live.Annotations = map[string]string{thv1.AnnotationRestartedAt: "yesterday"}
	_, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), live, metav1.UpdateOptions{})
	f.refresh()
	acts, err := f.sync("fetch")
	if err != nil || len(acts) != 0 {
		t.Fatalf("err %v actions %s", err, describe(acts))
	}
}

// A restart request no newer than the last one processed is ignored,
// whatever the strategy: a GitOps tool re-applying a manifest that still
// carries an old restarted-at (with the newer one recorded as processed)
// must not restart the pods again. An equal timestamp is not newer.
func TestRestartOlderThanTheLastProcessedIsIgnored(t *testing.T) {
	for _, tc := range []struct{ name, req, strategy string }{
		{"older rolling", "2026-11-21T12:30:00Z", ""},
		{"older immediate", "2026-11-21T12:30:00Z", thv1.RestartImmediate},
		{"same instant, another spelling", "2026-11-21T14:30:00+01:00", thv1.RestartImmediate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newServer("fetch"))
			f.converge("fetch")
			live, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			live = live.DeepCopy()
			live.Annotations = map[string]string{thv1.AnnotationRestartedAt: tc.req, thv1.AnnotationLastProcessedRestart: "2026-11-21T13:30:00Z"}
			if tc.strategy != "" {
				live.Annotations[thv1.AnnotationRestartStrategy] = tc.strategy
			}
			if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.refresh()
			acts, err := f.sync("fetch")
			if err != nil {
				t.Fatal(err)
			}
			assertActions(t, acts)
		})
	}
}

func TestInvalidPodTemplateIsAConditionNotARetry(t *testing.T) {
	s := newServer("bad", func(s *thv1.MCPServer) {
		s.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"not-a-list"}}`)}
	})
	f := newFixture(t, s)
	acts, err := f.sync("bad")
	if err != nil {
		t.Fatalf("invalid input must not be retried: %v", err)
	}
	assertActions(t, acts, "patch mcpservers/status")
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "bad", metav1.GetOptions{})
	cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionPodTemplateValid)
	if cond == nil || cond.Status != metav1.ConditionFalse || got.Status.Phase != thv1.MCPServerPhaseFailed {
		t.Fatalf("status %+v", got.Status)
	}
	if len(f.recorder.Events) != 1 {
		t.Fatalf("want one event, got %d", len(f.recorder.Events))
	}
	if ev := <-f.recorder.Events; !strings.HasPrefix(ev, "Warning "+thv1.ReasonPodTemplateInvalid) {
		t.Errorf("event %q", ev)
	}
	f.refresh()
	acts, err = f.sync("bad")
	if err != nil || len(acts) != 0 || len(f.recorder.Events) != 0 {
		t.Fatalf("second sync: err %v actions %s events %d", err, describe(acts), len(f.recorder.Events))
	}
}

func TestOIDCReferenceMissingBlocksChildrenAndReports(t *testing.T) {
	s := newServer("fetch", func(s *thv1.MCPServer) { s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "nope", Audience: "a"} })
	f := newFixture(t, s)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch mcpservers/status")
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionOIDCConfigRefValidated)
	if cond == nil || cond.Reason != thv1.ReasonOIDCConfigRefNotFound {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	// An invalid config is reported with its own reason.
	f2 := newFixture(t, s, newOIDCConfig("nope", true, false))
	_, _ = f2.sync("fetch")
	got, _ = f2.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionOIDCConfigRefValidated); cond == nil || cond.Reason != thv1.ReasonOIDCConfigRefNotValid {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
}

func TestDriftIsRepairedOnceAndCounted(t *testing.T) {
	s := newServer("fetch")
	f := newFixture(t, s)
	f.converge("fetch")
	ctx := context.Background()
	dep, _ := f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	dep = dep.DeepCopy()
	dep.Spec.Template.Spec.Containers[0].Image = "evil:latest"
	dep.Labels["team"] = "someone-else"
	// Foreign annotations on the Deployment and on its pod template (a
	// tool's note, `kubectl rollout restart`) survive the repair too.
	dep.Annotations = map[string]string{"owner.example.com/ticket": "OPS-1"}
	if dep.Spec.Template.Annotations == nil {
		dep.Spec.Template.Annotations = map[string]string{}
	}
	dep.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-26T00:00:00Z"
	_, _ = f.kube.AppsV1().Deployments(testNS).Update(ctx, dep, metav1.UpdateOptions{})
	f.refresh()
	before := testutil.ToFloat64(metrics.DriftDetections.WithLabelValues(Name, "deployments", drift.FieldContainerImage))
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch deployments")
	if after := testutil.ToFloat64(metrics.DriftDetections.WithLabelValues(Name, "deployments", drift.FieldContainerImage)); after != before+1 {
		t.Errorf("drift counter %v -> %v", before, after)
	}
	f.refresh()
	acts, _ = f.sync("fetch")
	assertActions(t, acts)
	dep, _ = f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if dep.Labels["team"] != "someone-else" || dep.Spec.Template.Spec.Containers[0].Image != "runner:test" {
		t.Errorf("repair lost a foreign label or kept the drift: %v %s", dep.Labels, dep.Spec.Template.Spec.Containers[0].Image)
	}
	if dep.Annotations["owner.example.com/ticket"] != "OPS-1" || dep.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("repair lost a foreign annotation: %v, template %v", dep.Annotations, dep.Spec.Template.Annotations)
	}
}

func TestChildOfAnotherControllerIsNotAdopted(t *testing.T) {
	s := newServer("fetch")
	other := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "fetch-proxy-runner", Namespace: testNS,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "other", Controller: ptrTrue()}}}}
	f := newFixture(t, s, other)
	requeues := workloadtest.SpyRequeues(f.c.Loop)
	if _, err := f.sync("fetch"); err != nil || len(requeues.After()) != 1 {
		t.Fatalf("err = %v, requeues %v: want a requeue for the conflict", err, requeues.After())
	}
	for _, a := range f.writes() {
		if a.GetResource().Resource == "serviceaccounts" {
			t.Fatalf("wrote to a foreign child: %s", describe([]core.Action{a}))
		}
	}
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); cond == nil || cond.Reason != thv1.ReasonNotReady || !strings.Contains(cond.Message, " exists and is ") {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
}

// TestFinalizerCleansRunnerObjectsThenReleases: on deletion the server is
// marked Terminating, the objects the proxy runner created for it are
// deleted, each with its UID as a precondition, and the finalizer is
// released, all in one sync.
func TestFinalizerCleansRunnerObjectsThenReleases(t *testing.T) {
	s := newServer("fetch")
	now := metav1.NewTime(testNow)
	s.DeletionTimestamp = &now
	f := newFixture(t, append([]runtime.Object{s}, runnerObjects("fetch", runnerLabels("fetch"))...)...)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	// Kube actions are listed before toolhive ones.
	assertActions(t, acts, "delete statefulsets", "delete services", "delete services", "patch mcpservers/status", "patch mcpservers")
	for _, a := range acts[:3] {
		d := a.(core.DeleteActionImpl)
		if p := d.DeleteOptions.Preconditions; p == nil || p.UID == nil || *p.UID != k8stypes.UID("uid-"+d.Name) {
			t.Errorf("delete of %s %s without its UID as precondition: %+v", d.Resource.Resource, d.Name, d.DeleteOptions)
		}
	}
	rel := patchBody(t, acts[4])
	md := rel["metadata"].(map[string]any)
	if md["resourceVersion"] == nil || rel["spec"] != nil {
		t.Errorf("finalizer removal %v", rel)
	}
	if fin, ok := md["finalizers"]; !ok || fin != nil {
		t.Errorf("finalizers not removed: %v", md)
	}
	if ev := f.Events(); len(ev) != 0 {
		t.Errorf("events %q, want none", ev)
	}
}

// TestFinalizerLeavesObjectsItDoesNotOwnAlone: the runner's objects are
// found by name, and a name is not proof. An unrelated StatefulSet of the
// server's name, and the proxy Service of server "foo" (mcp-foo-proxy, the
// name the runner of server "foo-proxy" would use), are left in place with
// a Warning event each; the finalizer is still released.
func TestFinalizerLeavesObjectsItDoesNotOwnAlone(t *testing.T) {
	cases := map[string]struct {
		server string
		labels map[string]string
	}{
		"unrelated objects of the same names":            {"postgres", map[string]string{"app": "postgres"}},
		"another server's children":                      {"foo-proxy", runnerLabels("foo")},
		"labelled for this server but not toolhive=true": {"fetch", map[string]string{naming.LabelToolhiveName: "fetch"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newServer(tc.server)
			now := metav1.NewTime(testNow)
			s.DeletionTimestamp = &now
			f := newFixture(t, append([]runtime.Object{s}, runnerObjects(tc.server, tc.labels)...)...)
			acts, err := f.sync(tc.server)
			if err != nil {
				t.Fatal(err)
			}
			assertActions(t, acts, "patch mcpservers/status", "patch mcpservers")
			ev := f.Events()
			if len(ev) != 3 {
				t.Fatalf("events %q, want one per object left alone", ev)
			}
			for i, obj := range append([]string{"StatefulSet " + testNS + "/" + tc.server}, "Service "+testNS+"/mcp-"+tc.server+"-headless", "Service "+testNS+"/mcp-"+tc.server) {
				if !strings.HasPrefix(ev[i], "Warning "+thv1.ReasonCleanupSkipped+" Left "+obj+" in place: it lacks the label ") {
					t.Errorf("event %q does not name %s and why", ev[i], obj)
				}
			}
		})
	}
}

// runnerLabels are labels the proxy runner puts on what it creates for
// server n (its own set has more keys).
func runnerLabels(n string) map[string]string {
	return map[string]string{"app": n, naming.LabelToolhive: "true", naming.LabelToolhiveName: n}
}

// runnerObjects are a StatefulSet and Services under the names the proxy
// runner uses for server n, carrying labels; each UID is "uid-<name>".
func runnerObjects(n string, labels map[string]string) []runtime.Object {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: testNS, UID: k8stypes.UID("uid-" + name), Labels: labels}
	}
	return []runtime.Object{
		&appsv1.StatefulSet{ObjectMeta: meta(n)},
		&corev1.Service{ObjectMeta: meta("mcp-" + n + "-headless")},
		&corev1.Service{ObjectMeta: meta("mcp-" + n)},
	}
}

func TestConflictOnFinalizerPatchIsRetryable(t *testing.T) {
	s := newServer("fetch")
	s.Finalizers = nil
	f := newFixture(t, s)
	f.th.PrependReactor("patch", "mcpservers", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(thv1.Resource("mcpservers"), "fetch", nil)
	})
	_, err := f.sync("fetch")
	if !apierrors.IsConflict(err) {
		t.Fatalf("want a conflict error to retry, got %v", err)
	}
}

func TestWorkloadSyncNeverTouchesOIDCConfigs(t *testing.T) {
	for _, inline := range []bool{true, false} {
		s := newServer("fetch", func(s *thv1.MCPServer) { s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "a"} })
		f := newFixture(t, s, newOIDCConfig("auth", inline, true))
		// A reactor sees every round: Converge's refreshes clear the
		// recorded actions, so reading them afterwards would show only
		// the last, write-free round.
		var touched []core.Action
		f.th.PrependReactor("*", "mcpoidcconfigs", func(a core.Action) (bool, runtime.Object, error) {
			if a.GetVerb() != "list" && a.GetVerb() != "watch" {
				touched = append(touched, a)
			}
			return false, nil, nil
		})
		f.converge("fetch")
		if len(touched) > 0 {
			t.Fatalf("actions on mcpoidcconfigs: %s", describe(touched))
		}
	}
}

func ptrTrue() *bool { b := true; return &b }

// TestRestartIsNotRepeatedWhenTheRecordFails: recording
// last-processed-restart can fail (409, admission); the retry must not
// stamp the template or delete the pods a second time.
func TestRestartIsNotRepeatedWhenTheRecordFails(t *testing.T) {
	for _, strategy := range []string{thv1.RestartRolling, thv1.RestartImmediate} {
		t.Run(strategy, func(t *testing.T) {
			s := newServer("fetch")
			f := newFixture(t, s)
			f.converge("fetch")
			live, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			live = live.DeepCopy()
			live.Annotations = map[string]string{thv1.AnnotationRestartedAt: "2026-11-21T12:30:00Z", thv1.AnnotationRestartStrategy: strategy}
			_, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), live, metav1.UpdateOptions{})
			f.refresh()
			f.th.PrependReactor("patch", "mcpservers", func(a core.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() == "" {
					return true, nil, apierrors.NewConflict(thv1.Resource("mcpservers"), "fetch", nil)
				}
				return false, nil, nil
			})
			if _, err := f.sync("fetch"); err == nil {
				t.Fatal("want the failed record to be retried")
			}
			f.refresh() // the Deployment now carries the stamp
			acts, _ := f.sync("fetch")
			assertActions(t, acts, "patch mcpservers")
		})
	}
}

// TestChildWriteFailureConditionIsStable: a Service create refused with a
// message that changes on every attempt (an exceeded quota reports the
// namespace's current usage) is reported once. The condition names the
// child and the kind of refusal; the retries write no status, while each
// attempt's own message still reaches an event.
func TestChildWriteFailureConditionIsStable(t *testing.T) {
	f := newFixture(t, newServer("fetch"))
	attempt := 0
	f.kube.PrependReactor("create", "services", func(core.Action) (bool, runtime.Object, error) {
		attempt++
		return true, nil, apierrors.NewForbidden(corev1.Resource("services"), "mcp-fetch-proxy",
			fmt.Errorf("exceeded quota: q, requested: services=1, used: services=%d, limited: services=1", attempt))
	})
	for i := range 3 {
		acts, err := f.sync("fetch")
		if err == nil {
			t.Fatalf("attempt %d: a refused create must be retried", i)
		}
		if i == 0 {
			assertActions(t, acts[len(acts)-2:], "create services", "patch mcpservers/status")
		} else {
			// The children before the Service exist now; only the
			// Service is tried again, and the status is already right.
			assertActions(t, acts, "create services")
		}
		f.refresh()
	}
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady)
	want := "cannot create services mcp-fetch-proxy: Forbidden; the API server's message is in the events"
	if cond == nil || cond.Reason != thv1.ReasonNotReady || cond.Message != want || got.Status.Message != want {
		t.Fatalf("Ready = %+v, message %q; want reason %s, message %q", cond, got.Status.Message, thv1.ReasonNotReady, want)
	}
	events := f.Events()
	if len(events) != 3 || !strings.Contains(events[2], "used: services=3") {
		t.Errorf("events %q, want one per attempt carrying the API server's message", events)
	}
}

// TestChildWithoutLabelIsReadLiveAndAdopted: a child the cache does not
// hold yet (a kind cached by label, here the Service, or one created a
// moment ago) makes the create fail with AlreadyExists. The child is then
// read from the API server: when its controller reference is this
// server's it is taken back with its labels restored; anything else is a
// conflict, left untouched.
func TestChildWithoutLabelIsReadLiveAndAdopted(t *testing.T) {
	s := newServer("fetch")
	sa := func(refs ...metav1.OwnerReference) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: naming.MCPServerServiceName("fetch"), Namespace: testNS,
			UID: "svc-uid", ResourceVersion: "5", Labels: map[string]string{"kept": "yes"}, OwnerReferences: refs}}
	}
	ours := naming.OwnerRef(s, gvk)
	cases := []struct {
		name  string
		child *corev1.Service
		adopt bool
	}{
		{"ours", sa(ours), true},
		{"no controller", sa(), false},
		{"another owner", sa(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "other", Controller: ptrTrue()}), false},
		{"a previous server of the same name", sa(naming.OwnerRef(newServer("fetch", func(s *thv1.MCPServer) { s.UID = "old-uid" }), gvk)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, s)
			// In the API server, not in the cache.
			if err := f.kube.Tracker().Add(tc.child); err != nil {
				t.Fatal(err)
			}
			requeues := workloadtest.SpyRequeues(f.c.Loop)
			acts, err := f.sync("fetch")
			if !tc.adopt {
				if err != nil || len(requeues.After()) != 1 {
					t.Fatalf("err = %v, requeues %v: want one requeue after a ChildConflict", err, requeues.After())
				}
				assertActions(t, acts, "create serviceaccounts", "create rolebindings", "create serviceaccounts", "create configmaps",
					"create services", "patch mcpservers/status")
				got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
				if cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); cond == nil || cond.Reason != thv1.ReasonNotReady || !strings.Contains(cond.Message, " exists and is ") {
					t.Fatalf("Ready = %+v, want reason %s and the conflict in the message", cond, thv1.ReasonNotReady)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The failed create, the re-labelling patch, then the rest.
			v := workloadtest.Verbs(acts)
			i := slices.Index(v, "create services")
			if i < 0 || i+1 >= len(v) || v[i+1] != "patch services" {
				t.Fatalf("actions %v, want the create then the adopting patch", v)
			}
			body := patchBody(t, acts[i+1])
			md := body["metadata"].(map[string]any)
			labels := md["labels"].(map[string]any)
			if labels[naming.LabelToolhive] != "true" || labels[naming.LabelToolhiveName] != "fetch" {
				t.Errorf("patch does not restore the labels: %v", body)
			}
			if md["resourceVersion"] != "5" {
				t.Errorf("patch is not locked to the live resourceVersion: %v", body)
			}
			if _, refs := md["ownerReferences"]; refs {
				t.Errorf("patch rewrites the owner references of a child already ours: %v", body)
			}
		})
	}
}

// TestChildrenWithoutLabelAreFoundInTheCache: ToolHive's operator labels
// the runner's ServiceAccount and RoleBinding, the pod's ServiceAccount and
// the RunConfig ConfigMap otherwise than toolhive=true (the accounts and
// binding not at all), with the server as their controller, and hivekeeper
// writes the same labels. Their kinds are cached unfiltered, so a sync
// after a switch finds them: no create is sent (nor refused), and nothing
// is written. An unlabelled orphan of a child's name is cached too, as a
// conflict: nothing is written to it, not even a create.
func TestChildrenWithoutLabelAreFoundInTheCache(t *testing.T) {
	ctx := context.Background()
	t.Run("controlled by this server", func(t *testing.T) {
		f := newFixture(t, newServer("fetch"))
		f.converge("fetch")
		// As ToolHive's operator leaves them: its labels, or none.
		for _, c := range []struct {
			name   string
			gvr    k8sschema.GroupVersionResource
			labels map[string]string
		}{
			{naming.ProxyRunnerName("fetch"), corev1.SchemeGroupVersion.WithResource("serviceaccounts"), nil},
			{naming.BackendServiceAccountName("fetch"), corev1.SchemeGroupVersion.WithResource("serviceaccounts"), nil},
			{naming.ProxyRunnerName("fetch"), rbacv1.SchemeGroupVersion.WithResource("rolebindings"), nil},
			{naming.RunConfigName("fetch"), corev1.SchemeGroupVersion.WithResource("configmaps"), naming.RunConfigLabels(thv1.KindMCPServer, "fetch")},
		} {
			obj, err := f.kube.Tracker().Get(c.gvr, testNS, c.name)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := meta.Accessor(obj)
			m.SetLabels(c.labels)
			if err := f.kube.Tracker().Update(c.gvr, obj, testNS); err != nil {
				t.Fatal(err)
			}
		}
		f.refresh()
		acts, err := f.sync("fetch")
		if err != nil {
			t.Fatal(err)
		}
		// Found where ToolHive's operator left them, labelled as hivekeeper
		// labels them: nothing to write.
		assertActions(t, acts)
	})
	t.Run("an unlabelled orphan", func(t *testing.T) {
		orphan := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: naming.ProxyRunnerName("fetch"), Namespace: testNS, UID: "sa-uid"}}
		f := newFixture(t, newServer("fetch"), orphan)
		requeues := workloadtest.SpyRequeues(f.c.Loop)
		acts, err := f.sync("fetch")
		if err != nil || len(requeues.After()) != 1 {
			t.Fatalf("err = %v, requeues %v: want one requeue after a ChildConflict", err, requeues.After())
		}
		assertActions(t, acts, "patch mcpservers/status")
		got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
		if cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); cond == nil || cond.Reason != thv1.ReasonNotReady || !strings.Contains(cond.Message, " exists and is ") {
			t.Fatalf("Ready = %+v, want reason %s and the conflict in the message", cond, thv1.ReasonNotReady)
		}
	})
}

// An older hivekeeper bound the runner to a Role of its own. roleRef is
// immutable, so the binding is deleted (locked to its UID) and created again
// bound to the ClusterRole; the old Role is left alone: hivekeeper holds no
// permission on Roles, and garbage collection removes it with the server.
func TestRunnerBindingToALegacyRoleIsRecreated(t *testing.T) {
	s := newServer("fetch")
	owner := []metav1.OwnerReference{naming.OwnerRef(s, gvk)}
	legacyRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "fetch-proxy-runner", Namespace: testNS,
		Labels: naming.Labels(naming.AppMCPServer, "fetch"), OwnerReferences: owner}}
	legacyBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "fetch-proxy-runner", Namespace: testNS, UID: "legacy-binding",
			Labels: naming.Labels(naming.AppMCPServer, "fetch"), OwnerReferences: owner},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "fetch-proxy-runner"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "fetch-proxy-runner", Namespace: testNS}},
	}
	f := newFixture(t, s, legacyRole, legacyBinding)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) < 2 || workloadtest.Verbs(acts)[1] != "delete rolebindings" {
		t.Fatalf("actions %v, want the runner ServiceAccount created, then the binding deleted", workloadtest.Verbs(acts))
	}
	del := acts[1].(core.DeleteAction)
	if pre := del.GetDeleteOptions().Preconditions; del.GetName() != "fetch-proxy-runner" || pre == nil || pre.UID == nil || *pre.UID != "legacy-binding" {
		t.Errorf("delete %s with preconditions %+v, want the legacy binding's UID", del.GetName(), pre)
	}
	workloadtest.AssertNoActionOn(t, acts, "roles")

	f.applyServerBehaviour()
	f.refresh()
	f.converge("fetch")
	rb, err := f.kube.RbacV1().RoleBindings(testNS).Get(context.Background(), "fetch-proxy-runner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "hivekeeper-stdio-proxy-runner"}); rb.RoleRef != want {
		t.Errorf("roleRef %+v, want %+v", rb.RoleRef, want)
	}
	if _, err := f.kube.RbacV1().Roles(testNS).Get(context.Background(), "fetch-proxy-runner", metav1.GetOptions{}); err != nil {
		t.Errorf("the legacy Role was touched: %v", err)
	}
}

// A server that names another workload's ServiceAccount (here another
// server's proxy runner, which holds the runner's permissions) is refused:
// a condition and one event, and not a single child write, so the running
// Deployment keeps its account. Its own backend account stays allowed.
func TestServiceAccountOfAnotherWorkloadIsRefused(t *testing.T) {
	f := newFixture(t, newServer("fetch"), toolhivetest.ManagedServiceAccount(testNS, "bar-proxy-runner", thv1.KindMCPServer, "bar"))
	f.converge("fetch")
	f.Events()
	ctx := context.Background()
	setSA := func(name string) {
		s, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.ServiceAccount = &name
		if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.refresh()
	}

	setSA("bar-proxy-runner")
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatalf("a refusal is not retried: %v", err)
	}
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	f.AssertRefusedServiceAccount(t, acts, "mcpservers", got.Status.Conditions)
	if got.Status.Phase != thv1.MCPServerPhaseFailed {
		t.Errorf("phase %s", got.Status.Phase)
	}
	f.refresh()
	acts, _ = f.sync("fetch")
	assertActions(t, acts)

	// The account hivekeeper made for this server's own backend, and one
	// hivekeeper does not manage, are fine.
	setSA(naming.BackendServiceAccountName("fetch"))
	acts, _ = f.sync("fetch")
	assertActions(t, acts, "patch mcpservers/status")
	got, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); c.Reason == thv1.ReasonServiceAccountNotAllowed {
		t.Errorf("own backend account refused: %+v", c)
	}
	f.refresh()
	setSA("mine")
	acts, _ = f.sync("fetch")
	assertActions(t, acts, "patch deployments")
}

// A tool config reference is resolved like the OIDC one: missing, the
// server waits with no child written; once the config is there and
// Valid, its filter and overrides are in the RunConfig and its hash in
// status.toolConfigHash.
func TestToolConfigReference(t *testing.T) {
	s := newServer("fetch", func(s *thv1.MCPServer) { s.Spec.ToolConfigRef = &thv1.ToolConfigReference{Name: "curated"} })
	f := newFixture(t, s)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch mcpservers/status")
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionToolConfigValidated); c == nil || c.Reason != thv1.ReasonToolConfigNotFound ||
		got.Status.Phase != thv1.MCPServerPhaseFailed {
		t.Fatalf("status %+v", got.Status)
	}

	cfg := &thv1.MCPToolConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "curated"},
		Spec:       thv1.MCPToolConfigSpec{ToolsFilter: []string{"fetch_url"}, ToolsOverride: map[string]thv1.ToolOverride{"fetch": {Name: "fetch_url"}}},
		Status: thv1.ConfigStatus{ConfigHash: "h1", Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid}}},
	}
	f2 := newFixture(t, s, cfg)
	f2.converge("fetch")
	cm, err := f2.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rc.ToolsFilter, []string{"fetch_url"}) || rc.ToolsOverride["fetch"].Name != "fetch_url" {
		t.Errorf("RunConfig tools: %q %+v", rc.ToolsFilter, rc.ToolsOverride)
	}
	got, _ = f2.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if got.Status.ToolConfigHash != "h1" || !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionToolConfigValidated) {
		t.Errorf("status %+v", got.Status)
	}
}

// What hivekeeper does not act on is never silent: an MCPServer whose
// MCPExternalAuthConfig is of type headerInjection (which ToolHive's
// operator stores and ignores for an MCPServer too) still runs,
// UnsupportedFields names it with one Warning event, a steady state writes
// nothing more, and the condition goes when the reference does.
func TestUnsupportedFieldsAreReported(t *testing.T) {
	s := newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "inject"}
	})
	f := newFixture(t, s, extAuthConfig("inject", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeHeaderInjection,
		HeaderInjection: &thv1.HeaderInjectionConfig{HeaderName: "X-API-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "s", Key: "k"}}}))
	f.converge("fetch")
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionUnsupportedFields)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != thv1.ReasonFieldsNotSupported ||
		!strings.Contains(c.Message, "headerInjection") {
		t.Fatalf("UnsupportedFields: %+v", c)
	}
	if _, err := f.kube.AppsV1().Deployments(testNS).Get(context.Background(), "fetch", metav1.GetOptions{}); err != nil {
		t.Fatalf("the server is still deployed: %v", err)
	}
	if evs := f.Events(); len(evs) != 1 || evs[0] != "Warning "+thv1.ReasonFieldsNotSupported+" "+c.Message {
		t.Fatalf("events: %q", evs)
	}
	if acts, err := f.sync("fetch"); err != nil || len(acts) != 0 || len(f.Events()) != 0 {
		t.Fatalf("steady state: %v %s", err, describe(acts))
	}

	got.Spec.ExternalAuthConfigRef = nil
	got.Generation++
	if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.converge("fetch")
	got, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionUnsupportedFields); c != nil {
		t.Fatalf("UnsupportedFields stayed after the reference went: %+v", c)
	}
}

// An MCPAuthzConfig reference holds the server until the config is valid,
// then its policies reach the RunConfig and its hash the status; an
// inline authorization hivekeeper cannot apply keeps the server from
// running at all.
func TestAuthzConfig(t *testing.T) {
	ref := func(s *thv1.MCPServer) { s.Spec.AuthzConfigRef = &thv1.AuthzConfigReference{Name: "policies"} }
	f := newFixture(t, newServer("fetch", ref))
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch mcpservers/status")
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionAuthzConfigRefValidated); c == nil ||
		c.Reason != thv1.ReasonAuthzConfigRefNotFound || got.Status.Phase != thv1.MCPServerPhaseFailed {
		t.Fatalf("status %+v", got.Status)
	}

	cfg := &thv1.MCPAuthzConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "policies"},
		Spec: thv1.MCPAuthzConfigSpec{Type: thv1.AuthzTypeCedar,
			Config: runtime.RawExtension{Raw: []byte(`{"policies":["permit(principal, action, resource);"]}`)}},
		Status: thv1.ConfigStatus{ConfigHash: "h1", Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid}}},
	}
	f2 := newFixture(t, newServer("fetch", ref), cfg)
	f2.converge("fetch")
	cm, err := f2.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Authz struct {
			Type  string `json:"type"`
			Cedar struct {
				Policies []string `json:"policies"`
			} `json:"cedar"`
		} `json:"authz_config"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if rc.Authz.Type != thv1.AuthzTypeCedar || len(rc.Authz.Cedar.Policies) != 1 {
		t.Errorf("RunConfig authz_config: %+v", rc.Authz)
	}
	got, _ = f2.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if got.Status.AuthzConfigHash != "h1" || !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionAuthzConfigRefValidated) {
		t.Errorf("status %+v", got.Status)
	}

	f3 := newFixture(t, newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap, ConfigMap: &thv1.ConfigMapAuthzRef{Name: "cm"}}
	}))
	acts, err = f3.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch mcpservers/status")
	got, _ = f3.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); c == nil || c.Reason != thv1.ReasonNotReady ||
		c.Message != `Failed to build configuration: failed to create RunConfig from MCPServer: failed to process AuthzConfig: failed to get Authz ConfigMap team-a/cm: ConfigMap "cm" not found` {
		t.Errorf("configMap authorization: %+v", got.Status)
	}
}

// An MCPTelemetryConfig reference holds the server until the config
// exists; then the RunConfig carries telemetry_config (plain headers
// only), the proxy gets the sensitive headers as env from their Secret
// and the CA bundle as a volume, and the status the config's hash. A
// change of the config rolls the proxy once: one ConfigMap and one
// Deployment patch, then nothing.
func TestTelemetryConfig(t *testing.T) {
	ref := func(s *thv1.MCPServer) {
		s.Spec.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "otel", ServiceName: "fetch-svc"}
	}
	f := newFixture(t, newServer("fetch", ref))
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch mcpservers/status")
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionTelemetryConfigRefValidated); c == nil ||
		c.Reason != thv1.ReasonTelemetryConfigRefNotFound || got.Status.Phase != thv1.MCPServerPhaseFailed {
		t.Fatalf("status %+v", got.Status)
	}

	cfg := toolhivetest.NewTelemetryConfig(testNS, "otel", "otel", "collector-ca")
	f = newFixture(t, newServer("fetch", ref), cfg)
	f.converge("fetch")
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Telemetry schema.TelemetryConfig `json:"telemetry_config"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	want := schema.TelemetryConfig{Endpoint: "collector.monitoring:4318", ServiceName: "fetch-svc", TracingEnabled: true,
		MetricsEnabled: true, SamplingRate: "0.25", Headers: map[string]string{"X-Tenant": "team-a"},
		CustomAttributes: map[string]string{"deployment.environment": "test"}, UseLegacyAttributes: true,
		CACertPath: "/config/certs/otel/collector-ca/ca.crt"}
	if !reflect.DeepEqual(rc.Telemetry, want) {
		t.Errorf("telemetry_config\n got %+v\nwant %+v", rc.Telemetry, want)
	}
	if strings.Contains(cm.Data[schema.Key], "otel-auth") || strings.Contains(cm.Data[schema.Key], "Authorization") {
		t.Errorf("a sensitive header reached the RunConfig: %s", cm.Data[schema.Key])
	}
	dep, _ := f.kube.AppsV1().Deployments(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	pod := dep.Spec.Template.Spec
	env := map[string]corev1.EnvVar{}
	for _, e := range pod.Containers[0].Env {
		env[e.Name] = e
	}
	if e := env["TOOLHIVE_OTEL_HEADER_X_API_KEY"]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
		e.ValueFrom.SecretKeyRef.Name != "otel-auth" || e.ValueFrom.SecretKeyRef.Key != "key" || e.Value != "" {
		t.Errorf("sensitive header env: %+v", e)
	}
	if e := env[wiring.EnvOTelResourceAttributes]; e.Value != "service.name=fetch-svc,service.namespace="+testNS {
		t.Errorf("%s = %q", wiring.EnvOTelResourceAttributes, e.Value)
	}
	var mounted bool
	for _, m := range pod.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == "otel-ca-bundle-collector-ca" && m.MountPath == "/config/certs/otel/collector-ca" && m.ReadOnly)
	}
	if !mounted || pod.Volumes[len(pod.Volumes)-1].Name != "otel-ca-bundle-collector-ca" {
		t.Errorf("CA bundle: volumes %+v mounts %+v", pod.Volumes, pod.Containers[0].VolumeMounts)
	}
	got, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if got.Status.TelemetryConfigHash != "hash-otel" || !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionTelemetryConfigRefValidated) {
		t.Errorf("status %+v", got.Status)
	}

	// The config changes: its controller writes the new hash with it.
	rollsOnce(t, f, "fetch", func() {
		cfg, _ := f.th.ToolhiveV1beta1().MCPTelemetryConfigs(testNS).Get(context.Background(), "otel", metav1.GetOptions{})
		cfg.Spec.OpenTelemetry.Tracing.SamplingRate = "1.0"
		cfg.Status.ConfigHash = "hash-otel-2"
		if _, err := f.th.ToolhiveV1beta1().MCPTelemetryConfigs(testNS).Update(context.Background(), cfg, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	// The reference goes: telemetry_config, the env and the volume go
	// with it, and so do the condition and the hash.
	got, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	got.Spec.TelemetryConfigRef = nil
	got.Generation++
	if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.converge("fetch")
	dep, _ = f.kube.AppsV1().Deployments(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	cm, _ = f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	got, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if strings.Contains(cm.Data[schema.Key], "telemetry_config") || strings.Contains(describeObj(dep), "otel") ||
		got.Status.TelemetryConfigHash != "" || meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionTelemetryConfigRefValidated) != nil {
		t.Errorf("telemetry left behind: %s\n%+v", describeObj(dep), got.Status)
	}
}

func describeObj(o any) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// An MCPWebhookConfig reference holds the server until the config exists
// and is valid, with the reason in WebhookConfigValidated, Ready and one
// Warning event, and no child written. Then the RunConfig carries the
// webhooks with file paths only, the proxy mounts each Secret key there,
// and the status has the config's hash. A change of the config rolls the
// proxy once: one ConfigMap and one Deployment patch, then nothing.
func TestWebhookConfig(t *testing.T) {
	ref := func(s *thv1.MCPServer) { s.Spec.WebhookConfigRef = &thv1.WebhookConfigReference{Name: "hooks"} }
	invalid := toolhivetest.NewWebhookConfig(testNS, "hooks", "full")
	invalid.Status.Conditions[0].Status, invalid.Status.Conditions[0].Reason = metav1.ConditionFalse, thv1.ReasonConfigInvalid
	invalid.Status.Conditions[0].Message = "spec.validating[0].url: must use https"
	for _, tc := range []struct {
		name   string
		cfg    *thv1.MCPWebhookConfig
		reason string
	}{{"missing", nil, thv1.ReasonWebhookConfigNotFound}, {"invalid", invalid, thv1.ReasonWebhookConfigInvalid}} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{newServer("fetch", ref)}
			if tc.cfg != nil {
				objs = append(objs, tc.cfg)
			}
			f := newFixture(t, objs...)
			acts, err := f.sync("fetch")
			if err != nil {
				t.Fatal(err)
			}
			assertActions(t, acts, "patch mcpservers/status")
			got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionWebhookConfigValidated)
			ready := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, "hooks") ||
				ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != thv1.ReasonNotReady ||
				got.Status.Phase != thv1.MCPServerPhaseFailed || got.Status.WebhookConfigHash != "" {
				t.Fatalf("status %+v", got.Status)
			}
			if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+tc.reason+" ") {
				t.Errorf("events %q", evs)
			}
			f.refresh()
			if acts, _ := f.sync("fetch"); len(acts) != 0 || len(f.Events()) != 0 {
				t.Errorf("second sync: %s", describe(acts))
			}
		})
	}

	// A config whose status still says valid while its new spec is not
	// (its controller has not seen the change yet) deploys nothing either.
	stale := toolhivetest.NewWebhookConfig(testNS, "hooks", "insecure")
	stale.Spec.Validating[0].TLSConfig = nil
	f := newFixture(t, newServer("fetch", ref), stale)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionWebhookConfigValidated); c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != thv1.ReasonWebhookConfigInvalid || !strings.Contains(c.Message, "must use https") ||
		slices.ContainsFunc(acts, func(a core.Action) bool { return a.GetVerb() == "create" }) {
		t.Fatalf("stale status: %s\n%+v", describe(acts), got.Status)
	}

	f = newFixture(t, newServer("fetch", ref), toolhivetest.NewWebhookConfig(testNS, "hooks", "full"))
	f.converge("fetch")
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Validating []schema.WebhookConfig `json:"validating_webhooks"`
		Mutating   []schema.WebhookConfig `json:"mutating_webhooks"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if len(rc.Validating) != 1 || rc.Validating[0].Name != "policy" || rc.Validating[0].Timeout != 5e9 || rc.Validating[0].FailurePolicy != "ignore" ||
		rc.Validating[0].TLSConfig == nil || rc.Validating[0].TLSConfig.ClientKeyPath == "" ||
		len(rc.Mutating) != 1 || rc.Mutating[0].Name != "redact" || rc.Mutating[0].FailurePolicy != "fail" {
		t.Fatalf("webhooks in the RunConfig: %s", cm.Data[schema.Key])
	}
	if strings.Contains(cm.Data[schema.Key], "webhook-hmac") || strings.Contains(cm.Data[schema.Key], "webhook-tls") {
		t.Errorf("a Secret's name reached the RunConfig: %s", cm.Data[schema.Key])
	}
	dep, _ := f.kube.AppsV1().Deployments(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	pod := dep.Spec.Template.Spec
	mounted := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				mounted[m.MountPath] = v.Secret.SecretName + "/" + v.Secret.Items[0].Key
			}
		}
	}
	for path, want := range map[string]string{
		rc.Validating[0].HMACSecretRef: "webhook-hmac/key", rc.Mutating[0].HMACSecretRef: "webhook-hmac/key",
		rc.Validating[0].TLSConfig.CABundlePath: "webhook-tls/ca.crt", rc.Validating[0].TLSConfig.ClientCertPath: "webhook-tls/tls.crt",
		rc.Validating[0].TLSConfig.ClientKeyPath: "webhook-tls/tls.key",
	} {
		if mounted[path] != want {
			t.Errorf("%s mounts %q, want %q (mounts %v)", path, mounted[path], want, mounted)
		}
	}
	got, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if got.Status.WebhookConfigHash != "hash-hooks" || !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionWebhookConfigValidated) ||
		meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionUnsupportedFields) != nil {
		t.Errorf("status %+v", got.Status)
	}

	// The config changes: its controller writes the new hash with it.
	rollsOnce(t, f, "fetch", func() {
		cfg, _ := f.th.ToolhiveV1beta1().MCPWebhookConfigs(testNS).Get(context.Background(), "hooks", metav1.GetOptions{})
		cfg.Spec.Validating[0].FailurePolicy = thv1.WebhookFailurePolicyFail
		cfg.Status.ConfigHash = "hash-hooks-2"
		if _, err := f.th.ToolhiveV1beta1().MCPWebhookConfigs(testNS).Update(context.Background(), cfg, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	// The reference goes: the webhooks, their volumes, the condition and
	// the hash go with it.
	got, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	got.Spec.WebhookConfigRef = nil
	got.Generation++
	if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.converge("fetch")
	dep, _ = f.kube.AppsV1().Deployments(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	cm, _ = f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	got, _ = f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if strings.Contains(cm.Data[schema.Key], "webhooks") || strings.Contains(describeObj(dep), wiring.WebhookVolumePrefix) ||
		got.Status.WebhookConfigHash != "" || meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionWebhookConfigValidated) != nil {
		t.Errorf("webhooks left behind: %s\n%+v", describeObj(dep), got.Status)
	}
}

// rollsOnce applies change (a referenced config's new spec and hash, as
// its controller would write them) and checks that server rolls exactly
// once: one RunConfig patch, one Deployment patch with a new checksum,
// one status patch, and nothing on the next sync.
func rollsOnce(t *testing.T, f *fixture, server string, change func()) {
	t.Helper()
	dep, _ := f.kube.AppsV1().Deployments(testNS).Get(context.Background(), server, metav1.GetOptions{})
	checksum := dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
	change()
	f.refresh()
	acts, err := f.sync(server)
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch configmaps", "patch deployments", "patch mcpservers/status")
	f.applyServerBehaviour()
	f.refresh()
	dep, _ = f.kube.AppsV1().Deployments(testNS).Get(context.Background(), server, metav1.GetOptions{})
	if dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == checksum {
		t.Error("the RunConfig changed but the pod template's checksum did not")
	}
	acts, _ = f.sync(server)
	assertActions(t, acts)
}

// Inline authorization is also written where ToolHive's operator writes
// it: ConfigMap <name>-authz-inline, mounted at /etc/toolhive/authz.
// Turning it off removes the mount and, once the Deployment no longer
// mounts it, the ConfigMap; then nothing more is written.
func TestInlineAuthzConfigMap(t *testing.T) {
	inline := func(s *thv1.MCPServer) {
		s.Spec.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline,
			Inline: &thv1.InlineCedar{Policies: []string{`permit(principal, action, resource);`}}}
	}
	f := newFixture(t, newServer("fetch", inline))
	f.converge("fetch")
	ctx := context.Background()
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(ctx, naming.AuthzInlineName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["authz.json"]; got != `{"cedar":{"entities_json":"[]","policies":["permit(principal, action, resource);"]},"type":"cedarv1","version":"1.0"}` {
		t.Errorf("authz.json %s", got)
	}
	if cm.Labels[wiring.LabelAuthz] != "inline" || cm.Labels[naming.LabelInstance] != "fetch" {
		t.Errorf("labels %v", cm.Labels)
	}
	dep, _ := f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if !slices.ContainsFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.ConfigMap != nil && v.ConfigMap.Name == naming.AuthzInlineName("fetch")
	}) {
		t.Errorf("volumes %v", dep.Spec.Template.Spec.Volumes)
	}

	s, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	s.Spec.AuthzConfig = nil
	s.Generation++
	if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch configmaps", "patch deployments", "delete configmaps", "patch mcpservers/status")
	f.converge("fetch")
	if _, err := f.kube.CoreV1().ConfigMaps(testNS).Get(ctx, naming.AuthzInlineName("fetch"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the inline authorization ConfigMap stayed: %v", err)
	}
}
