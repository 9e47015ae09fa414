// Package plugin runs the built kubectl-hivekeeper against a real
// kube-apiserver and etcd: what preflight reads there carries the API
// server's defaults, which the copy it runs the controllers over must
// not mistake for a difference.
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

func TestMain(m *testing.M) { framework.Main(m) }

// plugin returns the path of a freshly built kubectl-hivekeeper, skipping
// the test when the package has no API server.
var plugin = framework.BuildOnce("./cmd/kubectl-hivekeeper", "kubectl-hivekeeper")

// The plugin's JSON reports, as the suites read them.
type (
	report       = toolhive.PreflightReport
	change       = toolhive.Change
	switchReport = toolhive.SwitchReport
	outcome      = toolhive.SwitchOutcome
)

// preflight runs the plugin against the package's API server, with the
// operator's namespace as -n, and returns its exit code and report.
func preflight(t *testing.T, operatorNS string) (int, report, string) {
	t.Helper()
	return preflightOn(t, framework.Get(t).Kubeconfig, operatorNS)
}

// preflightOn is preflight against the API server of kubeconfig.
func preflightOn(t *testing.T, kubeconfig, operatorNS string) (int, report, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(plugin(t), "preflight", "--kubeconfig", kubeconfig, "-n", operatorNS, "-o", "json", "--timeout", "2m")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("preflight exited %d with no JSON report: %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	return code, r, stdout.String()
}

// operator is ToolHive's operator as its chart installs it, with the
// environment of the settings hivekeeper runs with below, watching ns
// only. It never runs: no kubelet here, and preflight only reads it.
func operator(ns, watched string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": "toolhive-operator", "app.kubernetes.io/instance": "toolhive-operator"}
	env := []corev1.EnvVar{
		{Name: "UNSTRUCTURED_LOGS", Value: "false"},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "TOOLHIVE_USE_CONFIGMAP", Value: "true"},
		{Name: "WATCH_NAMESPACE", Value: watched},
		{Name: "TOOLHIVE_RUNNER_IMAGE", Value: app.DefaultRunnerImage},
		{Name: "VMCP_IMAGE", Value: app.DefaultVMCPImage},
		{Name: "TOOLHIVE_PROXY_HOST", Value: app.DefaultProxyHost},
		{Name: "TOOLHIVE_REGISTRY_API_IMAGE", Value: app.DefaultRegistryAPIImage},
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "toolhive-operator", Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "toolhive-operator", "meta.helm.sh/release-namespace": ns}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "manager", Image: "ghcr.io/stacklok/toolhive/operator:v0.63.0", Args: []string{"--leader-elect"}, Env: env,
			}}}},
		},
	}
}

// With the children hivekeeper writes already in place, preflight
// predicts a switch that restarts, recreates and rewrites nothing, and
// exits 0. Once a proxy Deployment's pod template is edited, it names
// that Deployment, its MCPServer, its pod and the first field that
// differs, and exits 3.
func TestPreflight(t *testing.T) {
	env := framework.Get(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	opNS := env.Namespace(t)
	if _, err := env.Kube.AppsV1().Deployments(opNS).Create(ctx, operator(opNS, ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fetch"},
		Spec:       thv1.MCPServerSpec{Image: "ghcr.io/example/fetch:1.0", Transport: thv1.TransportStdio, ProxyPort: 8080},
	}
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// hivekeeper, with the settings the operator's environment maps to,
	// writes the children, and stops.
	t.Run("converge", func(t *testing.T) {
		env.StartControllers(t, app.Options{Namespaces: []string{ns}})
		framework.Eventually(t, time.Minute, func() (bool, error) {
			_, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		}, "the proxy Deployment")
		workloadtest.Quiesce(t, 2*time.Second, time.Minute, "mcpserver")
	})
	if t.Failed() {
		return
	}

	code, r, out := preflight(t, opNS)
	if r.Operator == nil || r.Operator.Name != "toolhive-operator" || r.Operator.Release != "v0.63.0" {
		t.Errorf("operator %+v", r.Operator)
	}
	if want := "--namespaces=" + ns; !strings.Contains(strings.Join(r.Settings.Flags, " "), want) {
		t.Errorf("flags %v lack %s", r.Settings.Flags, want)
	}
	p := r.Prediction
	if code != 0 || !p.Settled || len(p.Restarts)+len(p.Recreated)+len(p.Rewritten)+len(p.Created)+len(p.Patched) != 0 ||
		r.Summary != "0 pods restart, 0 objects recreated, 0 ConfigMaps rewritten" {
		t.Errorf("over hivekeeper's own children: exit %d, report:\n%s", code, out)
	}

	// A pod of the Deployment, as its ReplicaSet would have made it (no
	// kubelet runs it here): the one a restart replaces.
	d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fetch-6d9f7c8b5-x2kqp", Labels: d.Spec.Template.Labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "toolhive", Image: app.DefaultRunnerImage}}}}
	if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"toolhive","image":"ghcr.io/stacklok/toolhive/proxyrunner:v0.62.0"}]}}}}`
	if _, err := env.Kube.AppsV1().Deployments(ns).Patch(ctx, "fetch", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	code, r, out = preflight(t, opNS)
	if code != 3 || r.ExitCode != 3 || len(r.Prediction.Restarts) != 1 || r.Summary != "1 pod restarts, 0 objects recreated, 0 ConfigMaps rewritten" {
		t.Fatalf("after the edit: exit %d, report:\n%s", code, out)
	}
	got := r.Prediction.Restarts[0]
	wantDetail := `container toolhive: image: "ghcr.io/stacklok/toolhive/proxyrunner:v0.62.0" → "` + app.DefaultRunnerImage + `"`
	if got.Kind != "Deployment" || got.Namespace != ns || got.Name != "fetch" || got.Owner != "MCPServer fetch" ||
		got.Field != "spec.template.spec.containers.image" || got.Detail != wantDetail || len(got.Pods) != 1 || got.Pods[0] != pod.Name {
		t.Errorf("restart %+v, want Deployment %s/fetch of MCPServer fetch, pod %s, spec.template.spec.containers.image, %s", got, ns, pod.Name, wantDetail)
	}
	// Nothing was written: the Deployment still holds the edit.
	d, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":v0.62.0") {
		t.Errorf("preflight changed the Deployment: image %s", img)
	}
}
