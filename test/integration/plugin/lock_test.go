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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// runPlugin runs the plugin with args and no terminal on stdin, and
// returns its exit code and output.
func runPlugin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(plugin(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// While a run holds the record (written here as one would, renewed a
// moment ago), a second switch and a switch --back are refused, exit 4,
// before any step, naming the holder; status shows the holder and both
// operators; and with no terminal on stdin, switch without --yes is a
// usage error.
func TestARunHoldingTheRecordKeepsOthersOut(t *testing.T) {
	env := framework.Get(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	labels := map[string]string{"app.kubernetes.io/part-of": "hivekeeper", "app.kubernetes.io/component": "controller"}
	hk := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hivekeeper", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "registry.example.com/hivekeeper:v1"}}}}}}
	if _, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, hk, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	rec := map[string]any{"phase": "switching", "started": now, "step": "hivekeeper's image registry.example.com/hivekeeper:v1 pulled and started",
		"holder":     map[string]any{"user": "alice", "host": "laptop", "version": "v1.2.3", "command": "switch", "since": now, "renewed": now, "timeout": "15m0s"},
		"operator":   map[string]any{"namespace": "toolhive-system", "name": "toolhive-operator", "replicas": 1},
		"hivekeeper": map[string]any{"namespace": ns, "name": "hivekeeper", "replicas": 2}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hivekeeper-switch"}, Data: map[string]string{"switch.json": string(b)}}
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	where := []string{"--kubeconfig", env.Kubeconfig, "--hivekeeper-namespace", ns, "--hivekeeper-deployment", "hivekeeper"}

	for _, extra := range [][]string{{"switch"}, {"switch", "--back"}} {
		code, out, errOut := runPlugin(t, append(append(extra, where...), "--yes", "-o", "json")...)
		r, _, err := toolhive.ReadSwitchOutput(out)
		if err != nil {
			t.Fatalf("%v exited %d with no report: %v\n%s\n%s", extra, code, err, out, errOut)
		}
		if code != 4 || len(r.Steps) != 0 || !strings.Contains(r.Refused, "a switch is in progress (phase switching), held by alice on laptop (kubectl-hivekeeper v1.2.3, switch)") {
			t.Errorf("%v while another holds the record: exit %d, steps %v, refused %q", extra, code, r.Steps, r.Refused)
		}
	}
	if got, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "hivekeeper-switch", metav1.GetOptions{}); err != nil || got.Data["switch.json"] != string(b) {
		t.Errorf("a refused run changed the record: %v", err)
	}

	code, out, errOut := runPlugin(t, append([]string{"status"}, where...)...)
	for _, line := range []string{"phase switching", "held by alice on laptop (kubectl-hivekeeper v1.2.3, switch)", "last step: hivekeeper's image",
		"hivekeeper: Deployment " + ns + "/hivekeeper, 0 replicas"} {
		if code != 0 || !strings.Contains(out, line) {
			t.Errorf("status exited %d without %q:\n%s\n%s", code, line, out, errOut)
		}
	}

	code, _, errOut = runPlugin(t, append([]string{"switch"}, where...)...)
	if code != 2 || !strings.Contains(errOut, "pass --yes") {
		t.Errorf("switch without --yes and no terminal: exit %d, stderr %q", code, errOut)
	}
}
