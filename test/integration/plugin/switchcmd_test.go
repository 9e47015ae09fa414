package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// kubelet is the stand-in cluster of TestSwitchCommand: ToolHive's
// operator as a process, hivekeeper's controllers in-process with the
// chart values preflight prints.
type kubelet struct {
	*toolhive.StandIn
	t  *testing.T
	tc *toolhiveCluster
}

// installKubelet installs hivekeeper's chart, scaled to zero, and its
// admission policy's binding on the stand-in cluster, and starts its
// kubelet with hivekeeper given the settings of ToolHive's chart as
// preflight prints them.
func installKubelet(t *testing.T, tc *toolhiveCluster) *kubelet {
	t.Helper()
	ctx := context.Background()
	if err := toolhive.InstallHivekeeper(ctx, tc.env.Kube); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hivekeeper-workloads", Labels: map[string]string{"app.kubernetes.io/part-of": "hivekeeper", "app.kubernetes.io/instance": "hivekeeper"}},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "hivekeeper-workloads", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	if _, err := tc.env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	flags, err := toolhive.ChartFlags(tc.module, "")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := toolhive.Options(ctx, tc.env.Kube, flags)
	if err != nil {
		t.Fatal(err)
	}
	k := newKubelet(t, tc, opts)
	k.Step(ctx)
	return k
}

