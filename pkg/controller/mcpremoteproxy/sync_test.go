package mcpremoteproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	thschema "github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

func TestCreateThenSteadyStateMakesNoWrites(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp"}
		p.Spec.ResourceOverrides = toolhivetest.RemoteProxyOverrides["pod-template-and-service"]
		p.Spec.GroupRef = &thv1.GroupRef{Name: "tools"}
	})
	f := newFixture(t, p, newOIDCConfig("auth", true, true), toolhivetest.NewGroup(testNS, "tools"))
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts,
		"create serviceaccounts", "create rolebindings",
		"create configmaps", "create services", "create deployments", "patch mcpremoteproxies/status")
	wt.AssertNoActionOn(t, acts, "mcpoidcconfigs")
	wt.AssertNoActionOn(t, acts, "mcpgroups")

	// The server defaults everything, other controllers annotate; the next
	// rounds write nothing at all.
	f.ApplyServerBehaviour()
	f.Refresh()
	before := testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues(Name, "deployments"))
	for i := range 3 {
		acts, err = f.sync("remote")
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) != 0 {
			t.Fatalf("round %d of a converged proxy wrote: %s", i, wt.Describe(acts))
		}
	}
	if after := testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues(Name, "deployments")); after != before {
		t.Errorf("churn moved at steady state: %v -> %v", before, after)
	}
}

func TestCustomServiceAccountCreatesNoRBAC(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.ServiceAccount = ptr.To("mine") })
	f := newFixture(t, p)
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create configmaps", "create services", "create deployments", "patch mcpremoteproxies/status")
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa := dep.Spec.Template.Spec.ServiceAccountName; sa != "mine" {
		t.Errorf("serviceAccountName = %q, want the spec's", sa)
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts)
}

// Naming an own account later removes the runner RBAC hivekeeper created,
// after the Deployment moved off it, and then converges.
func TestSwitchToCustomServiceAccountDeletesRunnerRBAC(t *testing.T) {
	p := newProxy("remote")
	f := newFixture(t, p)
	f.converge("remote")
	f.update("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.ServiceAccount = ptr.To("mine") })
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch deployments", "delete rolebindings", "delete serviceaccounts")
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts)
}

