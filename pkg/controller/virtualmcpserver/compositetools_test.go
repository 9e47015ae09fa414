package virtualmcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// withCompositeToolRefs names composite tool definitions in spec.config,
// where ToolHive keeps them.
func withCompositeToolRefs(raw string) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = wt.Decode[thv1.VirtualMCPConfig](`{"compositeToolRefs":` + raw + `}`)
	}
}

// A missing or invalid composite tool definition is a condition and a
// Pending server with nothing written but the status; once the definitions
// are there and valid the vMCP is built, and a second sync writes nothing.
func TestCompositeToolRefsWaitThenConverge(t *testing.T) {
	invalid := wt.NewCompositeTool(testNS, "x-broken", "h-x")
	invalid.Status.Conditions[0].Status = metav1.ConditionFalse
	f := newFixture(t, newVMCP("agg", withCompositeToolRefs(`[{"name":"deploy"},{"name":"x-broken"}]`)),
		wt.NewGroup(testNS, testGroup), newMember("member", testGroup), invalid)

	for _, want := range []string{thv1.ReasonCompositeToolRefNotFound, thv1.ReasonCompositeToolRefInvalid} {
		acts, err := f.sync("agg")
		if err != nil {
			t.Fatal(err)
		}
		wt.AssertActions(t, acts, "patch virtualmcpservers/status")
		got := f.get("agg")
		cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionCompositeToolRefsValidated)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != want {
			t.Fatalf("want %s, conditions %+v", want, got.Status.Conditions)
		}
		if ready := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); got.Status.Phase != thv1.VirtualMCPServerPhasePending ||
			ready == nil || ready.Reason != thv1.ReasonWaitingForCompositeToolRefs {
			t.Fatalf("phase %s, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		f.Refresh()
		acts, _ = f.sync("agg")
		wt.AssertActions(t, acts)
		// The missing one appears; the invalid one is reported next.
		if _, err := f.Toolhive.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions(testNS).Create(context.Background(),
			wt.NewCompositeTool(testNS, "deploy", "h-deploy"), metav1.CreateOptions{}); err != nil && want == thv1.ReasonCompositeToolRefNotFound {
			t.Fatal(err)
		}
		f.Refresh()
	}

	fixed := invalid.DeepCopy()
	fixed.Status.Conditions[0].Status = metav1.ConditionTrue
	if _, err := f.Toolhive.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions(testNS).Update(context.Background(), fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	f.converge("agg")
	got := f.get("agg")
	if cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionCompositeToolRefsValidated); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("conditions %+v", got.Status.Conditions)
	}
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), "agg-vmcp-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data[workload.VMCPConfigKey], "name: deploy") || !strings.Contains(cm.Data[workload.VMCPConfigKey], "name: x-broken") {
		t.Errorf("config.yaml lacks the referenced tools:\n%s", cm.Data[workload.VMCPConfigKey])
	}
}

// A change of a referenced definition (its spec, and so its configHash)
// rolls the vMCP exactly once: one ConfigMap patch and one Deployment
// patch, then quiet.
func TestCompositeToolChangeRollsOnce(t *testing.T) {
	def := wt.NewCompositeTool(testNS, "deploy", "h1")
	f := newFixture(t, newVMCP("agg", withCompositeToolRefs(`[{"name":"deploy"}]`)),
		wt.NewGroup(testNS, testGroup), newMember("member", testGroup), def)
	f.converge("agg")

	def = def.DeepCopy()
	def.Spec.Description = "changed"
	def.Status.ConfigHash = "h2"
	if _, err := f.Toolhive.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions(testNS).Update(context.Background(), def, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, _ = f.sync("agg")
	wt.AssertActions(t, acts)
}

// The referenced definitions follow the inline composite tools in
// config.yaml, in compositeToolRefs order, with the step defaults; the
// references stay as written; a server without any renders neither key.
func TestCompositeToolsRendered(t *testing.T) {
	b, a := wt.NewCompositeTool(testNS, "b", "hb"), wt.NewCompositeTool(testNS, "a", "ha")
	in := inputs{Server: newVMCP("agg"), Image: testImage, Backends: []any{newMember("m", testGroup)}}
	plain, err := build(in)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := decodeRendered(t, plain); cfg["compositeTools"] != nil || cfg["compositeToolRefs"] != nil {
		t.Errorf("composite tools without any: %v", cfg)
	}
	in.Server = newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = wt.Decode[thv1.VirtualMCPConfig](`{"compositeTools":[{"name":"inline","steps":[{"id":"s","tool":"m.echo"}]}],` +
			`"compositeToolRefs":[{"name":"b"},{"name":"a"}]}`)
	})
	in.Refs.CompositeTools = map[string]*thv1.VirtualMCPCompositeToolDefinition{"a": a, "b": b}
	withTools, err := build(in)
	if err != nil {
		t.Fatal(err)
	}
	cfg := decodeRendered(t, withTools)
	tools, _ := cfg["compositeTools"].([]any)
	var names []string
	for _, tool := range tools {
		m := tool.(map[string]any)
		names = append(names, m["name"].(string))
		step := m["steps"].([]any)[0].(map[string]any)
		if step["type"] != "tool" {
			t.Errorf("tool %s: step not defaulted: %v", m["name"], step)
		}
	}
	if want := []string{"inline", "b", "a"}; !slices.Equal(names, want) {
		t.Errorf("composite tools %q, want %q", names, want)
	}
	if refs, _ := cfg["compositeToolRefs"].([]any); len(refs) != 2 {
		t.Errorf("compositeToolRefs %v", cfg["compositeToolRefs"])
	}
	if plain.Deployment.Spec.Template.Annotations[workload.AnnotationVMCPConfigChecksum] == withTools.Deployment.Spec.Template.Annotations[workload.AnnotationVMCPConfigChecksum] {
		t.Error("the pod checksum does not cover the composite tools")
	}

	// A referenced tool with an inline tool's name is refused, as
	// ToolHive's converter refuses it.
	in.Refs.CompositeTools["a"] = wt.NewCompositeTool(testNS, "inline", "hi")
	if _, err := build(in); err == nil || !strings.Contains(err.Error(), `duplicate composite tool name "inline"`) {
		t.Errorf("duplicate name: %v", err)
	}
}

// decodeRendered is the config.yaml of a build, decoded.
func decodeRendered(t *testing.T, c *childSet) map[string]any {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(c.Config.Data[workload.VMCPConfigKey]), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}
