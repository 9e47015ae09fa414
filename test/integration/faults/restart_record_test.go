package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// denyRestartRecords installs a ValidatingAdmissionPolicy that rejects any
// MCPServer update in ns carrying the last-processed-restart annotation,
// and waits until the API server enforces it. It returns a function that
// lifts the policy.
func denyRestartRecords(t *testing.T, env *framework.Env, ns, probe string) func() {
	t.Helper()
	ctx := context.Background()
	vap := env.Kube.AdmissionregistrationV1()
	name := "deny-restart-records-" + ns
	fail := admissionv1.Fail
	if _, err := vap.ValidatingAdmissionPolicies().Create(ctx, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{
						APIGroups:   []string{thv1.SchemeGroupVersion.Group},
						APIVersions: []string{thv1.SchemeGroupVersion.Version},
						Resources:   []string{"mcpservers"},
					},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf("!has(object.metadata.annotations) || !(%q in object.metadata.annotations)", thv1.AnnotationLastProcessedRestart),
				Message:    "restart records are refused by the test",
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	if _, err := vap.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lifted := false
	lift := func() {
		if lifted {
			return
		}
		lifted = true
		_ = vap.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = vap.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.Cleanup(lift)
	// The API server picks policies up asynchronously: probe with a dry
	// run until it refuses.
	probePatch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"probe"}}}`, thv1.AnnotationLastProcessedRestart)
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Patch(ctx, probe, types.MergePatchType, []byte(probePatch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	}, "the admission policy to be enforced")
	return lift
}

// TestRestartRecordFailureIsNotReapplied: a rolling restart stamps the
// Deployment, then records the request on the MCPServer. When the record
// fails (a 409 from a racing writer, a webhook, an outage) the retry must
// not stamp the Deployment again with the same value: that write changes
// nothing and is counted as churn. The record is made to fail
// deterministically with an admission policy, then allowed.
func TestRestartRecordFailureIsNotReapplied(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	hk := startHivekeeper(t, "hivekeeper", env.Kubeconfig, ns)
	hk.waitReady(t)
	names := createServers(t, env, ns, "restart", 1)
	name := names[0]
	waitConverged(t, env, ns, names)
	lift := denyRestartRecords(t, env, ns, name)

	base := hk.mustScrape(t)
	depPatches := func(m samples) float64 {
		return m.sum(writesTotal, map[string]string{"resource": "deployments", "verb": "patch"})
	}
	recordErrors := func(m samples) float64 {
		return m.sum(writesTotal, map[string]string{"resource": "mcpservers", "verb": "patch", "outcome": "error"})
	}
	restartAt := time.Now().UTC().Format(time.RFC3339)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, thv1.AnnotationRestartedAt, restartAt)
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Let the record fail a few times (the retries back off from 5ms).
	framework.Eventually(t, 30*time.Second, slowly(50*time.Millisecond, func() (bool, error) {
		m, err := hk.scrape()
		if err != nil {
			return false, err
		}
		return recordErrors(m)-recordErrors(base) >= 4, nil
	}), "hivekeeper to try recording the restart a few times")
	lift()
	framework.Eventually(t, 30*time.Second, slowly(100*time.Millisecond, func() (bool, error) {
		s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Annotations[thv1.AnnotationLastProcessedRestart] == restartAt, nil
	}), "the restart to be recorded once the policy is lifted")
	if d := getDeployment(t, env, ns, name); d.Spec.Template.Annotations[thv1.AnnotationRestartedAt] != restartAt {
		t.Errorf("Deployment template restarted-at = %q, want %q", d.Spec.Template.Annotations[thv1.AnnotationRestartedAt], restartAt)
	}
	time.Sleep(time.Second) // anything still in flight shows up in the counts
	m := hk.mustScrape(t)
	t.Logf("record attempts refused: %g; Deployment patches: %g; churn: %s",
		recordErrors(m)-recordErrors(base), depPatches(m)-depPatches(base), m.series(churnTotal, all))
	// Every refused record is followed by a retry. Re-stamping on each
	// retry gives at least as many Deployment patches as refusals (5 or
	// more here). One repeat is tolerated: a retry 5ms after the first
	// stamp may run before the watch delivered the stamped Deployment.
	if got := depPatches(m) - depPatches(base); got > 2 {
		t.Errorf("the restart patched the Deployment %g times, want 1 (2 at most if a retry beat the watch)", got)
	}
	if churn := m.sum(churnTotal, all); churn > 1 {
		t.Errorf("churn writes %g (%s), want 0 (1 at most if a retry beat the watch)", churn, m.series(churnTotal, all))
	}
	recordFault(t,
		"the restart was carried out once and recorded once the policy was lifted",
		fmt.Sprintf("%g refused records (retried with backoff); %g Deployment patch; churn %g",
			recordErrors(m)-recordErrors(base), depPatches(m)-depPatches(base), m.sum(churnTotal, all)))
}
