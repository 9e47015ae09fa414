package virtualmcpserver

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// A missing or invalid composite tool definition is a condition and a
// Pending server with nothing written but the status; once the definitions
// are there and valid the vMCP is built, and a second sync writes nothing.
func TestCompositeToolRefsWaitThenConverge(t *testing.T) {
	invalid := toolhivetest.NewCompositeTool(testNS, "x-broken", "h-x")
	invalid.Status.Conditions[0].Status = metav1.ConditionFalse
	f := newFixture(t, newVMCP("agg", withCompositeToolRefs(`[{"name":"deploy"},{"name":"x-broken"}]`)),
		toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup), invalid)

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
			toolhivetest.NewCompositeTool(testNS, "deploy", "h-deploy"), metav1.CreateOptions{}); err != nil && want == thv1.ReasonCompositeToolRefNotFound {
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
	if !strings.Contains(cm.Data[naming.VMCPConfigKey], "name: deploy") || !strings.Contains(cm.Data[naming.VMCPConfigKey], "name: x-broken") {
		t.Errorf("config.yaml lacks the referenced tools:\n%s", cm.Data[naming.VMCPConfigKey])
	}
}

// A change of a referenced definition (its spec, and so its configHash)
// rolls the vMCP exactly once: one ConfigMap patch and one Deployment
// patch, then quiet.
func TestCompositeToolChangeRollsOnce(t *testing.T) {
	def := toolhivetest.NewCompositeTool(testNS, "deploy", "h1")
	f := newFixture(t, newVMCP("agg", withCompositeToolRefs(`[{"name":"deploy"}]`)),
		toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup), def)
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
