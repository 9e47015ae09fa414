package virtualmcpserver

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// withCompositeToolRefs names composite tool definitions in spec.config,
// where ToolHive keeps them.
func withCompositeToolRefs(raw string) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = &runtime.RawExtension{Raw: []byte(`{"compositeToolRefs":` + raw + `}`)}
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
	if cm.Annotations[thv1.AnnotationCompositeToolDefinitionHash] == "" {
		t.Errorf("config ConfigMap has no composite tool hash: %v", cm.Annotations)
	}
}

// A change of a referenced definition (its configHash) rolls the vMCP
// exactly once: one ConfigMap patch and one Deployment patch, then quiet.
func TestCompositeToolChangeRollsOnce(t *testing.T) {
	def := wt.NewCompositeTool(testNS, "deploy", "h1")
	f := newFixture(t, newVMCP("agg", withCompositeToolRefs(`[{"name":"deploy"}]`)),
		wt.NewGroup(testNS, testGroup), newMember("member", testGroup), def)
	f.converge("agg")

	def = def.DeepCopy()
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

// The resolved definitions reach the build inputs, sorted by name, and a
// server without references carries no hash annotation (its checksum is
// what it was before composite tools were served).
func TestCompositeToolsReachTheBuild(t *testing.T) {
	b, a := wt.NewCompositeTool(testNS, "b", "hb"), wt.NewCompositeTool(testNS, "a", "ha")
	in := inputs{Server: newVMCP("agg"), Image: testImage, Backends: []any{newMember("m", testGroup)}}
	plain, err := build(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Config.Annotations[thv1.AnnotationCompositeToolDefinitionHash]; ok {
		t.Errorf("annotation without references: %v", plain.Config.Annotations)
	}
	in.Refs.CompositeTools = map[string]*thv1.VirtualMCPCompositeToolDefinition{"a": a, "b": b}
	withTools, err := build(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Refs.CompositeTools["b"] = wt.NewCompositeTool(testNS, "b", "hb2")
	changed, err := build(in)
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := withTools.Config.Annotations[thv1.AnnotationCompositeToolDefinitionHash], changed.Config.Annotations[thv1.AnnotationCompositeToolDefinitionHash]
	if h1 == "" || h1 == h2 {
		t.Errorf("hash %q -> %q", h1, h2)
	}
	if plain.Deployment.Spec.Template.Annotations[workload.AnnotationVMCPConfigChecksum] == withTools.Deployment.Spec.Template.Annotations[workload.AnnotationVMCPConfigChecksum] {
		t.Error("the pod checksum does not cover the composite tools")
	}
}
