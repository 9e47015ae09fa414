package conformance_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestRunnerCreatesStatefulSet starts ToolHive's thv-proxyrunner as the
// proxy Deployment's container would run: its args and env exactly as
// hivekeeper wrote them (the downward-API generation resolved from the pod
// template annotation), the RunConfig as ./runconfig.json, the test API
// server's kubeconfig. The runner must create the MCP server's StatefulSet
// with the image, secret env and pod patch the manifest asked for.
func TestRunnerCreatesStatefulSet(t *testing.T) {
	env, ns := runtimeSetUp(t)
	applyStrict(t, env, ns, "testdata/table/09-secrets-overrides-pod-template.yaml")
	const name = "github"
	startRunner(t, env, ns, name, naming.RunConfigName(name), 8080)
	sts := waitStatefulSet(t, env, ns, name)
	pod := sts.Spec.Template.Spec
	var mcp *corev1.Container
	for i := range pod.Containers {
		if pod.Containers[i].Name == naming.MCPContainerName {
			mcp = &pod.Containers[i]
		}
	}
	if mcp == nil {
		t.Fatalf("no %q container in the runner's StatefulSet: %+v", naming.MCPContainerName, pod.Containers)
	}
	if mcp.Image != "ghcr.io/github/github-mcp-server:v0.5.0" {
		t.Errorf("image %q", mcp.Image)
	}
	var secretEnv bool
	for _, e := range mcp.Env {
		if e.Name == "GITHUB_PERSONAL_ACCESS_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
			e.ValueFrom.SecretKeyRef.Name == "github-token" && e.ValueFrom.SecretKeyRef.Key == "token" {
			secretEnv = true
		}
	}
	if !secretEnv {
		t.Errorf("the secret is not a secretKeyRef env of the MCP container: %+v", mcp.Env)
	}
	if pod.ServiceAccountName != "github-backend" || pod.NodeSelector["pool"] != "mcp" {
		t.Errorf("pod patch not applied: serviceAccountName %q nodeSelector %v", pod.ServiceAccountName, pod.NodeSelector)
	}
	if sts.Spec.Template.Labels["team"] != "platform" {
		t.Errorf("pod patch labels not applied: %v", sts.Spec.Template.Labels)
	}
	// The RunConfig's container labels end up on what the runner deploys.
	if sts.Labels["toolhive-name"] != name || sts.Labels["toolhive-transport"] != "stdio" {
		t.Errorf("the RunConfig's container labels are not on the StatefulSet: %v", sts.Labels)
	}
	// A stdio server is served by attaching to its pod, which no kubelet
	// runs here: the runner's part that hivekeeper's output drives ends
	// with the StatefulSet above.
}

// TestRunnerServesHTTPServer runs the runner on a streamable-http server:
// once the test marks the runner's StatefulSet ready (there is no
// kubelet), the runner must serve on its port.
func TestRunnerServesHTTPServer(t *testing.T) {
	env, ns := runtimeSetUp(t)
	applyStrict(t, env, ns, "testdata/table/03-streamable-http-ports.yaml")
	const name = "http-ports"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 9090)
	waitStatefulSet(t, env, ns, name)
	markStatefulSetReady(t, env, ns, name)
	waitServing(t, port)
}

// runtimeSetUp is where every test that runs ToolHive's processes starts:
// it skips without them, runs hivekeeper's controllers on the package's
// API server and returns it with a namespace of the test's own.
func runtimeSetUp(t *testing.T) (*framework.Env, string) {
	t.Helper()
	requireToolHive(t)
	env := framework.Get(t)
	env.StartControllers(t, app.Options{Workers: 2})
	return env, env.Namespace(t)
}

// startRunner starts ToolHive's thv-proxyrunner as the proxy Deployment
// <name> of an MCPServer or an MCPRemoteProxy would run it: the
// container's args and env exactly as hivekeeper wrote them (downward-API
// and secret env resolved), the RunConfig ConfigMap runConfig as
// ./runconfig.json (where the runner looks when /etc/runconfig is
// absent), the test API server's kubeconfig. It returns the loopback port
// it listens on; its output is logged when the test fails. replace are
// old, new string pairs applied to the RunConfig first (a remote proxy's
// stand-in URL and the test's loopback one).
func startRunner(t *testing.T, env *framework.Env, ns, name, runConfig string, proxyPort int, replace ...string) int {
	t.Helper()
	port, _ := startRunnerOutput(t, env, ns, name, runConfig, proxyPort, replace...)
	return port
}

// startRunnerOutput is startRunner that also returns the runner's
// output (stdout and stderr) as it grows: what it logs is part of what a
// test checks (audit events).
func startRunnerOutput(t *testing.T, env *framework.Env, ns, name, runConfig string, proxyPort int, replace ...string) (int, *framework.SyncBuffer) {
	t.Helper()
	port, command := runnerCommand(t, env, ns, name, runConfig, proxyPort, replace...)
	return port, startProcess(t, "thv-proxyrunner", command())
}