func newKubelet(t *testing.T, tc *toolhiveCluster, opts app.Options) *kubelet {
	k := &kubelet{t: t, tc: tc}
	k.StandIn = &toolhive.StandIn{T: t, Kube: tc.env.Kube,
		StartToolHive: func() func() {
			op := toolhive.StartOperator(t, toolhive.OperatorOptions{Binaries: tc.bins, Module: tc.module, Kubeconfig: tc.srv.Kubeconfig, Namespace: toolhiveNS, Dir: t.TempDir()})
			return func() { op.Stop(t) }
		},
		StartHivekeeper: func() (func() bool, func()) {
			ctx, cancel := context.WithCancel(context.Background())
			done, up := make(chan error, 1), make(chan struct{})
			go func() { done <- app.Start(ctx, tc.env.Kube, tc.env.Toolhive, opts, up) }()
			ready := func() bool {
				select {
				case <-up:
					return true
				case err := <-done:
					t.Fatalf("hivekeeper's controllers stopped: %v", err)
				default:
				}
				return false
			}
			stop := func() {
				cancel()
				select {
				case err := <-done:
					if err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("hivekeeper's controllers: %v", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("hivekeeper's controllers still running 30s after they were stopped")
				}
			}
			return ready, stop
		}}
	t.Cleanup(k.StopAll)
	return k
}

// run runs the plugin with args while the kubelet plays its part, and
// returns its exit code and report.
func (k *kubelet) run(args ...string) (int, switchReport, string) {
	t := k.t
	t.Helper()
	code, stdout, stderr := k.Run(plugin(t), append([]string{"--kubeconfig", k.tc.srv.Kubeconfig}, args...)...)
	r, _, err := toolhive.ReadSwitchOutput(stdout)
	if err != nil {
		t.Fatalf("%v exited %d with no JSON report: %v\nstdout:\n%s\nstderr:\n%s", args, code, err, stdout, stderr)
	}
	return code, r, stdout
}

// switchArgs are switch's flags here: short waits, hivekeeper at one
// replica.
func switchArgs(extra ...string) []string {
	return append([]string{"switch", "-n", toolhiveNS, "-o", "json", "--yes", "--replicas", "1", "--quiet", "5s", "--wait", "3m", "--timeout", "2m"}, extra...)
}

// TestSwitchCommand runs `kubectl hivekeeper switch` and `switch --back` on
// a cluster ToolHive v0.63.0's operator converged, with its chart's
// default environment, while a stand-in kubelet starts and stops the two
// operators as their Deployments ask:
//
//   - with an MCPServer whose host-path volumes hivekeeper drops, switch
//     predicts its restart and refuses without --allow-restarts, writing
//     nothing;
//   - without it (examples/, one object of every kind), switch predicts no
//     restart and makes none, and switch --back restarts none either:
//     every pod template, UID and RunConfig is as it was, measured here
//     independently of the plugin's own report;
//   - with it again, switch --allow-restarts restarts exactly what
//     preflight predicted.
//
// Beside the workloads live neighbours no operator writes, some of them
// rewritten every few seconds: each switch settles all the same and
// reports none of them.
func TestSwitchCommand(t *testing.T) {
	tc := newToolhiveCluster(t)
	env := tc.env
	ctx := context.Background()
	if _, err := framework.ApplyManifests(ctx, env.Config, "team-a", filepath.Join(tc.root, "examples")); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers("team-b").Create(ctx, hostPathServer("team-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := installKubelet(t, tc)
	for _, ns := range []string{"team-a", "team-b"} {
		settle(t, env, ns, 3*time.Minute)
	}
	toolhiveCRDs := crdSchemas(t, env)
	// Neighbours, as a production cluster has them: 510 ConfigMaps,
	// ServiceAccounts and RoleBindings no operator writes, and three
	// ConfigMaps rewritten every 2 to 4 seconds, one of them in a
	// workload namespace. ToolHive's operator watches every namespace
	// here, so all of them are in the switch's view.
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	addNeighbours(t, env, 170, []string{"team-a", "team-b", "shop"}, []string{"team-a", "shop", toolhiveNS})

	t.Run("refused", func(t *testing.T) {
		before := readBoth(t, env)
		code, r, out := k.run(switchArgs()...)
		if code != 3 || !strings.Contains(r.Refused, "run switch --allow-restarts") || r.Outcome != nil || len(r.Steps) != 0 {
			t.Fatalf("switch exited %d, refused %q:\n%s", code, r.Refused, out)
		}
		if r.Preflight == nil || len(r.Preflight.Prediction.Restarts) != 1 || r.Preflight.Prediction.Restarts[0].Key() != "Deployment team-b/files" {
			t.Errorf("the prediction: %s", out)
		}
		measure(t, "a refused switch", before, readBoth(t, env), nil)
		if !k.ToolHiveRunning() || k.HivekeeperRunning() {
			t.Error("a refused switch changed which operator runs")
		}
	})
	if t.Failed() {
		return
	}

	// Without the deliberate difference.
	if err := env.Toolhive.ToolhiveV1beta1().MCPServers("team-b").Delete(ctx, "files", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		_, err := env.Toolhive.ToolhiveV1beta1().MCPServers("team-b").Get(ctx, "files", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}, "the MCPServer with host paths gone")
	settle(t, env, "team-b", time.Minute)

	t.Run("to hivekeeper", func(t *testing.T) {
		before := readBoth(t, env)
		code, r, out := k.run(switchArgs()...)
		if code != 0 || r.Outcome == nil || !r.Outcome.Settled {
			t.Fatalf("switch exited %d:\n%s", code, out)
		}
		if len(r.Preflight.Prediction.Restarts) != 0 || !strings.HasPrefix(r.Preflight.Summary, "0 pods restart,") {
			t.Errorf("preflight predicted %q", r.Preflight.Summary)
		}
		measure(t, "the switch", before, readBoth(t, env), r.Outcome)
		if k.ToolHiveRunning() || !k.HivekeeperRunning() {
			t.Error("after the switch, ToolHive's operator runs or hivekeeper does not")
		}
		logReport(t, r)
	})
	if t.Failed() {
		return
	}

	t.Run("back", func(t *testing.T) {
		before := readBoth(t, env)
		code, r, out := k.run(switchArgs("--back")...)
		if code != 0 || r.Outcome == nil || !r.Outcome.Settled {
			t.Fatalf("switch --back exited %d:\n%s", code, out)
		}
		measure(t, "switch --back", before, readBoth(t, env), r.Outcome)
		if !k.ToolHiveRunning() || k.HivekeeperRunning() {
			t.Error("after switch --back, hivekeeper runs or ToolHive's operator does not")
		}
		if got := crdSchemas(t, env); !equality.Semantic.DeepEqual(got, toolhiveCRDs) {
			t.Error("after switch --back, the CRDs' schemas are not ToolHive's")
		}
		b, err := env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, "hivekeeper-workloads", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}) {
			t.Errorf("after switch --back, the admission policy binding's actions are %v", b.Spec.ValidationActions)
		}
		// The record stays, released, as the trace of the switch.
		cm, err := env.Kube.CoreV1().ConfigMaps(toolhive.HivekeeperNamespace).Get(ctx, "hivekeeper-switch", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after switch --back, the record: %v", err)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(cm.Data["switch.json"]), &rec); err != nil || rec["phase"] != "back" || rec["holder"] != nil {
			t.Errorf("after switch --back, the record: %v\n%s", err, cm.Data["switch.json"])
		}
		logReport(t, r)
	})
	if t.Failed() {
		return
	}

	// The deliberate difference again, accepted: a second MCPServer with
	// host paths (a new name: without a garbage collector here, the first
	// one's children stay behind it).
	again := hostPathServer("team-b")
	again.Name = "files-again"
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers("team-b").Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		d, err := env.Kube.AppsV1().Deployments("team-b").Get(ctx, again.Name, metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil }), nil
	}, "ToolHive's operator creating the proxy of the second MCPServer with host paths, with its host path")
	settle(t, env, "team-b", time.Minute)
	t.Run("allowed restarts", func(t *testing.T) {
		before := readBoth(t, env)
		code, r, out := k.run(switchArgs("--allow-restarts")...)
		if code != 0 || r.Outcome == nil {
			t.Fatalf("switch --allow-restarts exited %d:\n%s", code, out)
		}
		var predicted []string
		for _, x := range r.Preflight.Prediction.Restarts {
			predicted = append(predicted, x.Key())
		}
		if !slices.Equal(predicted, []string{"Deployment team-b/files-again"}) {
			t.Errorf("predicted restarts %v", predicted)
		}
		measure(t, "switch --allow-restarts", before, readBoth(t, env), r.Outcome)
		logReport(t, r)
	})
}

