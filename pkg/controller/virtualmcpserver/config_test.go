package virtualmcpserver

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// TestToolConfigChangeRollsOnce: a change of a referenced MCPToolConfig
// rewrites config.yaml and rolls the vMCP once (the checksum on the pod
// template); the next sync writes nothing.
func TestToolConfigChangeRollsOnce(t *testing.T) {
	objs := append(refObjects(), newVMCP("agg", withRefs), toolhivetest.NewGroup(testNS, testGroup),
		newMember("alpha", testGroup), newMember("zeta", testGroup))
	f := newFixture(t, objs...)
	f.converge("agg")
	ctx := context.Background()
	tc, err := f.Toolhive.ToolhiveV1beta1().MCPToolConfigs(testNS).Get(ctx, "tools", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tc = tc.DeepCopy()
	tc.Spec.ToolsFilter = []string{"fetch", "search"}
	tc.Status.ConfigHash = "hash-tools-2"
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPToolConfigs(testNS).Update(ctx, tc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	cm, _ := f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
	if !strings.Contains(cm.Data[naming.VMCPConfigKey], "- search") {
		t.Errorf("the new filter is not in config.yaml:\n%s", cm.Data[naming.VMCPConfigKey])
	}
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
	if dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] != cm.Annotations[schema.ChecksumAnnotation] {
		t.Errorf("the pod template's checksum does not follow the config")
	}
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Errorf("second sync wrote: %s", wt.Describe(acts))
	}
}

// TestMissingReferenceWaits: a missing MCPExternalAuthConfig keeps the
// vMCP Pending with the reference's condition naming it; nothing is
// written but the status.
func TestMissingReferenceWaits(t *testing.T) {
	objs := append(refObjects()[:4], newVMCP("agg", withRefs), toolhivetest.NewGroup(testNS, testGroup), newMember("alpha", testGroup))
	f := newFixture(t, objs...)
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertNoActionOn(t, acts, "configmaps")
	wt.AssertNoActionOn(t, acts, "deployments")
	v := f.get("agg")
	c := findCondition(v.Status.Conditions, thv1.ConditionExternalAuthConfigValidated)
	if v.Status.Phase != thv1.VirtualMCPServerPhasePending || c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, `"header"`) {
		t.Errorf("status %+v", v.Status)
	}
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