// runnerCommand prepares what startRunnerOutput runs and returns the port
// and a function that makes the command, once per start of the runner.
func runnerCommand(t *testing.T, env *framework.Env, ns, name, runConfig string, proxyPort int, replace ...string) (int, func() *exec.Cmd) {
	t.Helper()
	cm := waitConfigMap(t, env, ns, runConfig)
	c, tmpl := deploymentContainer(t, env, ns, name, naming.ProxyContainerName)
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// The RunConfig is the ConfigMap's content, with only the listening
	// port moved to a free loopback port: the runner binds it on the host.
	rc := strings.Replace(cm.Data[schema.Key], fmt.Sprintf(`"port": %d,`, proxyPort), fmt.Sprintf(`"port": %d,`, port), 1)
	rc = strings.NewReplacer(replace...).Replace(rc)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, schema.Key), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := append([]string{"PATH=" + os.Getenv("PATH"), "KUBECONFIG=" + env.Kubeconfig, "POD_NAMESPACE=" + ns, "HOME=" + dir},
		containerEnv(t, env, ns, c, tmpl.Annotations)...)
	return port, func() *exec.Cmd {
		cmd := exec.Command(filepath.Join(toolhiveBin, "thv-proxyrunner"), c.Args...)
		cmd.Dir, cmd.Env = dir, environ
		return cmd
	}
}

// deploymentContainer waits for the Deployment <name> hivekeeper writes
// and returns its first container, which must be called container, and
// its pod template (the downward API reads the template's annotations).
func deploymentContainer(t *testing.T, env *framework.Env, ns, name, container string) (corev1.Container, corev1.PodTemplateSpec) {
	t.Helper()
	dep := waitFor(t, func() (*appsv1.Deployment, error) {
		return env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	}, "Deployment "+ns+"/"+name+" written by hivekeeper")
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Name != container {
		t.Fatalf("Deployment %s: first container %q, want %q", name, c.Name, container)
	}
	return c, dep.Spec.Template
}

// containerEnv resolves a container's env as the kubelet would: plain
// values, the downward API's metadata.annotations['<key>'] of the pod
// template, and secretKeyRef values read from their Secret.
func containerEnv(t *testing.T, env *framework.Env, ns string, c corev1.Container, annotations map[string]string) []string {
	t.Helper()
	var out []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out = append(out, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil:
			key := strings.TrimSuffix(strings.TrimPrefix(e.ValueFrom.FieldRef.FieldPath, "metadata.annotations['"), "']")
			out = append(out, e.Name+"="+annotations[key])
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, err := env.Kube.CoreV1().Secrets(ns).Get(context.Background(), ref.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("env %s: %v", e.Name, err)
			}
			out = append(out, e.Name+"="+string(s.Data[ref.Key]))
		default:
			t.Fatalf("env %s: a source this suite does not resolve: %+v", e.Name, e.ValueFrom)
		}
	}
	return out
}

// startProcess starts cmd and stops it when the test ends; its output is
// logged when the test fails, and returned to read while it runs.
func startProcess(t *testing.T, what string, cmd *exec.Cmd) *framework.SyncBuffer {
	t.Helper()
	out := &framework.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", what, out.String())
		}
	})
	return out
}

// waitStatefulSet waits for the runner to create the server's StatefulSet.
func waitStatefulSet(t *testing.T, env *framework.Env, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	return waitFor(t, func() (*appsv1.StatefulSet, error) {
		return env.Kube.AppsV1().StatefulSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	}, "StatefulSet created by ToolHive's runner")
}

// markStatefulSetReady does what the kubelet and the StatefulSet
// controller would: the runner waits for its StatefulSet to be ready
// before it serves, and no pod runs here.
func markStatefulSetReady(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	ctx := context.Background()
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		s, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		r := int32(1)
		if s.Spec.Replicas != nil {
			r = *s.Spec.Replicas
		}
		s.Status.Replicas, s.Status.ReadyReplicas, s.Status.AvailableReplicas = r, r, r
		s.Status.CurrentReplicas, s.Status.UpdatedReplicas, s.Status.ObservedGeneration = r, r, s.Generation
		_, err = env.Kube.AppsV1().StatefulSets(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{})
		return err == nil, nil
	}, "StatefulSet marked ready")
}

// waitServing waits until something answers /health on the loopback port
// without a server error.
func waitServing(t *testing.T, port int) {
	t.Helper()
	framework.Eventually(t, 90*time.Second, func() (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode < 500, nil
	}, "serving on port %d", port)
}
