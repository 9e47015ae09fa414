package conformance_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestVMCPDiscoveredMembership runs ToolHive's `vmcp serve` in discovered
// mode (outgoingAuth.source discovered, ToolHive's default) on what
// hivekeeper wrote, with the permissions of the ServiceAccount hivekeeper
// bound (the test API server authorizes with RBAC):
//
//   - config.yaml names no backend; vmcp lists its group's members
//     through the API (/readyz reports dynamic mode once its caches are
//     synced) and /status shows the group's MCPServer, whose own
//     MCPExternalAuthConfig's Secret vmcp read (a member whose auth
//     cannot be read is left out), and no call of vmcp's was refused;
//   - a member joining and one leaving reach vmcp within the running pod:
//     /status follows, and hivekeeper writes nothing for either — the
//     Deployment keeps its generation, so no pod would restart;
//   - the same changes to a vMCP in inline mode (config.yaml lists the
//     backends) rewrite config.yaml and roll its Deployment, once each.
//
// The cost of each change in both modes is logged: hivekeeper's writes by
// resource and verb, and the Deployment rollouts.
func TestVMCPDiscoveredMembership(t *testing.T) {
	env, ns := runtimeSetUp(t)
	applyTemplate(t, env, ns, "testdata/runtime/vmcp-discovered.yaml", nil)
	const disc, static = "disc-vmcp", "static-vmcp"

	var cfg struct {
		Backends     []any `json:"backends"`
		OutgoingAuth struct {
			Source string `json:"source"`
		} `json:"outgoingAuth"`
	}
	cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(disc))
	if err := yaml.Unmarshal([]byte(cm.Data[naming.VMCPConfigKey]), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.OutgoingAuth.Source != "discovered" || cfg.Backends != nil {
		t.Fatalf("config.yaml of %s: source %q, backends %v; want discovered and none:\n%s", disc, cfg.OutgoingAuth.Source, cfg.Backends, cm.Data[naming.VMCPConfigKey])
	}
	port, out := startVMCPOutput(t, env, ns, disc)
	waitServing(t, port)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitVMCPBackends(t, base, "disc-alpha")
	var ready struct{ Status, Mode string }
	getJSON(t, base+"/readyz", &ready)
	if ready.Status != "ready" || ready.Mode != "dynamic" {
		t.Errorf("/readyz: %+v, want ready in dynamic mode (vmcp discovers the members)", ready)
	}
	waitConfigMapHas(t, env, ns, static, "static-alpha")

	join := func(group string) func() {
		return func() { applyObject(t, env, ns, member(group+"-beta", group)) }
	}
	leave := func(group string) func() {
		return func() {
			if err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Delete(context.Background(), group+"-alpha", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	type change struct {
		name  string
		vmcp  string
		do    func()
		done  func() bool
		rolls int64
		// writes says whether children are written.
		writes bool
	}
	hasBackends := func(names ...string) func() bool {
		return func() bool { return slices.Equal(vmcpBackends(t, base), names) }
	}
	inConfig := func(name string, want bool) func() bool {
		return func() bool {
			cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(static))
			return strings.Contains(cm.Data[naming.VMCPConfigKey], "name: "+name) == want
		}
	}
	for _, c := range []change{
		{"discovered, a member joins", disc, join("disc"), hasBackends("disc-alpha", "disc-beta"), 0, false},
		{"discovered, a member leaves", disc, leave("disc"), hasBackends("disc-beta"), 0, false},
		{"inline, a member joins", static, join("static"), inConfig("static-beta", true), 1, true},
		{"inline, a member leaves", static, leave("static"), inConfig("static-alpha", false), 1, true},
	} {
		before, synced := costOf(t, env, ns, c.vmcp)
		c.do()
		framework.Eventually(t, 60*time.Second, func() (bool, error) {
			// The change reached vmcp (or config.yaml), and hivekeeper
			// synced the vMCP since: what it writes for the change is
			// written by then.
			return c.done() && syncs() > synced, nil
		}, "%s: the change to reach %s", c.name, c.vmcp)
		after := waitRolledOut(t, env, ns, c.vmcp, before, c.rolls)
		writes := diffWrites(before.writes, after.writes)
		t.Logf("%s: %d Deployment rollout(s), hivekeeper's writes %v", c.name, after.generation-before.generation, writes)
		// The vMCP's own status may change (an outgoing auth condition of
		// the member); its children may not, unless config.yaml lists the
		// members.
		children := slices.ContainsFunc(slices.Collect(maps.Keys(writes)), func(k string) bool { return !strings.Contains(k, "/status ") })
		if c.writes != children {
			t.Errorf("%s: hivekeeper's writes %v; want writes of children: %v", c.name, writes, c.writes)
		}
		if !c.writes && after.configVersion != before.configVersion {
			t.Errorf("%s: config.yaml rewritten", c.name)
		}
	}
	if log := out.String(); strings.Contains(log, "forbidden") {
		t.Errorf("a call of vmcp's was refused by the role hivekeeper bound:\n%s", log)
	}
}

// memberCost is what a membership change cost a vMCP: its Deployment's
// generation (one more per rollout), its ConfigMap's resourceVersion and
// the writes of hivekeeper's vMCP controller by resource, verb and
// outcome.
type memberCost struct {
	generation    int64
	configVersion string
	writes        map[string]float64
}

// costOf reads a vMCP's memberCost now, and the vMCP controller's syncs.
func costOf(t *testing.T, env *framework.Env, ns, name string) (memberCost, float64) {
	t.Helper()
	ctx := context.Background()
	dep, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, naming.VMCPConfigMapName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return memberCost{generation: dep.Generation, configVersion: cm.ResourceVersion, writes: controllerWrites(virtualmcpserver.Name)}, syncs()
}

// waitRolledOut waits until the vMCP's Deployment is rolls generations
// past before (none: it reads it once), and returns the cost then.
func waitRolledOut(t *testing.T, env *framework.Env, ns, name string, before memberCost, rolls int64) memberCost {
	t.Helper()
	var now memberCost
	framework.Eventually(t, 60*time.Second, func() (bool, error) {
		now, _ = costOf(t, env, ns, name)
		return now.generation >= before.generation+rolls, nil
	}, "the Deployment of %s to roll %d time(s)", name, rolls)
	if now.generation != before.generation+rolls {
		t.Errorf("the Deployment of %s rolled %d time(s), want %d", name, now.generation-before.generation, rolls)
	}
	return now
}

// syncs counts the vMCP controller's syncs so far.
func syncs() float64 {
	var n float64
	for _, v := range collect(metrics.ReconcileTotal, virtualmcpserver.Name, "result") {
		n += v
	}
	return n
}

// controllerWrites are the writes of controller so far, by resource, verb
// and outcome.
func controllerWrites(controller string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range collect(metrics.Writes, controller, "resource", "verb", "outcome") {
		out[k] = v
	}
	return out
}

// collect sums the counters of vec whose controller label is controller,
// keyed by the values of keys joined with spaces.
func collect(vec *prometheus.CounterVec, controller string, keys ...string) map[string]float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { vec.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range d.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["controller"] != controller {
			continue
		}
		var key []string
		for _, k := range keys {
			key = append(key, labels[k])
		}
		out[strings.Join(key, " ")] += d.GetCounter().GetValue()
	}
	return out
}

// diffWrites are the writes of after that were not there before.
func diffWrites(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if d := after[k] - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// vmcpBackends are the names of the backends vmcp's /status lists,
// sorted.
func vmcpBackends(t *testing.T, base string) []string {
	t.Helper()
	var status struct{ Backends []struct{ Name string } }
	getJSON(t, base+"/status", &status)
	var names []string
	for _, b := range status.Backends {
		names = append(names, b.Name)
	}
	slices.Sort(names)
	return names
}

// waitVMCPBackends waits until vmcp's /status lists exactly names.
func waitVMCPBackends(t *testing.T, base string, names ...string) {
	t.Helper()
	framework.Eventually(t, 60*time.Second, func() (bool, error) {
		return slices.Equal(vmcpBackends(t, base), names), nil
	}, "vmcp to list the backends %v", names)
}

// waitConfigMapHas waits until the config.yaml of the vMCP name names the
// backend backend.
func waitConfigMapHas(t *testing.T, env *framework.Env, ns, name, backend string) {
	t.Helper()
	framework.Eventually(t, 60*time.Second, func() (bool, error) {
		cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(name))
		return strings.Contains(cm.Data[naming.VMCPConfigKey], "name: "+backend), nil
	}, "config.yaml of %s to list %s", name, backend)
}

// member is an MCPServer of group.
func member(name, group string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "toolhive.stacklok.dev/v1beta1", "kind": "MCPServer",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"image": "ghcr.io/stackloklabs/gofetch/server:1.0.1", "groupRef": map[string]any{"name": group}},
	}}
}

// applyObject creates o in ns.
func applyObject(t *testing.T, env *framework.Env, ns string, o *unstructured.Unstructured) {
	t.Helper()
	if _, err := createStrict(env, ns, o); err != nil {
		t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}
