package plugin

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// An MCPRemoteProxy ToolHive's operator runs and hivekeeper refuses (it
// forwards one header under two spellings) blocks preflight and switch,
// exit 4, by name; with --allow-unmanaged naming it, the switch goes on,
// says so, and leaves the workload's children as they are.
func TestSwitchLeavesNamedUnmanagedWorkloads(t *testing.T) {
	tc := newToolhiveCluster(t)
	env := tc.env
	ctx := context.Background()
	legacy := &thv1.MCPRemoteProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "legacy"}, Spec: thv1.MCPRemoteProxySpec{
		RemoteURL: "https://mcp.example.com/mcp", ProxyPort: 8080,
		HeaderForward: &thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X-Tenant": "a", "x-tenant": "b"}}}}
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies("team-a").Create(ctx, legacy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := installKubelet(t, tc)
	framework.Eventually(t, 2*time.Minute, func() (bool, error) {
		_, err := env.Kube.AppsV1().Deployments("team-a").Get(ctx, "legacy", metav1.GetOptions{})
		return err == nil, nil
	}, "ToolHive's operator running the MCPRemoteProxy that forwards one header twice")
	settle(t, env, "team-a", 3*time.Minute)
	proxy, err := env.Kube.AppsV1().Deployments("team-a").Get(ctx, "legacy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const named = "MCPRemoteProxy/team-a/legacy"
	blockedBy := func(blockers []string) bool {
		return slices.ContainsFunc(blockers, func(b string) bool {
			return strings.HasPrefix(b, "MCPRemoteProxy team-a/legacy: ") && strings.Contains(b, "HeaderForwardInvalid") && strings.HasSuffix(b, "--allow-unmanaged "+named)
		})
	}

	// Each command runs under the rights docs/plugin.md gives it, and
	// no more: preflight as the documented Job would run it, switch as a
	// user bound to the documented ClusterRole.
	rights := documentedRights(t, tc.root)
	applyYAML(t, tc, rights[0]+"---\n"+rights[1])
	jobArgs, jobKubeconfig := documentedPreflightJob(t, tc, rights[2])
	alice := kubeconfigBoundTo(t, tc, "alice", "hivekeeper-switch")

	// Without the right to list pods, preflight stops and says so.
	bob := kubeconfigBoundTo(t, tc, "bob", withoutPods(t, tc, "hivekeeper-preflight"))
	code, out, errOut := runPlugin(t, "preflight", "--kubeconfig", bob, "-o", "json")
	if code != 1 || !strings.Contains(errOut, "missing permission: list pods ") {
		t.Errorf("preflight without the right to list pods exited %d:\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = runPlugin(t, append(jobArgs, "--kubeconfig", jobKubeconfig, "--timeout", "2m")...)
	var pf report
	if err := json.Unmarshal([]byte(out), &pf); err != nil {
		t.Fatalf("the documented preflight Job's run exited %d with no JSON report: %v\n%s\n%s", code, err, out, errOut)
	}
	if code != 4 || !blockedBy(pf.Blockers) {
		t.Errorf("preflight exited %d, blockers %q:\n%s", code, pf.Blockers, out)
	}

	code, r, out := k.run(switchArgs("--kubeconfig", alice)...)
	if code != 4 || len(r.Steps) != 0 || !strings.Contains(r.Refused, "MCPRemoteProxy team-a/legacy: ") || r.Preflight == nil || !blockedBy(r.Preflight.Blockers) {
		t.Fatalf("switch exited %d, refused %q:\n%s", code, r.Refused, out)
	}
	if !k.ToolHiveRunning() || k.HivekeeperRunning() {
		t.Fatal("a refused switch changed which operator runs")
	}

	code, r, out = k.run(switchArgs("--kubeconfig", alice, "--allow-unmanaged", named)...)
	if code != 0 || r.Outcome == nil {
		t.Fatalf("switch --allow-unmanaged exited %d:\n%s", code, out)
	}
	if u := r.Preflight.Unmanaged; len(u) != 1 || u[0].Kind+"/"+u[0].Namespace+"/"+u[0].Name != named || !u[0].Allowed {
		t.Errorf("reported unmanaged: %+v", u)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.HasPrefix(n, "MCPRemoteProxy team-a/legacy is left as ToolHive's operator runs it and hivekeeper does not manage it (--allow-unmanaged): ")
	}) {
		t.Errorf("no note of the workload left unmanaged: %q", r.Notes)
	}
	if k.ToolHiveRunning() || !k.HivekeeperRunning() {
		t.Error("after the switch, ToolHive's operator runs or hivekeeper does not")
	}
	after, err := env.Kube.AppsV1().Deployments("team-a").Get(ctx, "legacy", metav1.GetOptions{})
	if err != nil || after.UID != proxy.UID || after.Generation != proxy.Generation {
		t.Errorf("the unmanaged workload's Deployment changed: %v", err)
	}
	logReport(t, r)
}
