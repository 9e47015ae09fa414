package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

var serversGVR = thv1.SchemeGroupVersion.WithResource("mcpservers")

// settle bounds each wait for hivekeeper to follow a change: well under a
// second on a quiet machine; the bound only ends a wait that will never
// succeed, so a busy machine does not fail a test that is right.
const settle = 2 * time.Minute

// settled waits until the MCPServer controller has written nothing for a
// while (its last status patch follows the Deployment's creation), so that
// a snapshot taken next is of the converged state.
func settled(t *testing.T) {
	t.Helper()
	workloadtest.Quiesce(t, 2*time.Second, settle, mcpserver.Name)
}

// counter sums a hivekeeper counter over the series whose labels match.
func counter(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, match) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func labelsMatch(m *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func mcpWrites(t *testing.T) float64 {
	return counter(t, "hivekeeper_writes_total", map[string]string{"controller": mcpserver.Name})
}

func newServerObj(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": thv1.SchemeGroupVersion.String(),
		"kind":       thv1.KindMCPServer,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"image":     "ghcr.io/example/fetch:1.0",
			"transport": "streamable-http",
			"env":       []any{map[string]any{"name": "LOG_LEVEL", "value": "debug"}},
			"resourceOverrides": map[string]any{"proxyDeployment": map[string]any{
				"annotations": map[string]any{"owner": "platform"},
				"podTemplateMetadataOverrides": map[string]any{
					"annotations": map[string]any{"vault.hashicorp.com/agent-inject": "true"},
				},
			}},
			// A field hivekeeper does not model.
			"telemetry": map[string]any{"openTelemetry": map[string]any{"enabled": true}},
		},
	}}
}

type childRVs map[string]string

func snapshot(t *testing.T, env *framework.Env, ns, name string) childRVs {
	t.Helper()
	ctx := context.Background()
	out := childRVs{}
	get := func(kind string, obj metav1.Object, err error) {
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		out[kind+"/"+obj.GetName()] = obj.GetResourceVersion()
	}
	s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, name, metav1.GetOptions{})
	get("mcpserver", s, err)
	cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name+"-runconfig", metav1.GetOptions{})
	get("configmap", cm, err)
	sa, err := env.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, name+"-proxy-runner", metav1.GetOptions{})
	get("serviceaccount", sa, err)
	bsa, err := env.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, name+"-sa", metav1.GetOptions{})
	get("serviceaccount", bsa, err)
	rb, err := env.Kube.RbacV1().RoleBindings(ns).Get(ctx, name+"-proxy-runner", metav1.GetOptions{})
	get("rolebinding", rb, err)
	dep, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	get("deployment", dep, err)
	svc, err := env.Kube.CoreV1().Services(ns).Get(ctx, "mcp-"+name+"-proxy", metav1.GetOptions{})
	get("service", svc, err)
	return out
}

// convergedServer starts the controllers on a namespace of its own,
// creates MCPServer name there and waits until it converged.
func convergedServer(t *testing.T, name string) (*framework.Env, string) {
	t.Helper()
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(context.Background(), newServerObj(ns, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, name)
	return env, ns
}

func waitConverged(t *testing.T, env *framework.Env, ns, name string) *thv1.MCPServer {
	t.Helper()
	var s *thv1.MCPServer
	framework.Eventually(t, settle, func() (bool, error) {
		var err error
		s, err = env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, err = env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && s.Status.ObservedGeneration == s.Generation && s.Status.URL != "", nil
	}, "MCPServer %s/%s converged", ns, name)
	return s
}

// TestZeroWritesAtSteadyState is invariant 2 on a real API server: once
// converged, many re-syncs (the informers resync every 100 ms here, and
// each resync re-queues every MCPServer) change no resourceVersion and move
// no write counter.
func TestZeroWritesAtSteadyState(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: 100 * time.Millisecond})
	ctx := context.Background()
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, newServerObj(ns, "fetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, "fetch")
	settled(t)

	before := snapshot(t, env, ns, "fetch")
	writes := mcpWrites(t)
	syncs := counter(t, "hivekeeper_reconcile_total", map[string]string{"controller": mcpserver.Name})
	framework.Eventually(t, settle, func() (bool, error) {
		return counter(t, "hivekeeper_reconcile_total", map[string]string{"controller": mcpserver.Name}) >= syncs+10, nil
	}, "ten more syncs through informer resyncs")
	after := snapshot(t, env, ns, "fetch")
	for k, rv := range before {
		if after[k] != rv {
			t.Errorf("%s changed at steady state: resourceVersion %s -> %s", k, rv, after[k])
		}
	}
	if got := mcpWrites(t); got != writes {
		t.Errorf("hivekeeper_writes_total moved at steady state: %v -> %v", writes, got)
	}
	if churn := counter(t, "hivekeeper_churn_writes_total", nil); churn != 0 {
		t.Errorf("churn writes: %v", churn)
	}
}