func TestChildrenShape(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.Transport = thv1.TransportSSE
		p.Spec.ProxyPort = 9090
		p.Spec.RemoteURL = "https://remote.example.com/sse"
		p.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp", ResourceURL: "https://mcp.example.com"}
		p.Spec.ResourceOverrides = toolhivetest.RemoteProxyOverrides["conflicting-operator-keys"]
	})
	f := newFixture(t, p, newOIDCConfig("auth", true, true))
	f.converge("remote")
	ctx := context.Background()

	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, "remote-runconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc map[string]any
	if err := json.Unmarshal([]byte(cm.Data[thschema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if rc["remote_url"] != "https://remote.example.com/sse" || rc["transport"] != "sse" || rc["port"] != 9090.0 || rc["host"] != "0.0.0.0" {
		t.Errorf("runconfig %v", rc)
	}
	for _, absent := range []string{"mcpserver_generation", "target_port"} {
		if _, ok := rc[absent]; ok {
			t.Errorf("runconfig has %s: %v", absent, rc)
		}
	}
	// ToolHive's runner.RunConfig always writes its image, "" for a remote.
	if img, ok := rc["image"]; !ok || img != "" {
		t.Errorf("runconfig image %v, want \"\"", img)
	}
	// ToolHive's token validator config has no JSON tags: Go field names.
	if oidc, _ := rc["oidc_config"].(map[string]any); oidc["CACertPath"] != "/config/certs/idp-ca/ca.crt" || oidc["ResourceURL"] != "https://mcp.example.com" ||
		rc["thv_ca_bundle"] != "/config/certs/idp-ca/ca.crt" || rc["container_name"] != rc["name"] || rc["base_name"] != rc["name"] {
		t.Errorf("oidc_config %v", oidc)
	}
	if strings.Contains(cm.Data[thschema.Key], "secret") {
		t.Errorf("a secret reached the ConfigMap: %s", cm.Data[thschema.Key])
	}

	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "remote", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tpl := dep.Spec.Template
	if tpl.Annotations[naming.AnnotationRunConfigChecksum] != cm.Annotations[thschema.ChecksumAnnotation] {
		t.Errorf("template annotations %v lost the checksum", tpl.Annotations)
	}
	if _, ok := tpl.Annotations["toolhive.stacklok.dev/mcpserver-generation"]; ok {
		t.Errorf("a remote proxy has no generation annotation: %v", tpl.Annotations)
	}
	if tpl.Labels[naming.LabelInstance] != "remote" || dep.Labels[naming.LabelApp] != naming.AppMCPRemoteProxy {
		t.Errorf("operator keys did not win: %v / %v", tpl.Labels, dep.Labels)
	}
	c := tpl.Spec.Containers[0]
	if c.Name != naming.ProxyContainerName || c.Image != "runner:test" || !slices.Equal(c.Args, []string{"run", "--foreground=true", "placeholder-for-remote-proxy"}) {
		t.Errorf("container %s %s %v", c.Name, c.Image, c.Args)
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	if want := "TOOLHIVE_OIDC_CLIENT_SECRET,HOME,XDG_CONFIG_HOME,TOOLHIVE_RUNTIME,UNSTRUCTURED_LOGS"; strings.Join(env, ",") != want {
		t.Errorf("env %v, want %s", env, want)
	}
	if tpl.Spec.ServiceAccountName != "remote-remote-proxy-runner" {
		t.Errorf("serviceAccountName %s", tpl.Spec.ServiceAccountName)
	}
	rb, err := f.Kube.RbacV1().RoleBindings(testNS).Get(ctx, "remote-remote-proxy-runner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.DefaultRemoteProxyRunnerClusterRole}
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "remote-remote-proxy-runner", Namespace: testNS}}
	if rb.RoleRef != wantRef || !slices.Equal(rb.Subjects, wantSubjects) {
		t.Errorf("runner binding %+v to %+v, want %+v to %+v", rb.RoleRef, rb.Subjects, wantRef, wantSubjects)
	}
	svc, err := f.Kube.CoreV1().Services(testNS).Get(ctx, "mcp-remote-remote-proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Ports[0].Port != 9090 || svc.Spec.Ports[0].TargetPort.IntVal != 9090 || svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		t.Errorf("service %+v", svc.Spec)
	}

	got := f.get("remote")
	if got.Status.URL != "http://mcp-remote-remote-proxy.team-a.svc.cluster.local:9090/sse" || got.Status.OIDCConfigHash != "hash-auth" ||
		got.Status.Phase != thv1.MCPRemoteProxyPhasePending || got.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", got.Status)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionOIDCConfigRefValidated) ||
		meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionGroupRefValidated) != nil {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}
}

func TestStreamableHTTPURL(t *testing.T) {
	if got := naming.RemoteProxyURL(newProxy("r")); got != "http://mcp-r-remote-proxy.team-a.svc.cluster.local:8080/mcp" {
		t.Fatalf("url %s", got)
	}
}

func TestOIDCReferenceMissingBlocksChildrenAndReportsOnce(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "nope", Audience: "a"}
	})
	f := newFixture(t, p)
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	got := f.get("remote")
	if cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionOIDCConfigRefValidated); cond == nil || cond.Reason != thv1.ReasonOIDCConfigRefNotFound {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	if got.Status.Phase != thv1.MCPRemoteProxyPhaseFailed {
		t.Errorf("phase %s", got.Status.Phase)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonOIDCConfigRefNotFound) {
		t.Fatalf("events %v", evs)
	}
	f.Refresh()
	acts, _ = f.sync("remote")
	if len(acts) != 0 || len(f.Events()) != 0 {
		t.Fatalf("second sync: %s", wt.Describe(acts))
	}

	f2 := newFixture(t, p, newOIDCConfig("nope", true, false))
	_, _ = f2.sync("remote")
	got = f2.get("remote")
	if cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionOIDCConfigRefValidated); cond == nil || cond.Reason != thv1.ReasonOIDCConfigRefNotValid {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
}

