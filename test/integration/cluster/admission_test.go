package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// What the policy adds to the pod template of every Deployment hivekeeper
// writes, as a service mesh's or a security tool's admission webhook
// does.
const (
	injectedLabel      = "mesh.example.com/injected"
	injectedAnnotation = "mesh.example.com/config"
	sidecar            = "mesh-proxy"
)

// installMutatingPolicy creates a MutatingAdmissionPolicy, bound to
// namespace ns, that adds a label, an annotation and a sidecar container
// to the pod template of every Deployment labelled toolhive=true, on
// create and on update. It returns once the API server applies it.
func installMutatingPolicy(ctx context.Context, t *testing.T, env *framework.Env, ns string) {
	t.Helper()
	admission := env.Kube.AdmissionregistrationV1()
	name := "inject-" + ns
	policy := &admissionv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "toolhive",
				Expression: fmt.Sprintf(`object.metadata.?labels[%q].orValue("") == "true"`, naming.LabelToolhive),
			}},
			FailurePolicy:      ptr.To(admissionv1.Fail),
			ReinvocationPolicy: admissionv1.IfNeededReinvocationPolicy,
			Mutations: []admissionv1.Mutation{{
				PatchType: admissionv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionv1.ApplyConfiguration{Expression: fmt.Sprintf(`Object{
  spec: Object.spec{
    template: Object.spec.template{
      metadata: Object.spec.template.metadata{
        labels: {%q: "true"},
        annotations: {%q: "strict"}
      },
      spec: Object.spec.template.spec{
        containers: [Object.spec.template.spec.containers{name: %q, image: "registry.example.com/mesh-proxy:1.0"}]
      }
    }
  }
}`, injectedLabel, injectedAnnotation, sidecar)},
			}},
		},
	}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: name,
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}},
		},
	}
	_, err := admission.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	must(t, err)
	_, err = admission.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, err := range []error{
			admission.MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}),
			admission.MutatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting the policy: %v", err)
			}
		}
	})
	// The admission plugin learns of policies through an informer: a dry
	// run shows when it applies this one.
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{naming.LabelToolhive: "true"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
			},
		},
	}
	framework.Eventually(t, timeout, func() (bool, error) {
		got, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return injected(got) == "", nil
	}, "the mutating admission policy to apply")
}

// injected says what of the policy's additions the Deployment's pod
// template lacks ("" when it has them all).
func injected(d *appsv1.Deployment) string {
	var missing []string
	tpl := d.Spec.Template
	if tpl.Labels[injectedLabel] != "true" {
		missing = append(missing, "label")
	}
	if tpl.Annotations[injectedAnnotation] != "strict" {
		missing = append(missing, "annotation")
	}
	found := false
	for _, c := range tpl.Spec.Containers {
		found = found || c.Name == sidecar
	}
	if !found {
		missing = append(missing, "sidecar")
	}
	return strings.Join(missing, ", ")
}

// A MutatingAdmissionPolicy that adds a label, an annotation and a sidecar
// container to every proxy pod template (what ToolHive's vMCP controller
// answers with an endless update loop, ToolHive #5819) costs no write
// after the first sync, for MCPServer, MCPRemoteProxy and
// VirtualMCPServer: each Deployment is created once, never patched, rolls
// out with the sidecar beside the proxy, and resync after resync nothing
// is written.
func TestMutatingPolicyAdditionsCostNoWrite(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := testCtx(t)
	installMutatingPolicy(ctx, t, env, ns)
	writes := workloadtest.WritesTotal(t, workloadControllers...)
	env.StartControllers(t, appOptions(ns))
	for _, k := range kinds {
		k.create(ctx, t, env, ns, "m-"+strings.ToLower(k.kind))
	}
	for _, k := range kinds {
		d := waitReady(ctx, t, env, k, ns, "m-"+strings.ToLower(k.kind))
		if missing := injected(d); missing != "" {
			t.Errorf("%s: the policy's %s not in the pod template", k.kind, missing)
		}
		if d.Generation != 1 {
			t.Errorf("%s: Deployment at generation %d: written again after its creation", k.kind, d.Generation)
		}
	}
	delta := workloadtest.WritesBetween(writes, workloadtest.Quiesce(t, resync*3, timeout, workloadControllers...))
	for k, v := range delta {
		if strings.Contains(k, " deployments ") && !strings.Contains(k, " create ") {
			t.Errorf("Deployment writes besides the creates: %s = %v", k, v)
		}
	}
	t.Logf("writes from the start: %v", delta)
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*resync, workloadControllers...)
}