// logReport logs what switch printed as its steps, as text mode prints
// them, and its verdict.
func logReport(t *testing.T, r switchReport) {
	t.Helper()
	var b strings.Builder
	for _, s := range r.Steps {
		b.WriteString("- " + s + "\n")
	}
	for _, n := range r.Notes {
		b.WriteString("  note: " + n + "\n")
	}
	if o := r.Outcome; o != nil {
		name := func(c change) string {
			if c.Owner != "" {
				return c.Key() + " (" + c.Owner + ")"
			}
			return c.Key()
		}
		for _, c := range o.Restarted {
			b.WriteString("restarted: " + name(c) + ": " + c.Field + "\n")
		}
		for _, c := range o.Recreated {
			b.WriteString("recreated: " + name(c) + "\n")
		}
		for _, c := range o.Rewritten {
			b.WriteString("rewritten: " + name(c) + "\n")
		}
		for k, n := range o.Changed {
			b.WriteString(fmt.Sprintf("changed: %d %s\n", n, k))
		}
	}
	t.Logf("switch's report:\n%s%s", b.String(), r.Summary)
}

// both are the children of team-a and team-b.
type both struct{ a, b children }

func readBoth(t *testing.T, env *framework.Env) both {
	return both{readChildren(t, env, "team-a"), readChildren(t, env, "team-b")}
}

// measure compares the children before and after a switch, as this test
// reads them, with what the switch reported (nil: nothing may change).
func measure(t *testing.T, what string, before, after both, reported *outcome) {
	t.Helper()
	var restarted, recreated, rewritten []string
	for _, pair := range [][2]children{{before.a, after.a}, {before.b, after.b}} {
		s, c, w := changedBetween(pair[0], pair[1])
		restarted, recreated, rewritten = append(restarted, s...), append(recreated, c...), append(rewritten, w...)
	}
	var rep [3][]string
	if reported != nil {
		for _, list := range [][]change{reported.Restarted, reported.Recreated, reported.Rewritten, reported.Created, reported.Deleted} {
			for _, c := range list {
				if c.Namespace == "shop" || strings.HasPrefix(c.Name, "shop-") || c.Name == "lock" {
					t.Errorf("%s: the report names %s, which no operator writes", what, c.Key())
				}
			}
		}
		for i, list := range [][]change{reported.Restarted, reported.Recreated, reported.Rewritten} {
			for _, c := range list {
				rep[i] = append(rep[i], c.Key())
			}
		}
	}
	for i, c := range []struct {
		name     string
		measured []string
	}{{"pod templates changed", restarted}, {"children recreated", recreated}, {"ConfigMaps rewritten", rewritten}} {
		sort.Strings(c.measured)
		sort.Strings(rep[i])
		if !slices.Equal(c.measured, rep[i]) {
			t.Errorf("%s: %s measured here %q, reported %q", what, c.name, c.measured, rep[i])
		}
	}
}

// crdSchemas are the schemas of every served version of the
// toolhive.stacklok.dev CRDs.
func crdSchemas(t *testing.T, env *framework.Env) map[string]runtime.RawExtension {
	t.Helper()
	raw, err := env.Dynamic.Resource(framework.CRDResource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]runtime.RawExtension{}
	for _, u := range raw.Items {
		var c apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
			t.Fatal(err)
		}
		if c.Spec.Group != "toolhive.stacklok.dev" {
			continue
		}
		for _, v := range c.Spec.Versions {
			b, err := json.Marshal(v.Schema)
			if err != nil {
				t.Fatal(err)
			}
			out[c.Name+"/"+v.Name] = runtime.RawExtension{Raw: b}
		}
	}
	return out
}