// A missing group is reported but does not hold the proxy back.
func TestMissingGroupIsReportedAndServed(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.GroupRef = &thv1.GroupRef{Name: "later"} })
	f := newFixture(t, p)
	f.converge("remote")
	got := f.get("remote")
	cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionGroupRefValidated)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != thv1.ReasonGroupRefNotFound {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	if _, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{}); err != nil {
		t.Fatalf("proxy not deployed while its group is missing: %v", err)
	}

	if _, err := f.Toolhive.ToolhiveV1beta1().MCPGroups(testNS).Create(context.Background(), toolhivetest.NewGroup(testNS, "later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ := f.sync("remote")
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	if !meta.IsStatusConditionTrue(f.get("remote").Status.Conditions, thv1.ConditionGroupRefValidated) {
		t.Fatalf("GroupRefValidated not True once the group exists")
	}
}

func TestInvalidResourcesAreAConditionNotARetry(t *testing.T) {
	p := newProxy("bad", func(p *thv1.MCPRemoteProxy) { p.Spec.Resources.Limits.CPU = "lots" })
	f := newFixture(t, p)
	acts, err := f.sync("bad")
	if err != nil {
		t.Fatalf("invalid input must not be retried: %v", err)
	}
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	got := f.get("bad")
	cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady)
	if cond == nil || cond.Reason != thv1.ReasonInvalidSpec || !strings.Contains(cond.Message, "spec.resources.limits.cpu") || got.Status.Phase != thv1.MCPRemoteProxyPhaseFailed {
		t.Fatalf("status %+v", got.Status)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonInvalidSpec) {
		t.Fatalf("events %v", evs)
	}
	f.Refresh()
	acts, err = f.sync("bad")
	if err != nil || len(acts) != 0 || len(f.Events()) != 0 {
		t.Fatalf("second sync: err %v actions %s", err, wt.Describe(acts))
	}
}

// An object held by someone else's finalizer only reports Terminating; its
// children are left to garbage collection.
func TestDeletingProxyReportsTerminatingOnly(t *testing.T) {
	p := newProxy("remote")
	f := newFixture(t, p)
	f.converge("remote")
	live := f.get("remote").DeepCopy()
	now := metav1.NewTime(toolhivetest.Now)
	live.DeletionTimestamp = &now
	live.Finalizers = []string{"example.com/hold"}
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(testNS).Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	if got := f.get("remote"); got.Status.Phase != thv1.MCPRemoteProxyPhaseTerminating {
		t.Fatalf("phase %s", got.Status.Phase)
	}
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts)
}

func TestDriftIsRepairedOnceAndCounted(t *testing.T) {
	f := newFixture(t, newProxy("remote"))
	f.converge("remote")
	ctx := context.Background()
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "remote", metav1.GetOptions{})
	dep = dep.DeepCopy()
	dep.Spec.Template.Spec.Containers[0].Args = []string{"run", "https://evil.example.com"}
	dep.Labels["team"] = "someone-else"
	// Foreign annotations on the Deployment and on its pod template (a
	// tool's note, `kubectl rollout restart`) survive the repair too.
	dep.Annotations = map[string]string{"owner.example.com/ticket": "OPS-1"}
	if dep.Spec.Template.Annotations == nil {
		dep.Spec.Template.Annotations = map[string]string{}
	}
	dep.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-26T00:00:00Z"
	if _, err := f.Kube.AppsV1().Deployments(testNS).Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	before := testutil.ToFloat64(metrics.DriftDetections.WithLabelValues(Name, "deployments", drift.FieldContainerArgs))
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch deployments")
	if after := testutil.ToFloat64(metrics.DriftDetections.WithLabelValues(Name, "deployments", drift.FieldContainerArgs)); after != before+1 {
		t.Errorf("drift counter %v -> %v", before, after)
	}
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts)
	dep, _ = f.Kube.AppsV1().Deployments(testNS).Get(ctx, "remote", metav1.GetOptions{})
	if dep.Labels["team"] != "someone-else" || dep.Spec.Template.Spec.Containers[0].Args[1] != "--foreground=true" {
		t.Errorf("repair lost a foreign label or kept the drift: %v %v", dep.Labels, dep.Spec.Template.Spec.Containers[0].Args)
	}
	if dep.Annotations["owner.example.com/ticket"] != "OPS-1" || dep.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("repair lost a foreign annotation: %v, template %v", dep.Annotations, dep.Spec.Template.Annotations)
	}
}