func TestChildrenAsSpecifiedOnARealServer(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	ctx := context.Background()
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, newServerObj(ns, "fetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := waitConverged(t, env, ns, "fetch")
	dep, _ := env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
	cm, _ := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "fetch-runconfig", metav1.GetOptions{})
	tpl := dep.Spec.Template
	if tpl.Annotations[naming.AnnotationRunConfigChecksum] != cm.Annotations[schema.ChecksumAnnotation] ||
		tpl.Annotations["vault.hashicorp.com/agent-inject"] != "true" || tpl.Annotations["owner"] != "" {
		t.Errorf("template annotations %v", tpl.Annotations)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
		t.Errorf("replicas nil must leave the server default: %v", dep.Spec.Replicas)
	}
	if s.Status.URL != fmt.Sprintf("http://mcp-fetch-proxy.%s.svc.cluster.local:8080/mcp", ns) || s.Status.Phase != thv1.MCPServerPhasePending {
		t.Errorf("status %+v", s.Status)
	}
	if !meta.IsStatusConditionTrue(s.Status.Conditions, thv1.ConditionPodTemplateValid) {
		t.Errorf("conditions %+v", s.Status.Conditions)
	}
}

// TestForeignSpecFieldsSurvive: a spec field unknown to hivekeeper written
// by another client survive the finalizer add, a restart request and a spec
// change, because hivekeeper never PUTs a custom resource.
func TestForeignSpecFieldsSurvive(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	ctx := context.Background()
	res := env.Dynamic.Resource(serversGVR).Namespace(ns)
	if _, err := res.Create(ctx, newServerObj(ns, "fetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, "fetch")
	check := func(stage string) {
		t.Helper()
		u, err := res.Get(ctx, "fetch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok, _ := unstructured.NestedBool(u.Object, "spec", "telemetry", "openTelemetry", "enabled"); !ok || !v {
			t.Errorf("%s: unknown spec field lost: %v", stage, u.Object["spec"])
		}
	}
	check("after finalizer")
	restart := time.Now().UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, thv1.AnnotationRestartedAt, restart)
	if _, err := res.Patch(ctx, "fetch", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, settle, func() (bool, error) {
		s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, "fetch", metav1.GetOptions{})
		return err == nil && s.Annotations[thv1.AnnotationLastProcessedRestart] == restart, err
	}, "restart processed")
	dep, _ := env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
	if dep.Spec.Template.Annotations[thv1.AnnotationRestartedAt] != restart {
		t.Errorf("rolling restart did not stamp the template: %v", dep.Spec.Template.Annotations)
	}
	check("after restart")

	if _, err := res.Patch(ctx, "fetch", types.MergePatchType, []byte(`{"spec":{"image":"ghcr.io/example/fetch:2.0"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, env, ns, "fetch", 2)
	check("after spec change")
}

func waitGeneration(t *testing.T, env *framework.Env, ns, name string, gen int64) *appsv1.Deployment {
	t.Helper()
	var dep *appsv1.Deployment
	framework.Eventually(t, settle, func() (bool, error) {
		var err error
		dep, err = env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && dep.Spec.Template.Annotations[naming.AnnotationMCPServerGeneration] == fmt.Sprint(gen), err
	}, "deployment template at generation %d", gen)
	return dep
}

// TestGenerationAndChecksumRollouts: an image change bumps the generation
// annotation and the env stays wired to it through the downward API (with
// the apiVersion the server would otherwise default); a pod-template
// override change rolls the template and keeps the checksum.
func TestGenerationAndChecksumRollouts(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	ctx := context.Background()
	res := env.Dynamic.Resource(serversGVR).Namespace(ns)
	if _, err := res.Create(ctx, newServerObj(ns, "fetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, "fetch")
	dep1 := waitGeneration(t, env, ns, "fetch", 1)
	if _, err := res.Patch(ctx, "fetch", types.MergePatchType, []byte(`{"spec":{"image":"ghcr.io/example/fetch:2.0"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	dep2 := waitGeneration(t, env, ns, "fetch", 2)
	c := dep2.Spec.Template.Spec.Containers[0]
	var wired bool
	for _, e := range c.Env {
		if e.Name == naming.EnvMCPServerGeneration && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.APIVersion == "v1" && strings.Contains(e.ValueFrom.FieldRef.FieldPath, naming.AnnotationMCPServerGeneration) {
			wired = true
		}
	}
	if !wired {
		t.Errorf("generation env not wired: %+v", c.Env)
	}
	if dep2.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == dep1.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] {
		t.Error("RunConfig changed (image, generation) but the checksum did not")
	}

	patch := `{"spec":{"resourceOverrides":{"proxyDeployment":{"podTemplateMetadataOverrides":{"annotations":{"vault.hashicorp.com/role":"mcp"}}}}}}`
	if _, err := res.Patch(ctx, "fetch", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	dep3 := waitGeneration(t, env, ns, "fetch", 3)
	ann := dep3.Spec.Template.Annotations
	if ann["vault.hashicorp.com/role"] != "mcp" || ann[naming.AnnotationRunConfigChecksum] == "" {
		t.Errorf("override rollout lost the checksum or the override: %v", ann)
	}
}

// conflictOnce returns 409 to the first finalizer patch of an MCPServer,
// the way a concurrent writer would cause it.
type conflictOnce struct {
	next  http.RoundTripper
	fired atomic.Bool
}

func (c *conflictOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/mcpservers/") && !strings.HasSuffix(r.URL.Path, "/status") && c.fired.CompareAndSwap(false, true) {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"injected conflict"}`
		return &http.Response{StatusCode: http.StatusConflict, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	return c.next.RoundTrip(r)
}

func TestConflictOnFinalizerPatchIsRetried(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	cfg := rest.CopyConfig(env.Config)
	inj := &conflictOnce{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { inj.next = rt; return inj }
	kube, th, err := app.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Start(ctx, kube, th, app.Options{Namespaces: []string{ns}}, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })

	conflicts := counter(t, "hivekeeper_writes_total", map[string]string{"controller": mcpserver.Name, "outcome": "conflict"})
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, newServerObj(ns, "fetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, "fetch")
	if !inj.fired.Load() {
		t.Fatal("no conflict was injected")
	}
	if got := counter(t, "hivekeeper_writes_total", map[string]string{"controller": mcpserver.Name, "outcome": "conflict"}); got != conflicts+1 {
		t.Errorf("conflict writes %v -> %v", conflicts, got)
	}
}

// TestDeletionRunsFinalizer: the runner-created StatefulSet and Services
// are removed, then the finalizer, and the MCPServer is gone.
func TestDeletionRunsFinalizer(t *testing.T) {
	env, ns := convergedServer(t, "fetch")
	ctx := context.Background()
	env.CreateRunnerObjects(t, ns, "fetch", framework.RunnerLabels("fetch"))
	if err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Delete(ctx, "fetch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, settle, func() (bool, error) {
		_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, "fetch", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}, "MCPServer deleted")
	if _, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, "fetch", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("runner StatefulSet left behind: %v", err)
	}
	for _, n := range []string{"mcp-fetch-headless", "mcp-fetch"} {
		if _, err := env.Kube.CoreV1().Services(ns).Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("runner Service %s left behind: %v", n, err)
		}
	}
}

// TestCrashLoopingProxyPodIsFailed: on a real API server (no kubelet: the
// test writes the pod's status as one would), a proxy pod in
// CrashLoopBackOff makes the MCPServer Failed with ToolHive v0.63.0's
// message, through the trimmed pod informer; the pod recovering, or
// going away, makes it Pending again; a status write the MCPServer's
// status does not read (a probe's message) writes nothing.
func TestCrashLoopingProxyPodIsFailed(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	ctx := context.Background()
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, newServerObj(ns, "fetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, "fetch")
	pods := env.Kube.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fetch-7c9d", Labels: naming.Labels(naming.AppMCPServer, "fetch")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "toolhive", Image: "ghcr.io/stacklok/toolhive/proxyrunner:v0.63.0"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setState := func(state corev1.ContainerState) {
		t.Helper()
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "toolhive", Image: pod.Spec.Containers[0].Image, State: state}}}
		if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	phase := func(want, message string) {
		t.Helper()
		framework.Eventually(t, settle, func() (bool, error) {
			s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, "fetch", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return s.Status.Phase == want && s.Status.Message == message, fmt.Errorf("phase %q message %q", s.Status.Phase, s.Status.Message)
		}, "MCPServer %s: %s", want, message)
	}
	crashing := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}}
	setState(crashing)
	phase(thv1.MCPServerPhaseFailed, "MCP server pod failed: CrashLoopBackOff")
	settled(t)

	writes := mcpWrites(t)
	crashing.Waiting.Message = "back-off 20s"
	setState(crashing)
	settled(t)
	if got := mcpWrites(t); got != writes {
		t.Errorf("a pod status write the MCPServer does not read moved hivekeeper_writes_total: %v -> %v", writes, got)
	}

	setState(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
	phase(thv1.MCPServerPhasePending, "MCP server is starting")
	setState(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}})
	phase(thv1.MCPServerPhaseFailed, "MCP server pod failed: ContainerTerminated")
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	phase(thv1.MCPServerPhasePending, "MCP server is being created")
}
