package mcpremoteproxy

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

func withTemplate(raw string) func(*thv1.MCPRemoteProxy) {
	return func(p *thv1.MCPRemoteProxy) { p.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(raw)} }
}

// A template converges, is reported valid, and then costs nothing; an
// edit rolls the Deployment once; removing the template removes what it
// added (sent as null) and its hash, once.
func TestPodTemplateRollsOnceAndIsRemovedCleanly(t *testing.T) {
	f := newFixture(t, newProxy("remote", withTemplate(toolhivetest.RealisticProxyPodTemplate)))
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create serviceaccounts", "create rolebindings",
		"create configmaps", "create services", "create deployments", "patch mcpremoteproxies/status")
	c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionPodTemplateValid)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != thv1.ReasonPodTemplateValid {
		t.Errorf("PodTemplateValid = %+v", c)
	}
	f.converge("remote")
	for range 2 {
		f.ApplyServerBehaviour()
		f.Refresh()
		acts, _ = f.sync("remote")
		wt.AssertActions(t, acts)
	}

	// An edit: one Deployment patch, then nothing.
	edited := strings.Replace(toolhivetest.RealisticProxyPodTemplate, `"pool": "mcp"`, `"pool": "mcp-large"`, 1)
	f.update("remote", withTemplate(edited))
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts, "patch deployments")
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts)
	if got := f.deployment("remote").Spec.Template.Spec.NodeSelector["pool"]; got != "mcp-large" {
		t.Errorf("nodeSelector pool = %q after the edit", got)
	}

	// A live edit of a scheduling field is put back, as ToolHive does.
	live := f.deployment("remote")
	live.Spec.Template.Spec.Tolerations = nil
	if _, err := f.Kube.AppsV1().Deployments(testNS).Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts, "patch deployments")
	f.Refresh()
	if got := f.deployment("remote").Spec.Template.Spec.Tolerations; len(got) != 2 {
		t.Errorf("tolerations not restored: %v", got)
	}

	// The template removed: one patch, which takes away what only the
	// template set and the hash, then nothing.
	f.update("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.PodTemplateSpec = nil })
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts, "patch deployments", "patch mcpremoteproxies/status")
	if c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionPodTemplateValid); c != nil {
		t.Errorf("PodTemplateValid kept without a template: %+v", c)
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, _ = f.sync("remote")
	wt.AssertActions(t, acts)
	dep := f.deployment("remote")
	ps := dep.Spec.Template.Spec
	if _, ok := dep.Annotations[naming.AnnotationPodTemplateSpecHash]; ok {
		t.Error("hash annotation kept without a template")
	}
	if len(ps.NodeSelector) != 0 || len(ps.Tolerations) != 0 || ps.Affinity != nil || ps.PriorityClassName != "" ||
		len(ps.InitContainers) != 0 || len(ps.Containers) != 1 || len(ps.TopologySpreadConstraints) != 0 {
		t.Errorf("template fields left behind: %+v", ps)
	}
	if got := ptr.Deref(ps.SecurityContext.RunAsUser, 0); got != wiring.RunnerUID {
		t.Errorf("pod runAsUser = %d, want the restricted default back", got)
	}
}

// A template no pod can be built from: PodTemplateValid=False, Ready=False,
// one Warning event, and nothing created; an existing Deployment is left
// exactly as it is.
func TestInvalidPodTemplateBlocksTheDeployment(t *testing.T) {
	invalid := map[string]string{
		"wrong type":          `{"spec":{"containers":"toolhive"}}`,
		"selector label":      `{"metadata":{"labels":{"app":"other"}}}`,
		"not an object value": `{"spec":{"nodeSelector":["a"]}}`,
	}
	for name, raw := range invalid {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, newProxy("remote", withTemplate(raw)))
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
			assertTemplateInvalid(t, f)

			// A working proxy whose template is edited into an invalid one
			// keeps running as it was.
			f = newFixture(t, newProxy("remote", withTemplate(`{"spec":{"nodeSelector":{"pool":"mcp"}}}`)))
			f.converge("remote")
			before := f.deployment("remote")
			f.update("remote", withTemplate(raw))
			acts, _ = f.sync("remote")
			wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
			assertTemplateInvalid(t, f)
			if after := f.deployment("remote"); after.ResourceVersion != before.ResourceVersion {
				t.Error("the Deployment was written")
			}
			f.Refresh()
			acts, _ = f.sync("remote")
			wt.AssertActions(t, acts)
		})
	}
}

func assertTemplateInvalid(t *testing.T, f *fixture) {
	t.Helper()
	conds := f.get("remote").Status.Conditions
	c := meta.FindStatusCondition(conds, thv1.ConditionPodTemplateValid)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonPodTemplateInvalid || !strings.HasPrefix(c.Message, "spec.podTemplateSpec: ") {
		t.Errorf("PodTemplateValid = %+v", c)
	}
	if r := meta.FindStatusCondition(conds, thv1.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v", r)
	}
	if p := f.get("remote").Status.Phase; p != thv1.MCPRemoteProxyPhaseFailed {
		t.Errorf("phase %q", p)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonPodTemplateInvalid) {
		t.Errorf("events %q, want one Warning", evs)
	}
}

// A template may not hand the pod another workload's account, any more
// than spec.serviceAccount may; this proxy's own runner account is fine.
func TestPodTemplateServiceAccountIsChecked(t *testing.T) {
	f := newFixture(t, newProxy("remote", withTemplate(`{"spec":{"serviceAccountName":"fetch-proxy-runner"}}`)),
		toolhivetest.ManagedServiceAccount(testNS, "fetch-proxy-runner", thv1.KindMCPServer, "fetch"))
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionReady)
	if c == nil || c.Reason != thv1.ReasonServiceAccountNotAllowed || !strings.HasPrefix(c.Message, "spec.podTemplateSpec.spec.serviceAccountName: ") {
		t.Errorf("Ready = %+v", c)
	}

	f = newFixture(t, newProxy("remote", withTemplate(`{"spec":{"serviceAccountName":"mine"}}`)))
	f.converge("remote")
	if sa := f.deployment("remote").Spec.Template.Spec.ServiceAccountName; sa != "mine" {
		t.Errorf("serviceAccountName = %q, want the template's (ToolHive's merge)", sa)
	}
}

// The template is merged into the proxy pod hivekeeper writes, so one that
// reaches the node is refused whatever the admission policy says: the
// status says so, one Warning event names the field, the running
// Deployment is not touched, and the refusal is not retried.
func TestPodTemplateMayNotReachTheNode(t *testing.T) {
	for _, tc := range wt.RefusedPodTemplates {
		t.Run(tc.Name, func(t *testing.T) {
			f := newFixture(t, newProxy("remote"))
			f.converge("remote")
			f.Events()
			f.update("remote", withTemplate(tc.Template))
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatalf("a refusal is not retried: %v", err)
			}
			f.AssertRefusedPod(t, acts, "mcpremoteproxies", f.get("remote").Status.Conditions,
				thv1.ConditionPodTemplateValid, thv1.ReasonPodSecurityNotAllowed, tc.Field)
			f.Refresh()
			acts, _ = f.sync("remote")
			wt.AssertActions(t, acts)
		})
	}
}