func TestChildOfAnotherControllerIsNotAdopted(t *testing.T) {
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "remote-runconfig", Namespace: testNS,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "other", Controller: ptr.To(true)}}}}
	f := newFixture(t, newProxy("remote"), other)
	requeues := wt.SpyRequeues(f.c.Loop)
	if _, err := f.sync("remote"); err != nil || len(requeues.After()) != 1 {
		t.Fatalf("err = %v, requeues %v: want a requeue for the conflict", err, requeues.After())
	}
	for _, a := range f.Writes() {
		if a.GetResource().Resource == "configmaps" {
			t.Fatalf("wrote to a foreign child: %s", wt.Describe(f.Writes()))
		}
	}
	if cond := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionReady); cond == nil || cond.Reason != thv1.ReasonChildConflict {
		t.Fatalf("Ready %+v", cond)
	}
}

func TestDeletedProxyIsANoOp(t *testing.T) {
	f := newFixture(t)
	acts, err := f.sync("gone")
	if err != nil || len(acts) != 0 {
		t.Fatalf("err %v actions %s", err, wt.Describe(acts))
	}
}

// A status patch that races the object's deletion is not an error to
// retry.
func TestStatusPatchNotFoundIsNotRetried(t *testing.T) {
	f := newFixture(t, newProxy("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.Resources.Limits.CPU = "lots" }))
	f.Toolhive.PrependReactor("patch", "mcpremoteproxies", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(thv1.Resource("mcpremoteproxies"), "remote")
	})
	if _, err := f.sync("remote"); err != nil {
		t.Fatalf("err %v", err)
	}
}

// OIDC config updates re-sync the referrers only when something they
// consume changed; the config controller's bookkeeping does not.
func TestOIDCConfigUpdatesEnqueueReferrersOnlyWhenRelevant(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "a"}
	})
	unrelated := newProxy("other")
	cfg := newOIDCConfig("auth", true, true)
	f := newFixture(t, p, unrelated, cfg)

	bookkeeping := cfg.DeepCopy()
	bookkeeping.Status.ReferenceCount = 1
	bookkeeping.Status.ReferencingWorkloads = []thv1.WorkloadReference{{Kind: thv1.KindMCPRemoteProxy, Name: "remote"}}
	if workload.OIDCConfigs.ChangeMatters(cfg, bookkeeping) {
		t.Fatal("referencingWorkloads bookkeeping counts as a relevant change")
	}
	changed := cfg.DeepCopy()
	changed.Spec.Inline.Issuer = "https://other.example.com"
	if workload.OIDCConfigs.ChangeMatters(cfg, changed) {
		t.Fatal("a spec change the config's controller has not validated yet is relevant")
	}
	validated := changed.DeepCopy()
	validated.Status.ConfigHash = "validated-" + cfg.Status.ConfigHash
	if !workload.OIDCConfigs.ChangeMatters(changed, validated) {
		t.Fatal("the validated spec's new hash is not relevant")
	}
	changed = validated
	workload.EnqueueReferrers(f.ToolhiveInformers.Toolhive().V1beta1().MCPRemoteProxies().Informer().GetIndexer(), index.ByOIDCConfig, changed, f.c.EnqueueKey)
	if n := f.c.Queue.Len(); n != 1 {
		t.Fatalf("queue length %d, want the one referrer", n)
	}
	key, _ := f.c.Queue.Get()
	if key.String() != testNS+"/remote" {
		t.Fatalf("enqueued %s", key)
	}
	f.c.Queue.Done(key)
}

// A remote proxy naming a runner account hivekeeper manages (another
// MCPServer's, which may attach to pods) is refused with a condition and
// one event; the running Deployment is not touched.
func TestServiceAccountOfAnotherWorkloadIsRefused(t *testing.T) {
	f := newFixture(t, newProxy("remote"), toolhivetest.ManagedServiceAccount(testNS, "fetch-proxy-runner", thv1.KindMCPServer, "fetch"))
	f.converge("remote")
	f.Events()
	f.update("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.ServiceAccount = ptr.To("fetch-proxy-runner") })
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatalf("a refusal is not retried: %v", err)
	}
	f.AssertRefusedServiceAccount(t, acts, "mcpremoteproxies", f.get("remote").Status.Conditions)
}

// A child write the API server refuses is reported as MCPServer reports
// it: Ready=False ChildWriteFailed naming the child and the kind of
// refusal (never the API server's message, which may change per attempt),
// one event carrying the message, and an error so the key backs off.
func TestRefusedChildWriteIsAConditionAndARetry(t *testing.T) {
	f := newFixture(t, newProxy("remote"))
	f.Kube.PrependReactor("create", "services", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("services"), "mcp-remote-remote-proxy", errors.New("exceeded quota: used=7"))
	})
	if _, err := f.sync("remote"); err == nil {
		t.Fatal("a refused create must be retried")
	}
	c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionReady)
	want := "cannot create services mcp-remote-remote-proxy: Forbidden; the API server's message is in the events"
	if c == nil || c.Reason != thv1.ReasonChildWriteFailed || c.Message != want {
		t.Fatalf("Ready = %+v, want %s %q", c, thv1.ReasonChildWriteFailed, want)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.Contains(evs[0], "used=7") {
		t.Errorf("events %q, want one carrying the API server's message", evs)
	}
}

// A child that changed between the cache read and the patch (409
// Conflict, often the controller's own previous write not yet in its
// cache) is optimistic locking at work, not a failure: the key is retried
// and neither the status nor an event says anything.
func TestChildConflictIsASilentRetry(t *testing.T) {
	f := newFixture(t, newProxy("remote"))
	f.converge("remote")
	f.update("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.RemoteURL = "https://mcp.example.com/other" })
	f.Kube.PrependReactor("patch", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "remote", errors.New("the object has been modified"))
	})
	before := f.get("remote").Status
	acts, err := f.sync("remote")
	if !apierrors.IsConflict(err) {
		t.Fatalf("sync: %v, want the conflict back so the key is retried", err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	if got := f.get("remote").Status; !equality.Semantic.DeepEqual(got, before) {
		t.Errorf("status changed on a conflict: %+v", got)
	}
	if evs := f.Events(); len(evs) != 0 {
		t.Errorf("events %q on a conflict", evs)
	}
}

// A remote proxy's telemetry is an MCPServer's: an invalid config holds
// it with ToolHive's reason; a valid one (Prometheus only here) reaches
// the RunConfig under the proxy's name as service name, the header env
// and CA bundle of the OTLP option the proxy Deployment, and the hash the
// status; a second sync writes nothing.
func TestTelemetryConfig(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "otel"}
	})
	invalid := toolhivetest.NewTelemetryConfig(testNS, "otel", "prometheus", "")
	invalid.Status.Conditions[0].Status = metav1.ConditionFalse
	f := newFixture(t, p, invalid)
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	got := f.get("remote")
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionTelemetryConfigRefValidated); c == nil ||
		c.Reason != thv1.ReasonTelemetryConfigRefInvalid || got.Status.Phase != thv1.MCPRemoteProxyPhaseFailed {
		t.Fatalf("status %+v", got.Status)
	}

	for option, want := range map[string]string{
		"prometheus": `{"serviceName":"remote","tracingEnabled":false,"metricsEnabled":false,"enablePrometheusMetricsPath":true,"useLegacyAttributes":false}`,
		"otel":       `"caCertPath":"/config/certs/otel/collector-ca/ca.crt"}`,
	} {
		f := newFixture(t, p, toolhivetest.NewTelemetryConfig(testNS, "otel", option, "collector-ca"))
		f.converge("remote")
		cm, _ := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("remote"), metav1.GetOptions{})
		var rc struct {
			Telemetry json.RawMessage `json:"telemetry_config"`
		}
		if err := json.Unmarshal([]byte(cm.Data[thschema.Key]), &rc); err != nil {
			t.Fatal(err)
		}
		if compact := compactJSON(t, rc.Telemetry); !strings.HasSuffix(compact, want) {
			t.Errorf("%s: telemetry_config %s, want it to end with %s", option, compact, want)
		}
		dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{})
		var names []string
		for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
			names = append(names, e.Name)
		}
		hasCA := slices.ContainsFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "otel-ca-bundle-collector-ca" })
		// No telemetry env on a remote proxy, as ToolHive's operator sets
		// none (its runner reads none); the CA bundle is mounted.
		if slices.Contains(names, "TOOLHIVE_OTEL_HEADER_AUTHORIZATION") || hasCA != (option == "otel") ||
			slices.Contains(names, wiring.EnvOTelResourceAttributes) {
			t.Errorf("%s: env %q, CA volume %v", option, names, hasCA)
		}
		if got := f.get("remote"); got.Status.TelemetryConfigHash != "hash-otel" {
			t.Errorf("%s: status %+v", option, got.Status)
		}
		acts, _ := f.sync("remote")
		wt.AssertActions(t, acts)
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
