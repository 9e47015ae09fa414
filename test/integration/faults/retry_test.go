package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	loop "github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// The long refusals: a refusal outlasts the 15 retries (about 164 s) after
// which a failing key used to be dropped until its next event, which a
// cause outside the object never sends. Once it ends, the key must be
// retried within the backoff's cap. Both tests run in parallel with each
// other (after the package's other tests): about 6 minutes of wall time,
// most of it waiting. Like every test here they skip with -short.
const (
	refusal         = 240 * time.Second
	convergeSlack   = 30 * time.Second
	keysInBackoff   = "hivekeeper_keys_in_backoff"
	oldestFailing   = "hivekeeper_oldest_failing_key_seconds"
	refusedByPolicy = "faults.hivekeeper.test/refuse"
)

var mcpserverController = map[string]string{"controller": mcpserver.Name}

// holdRefusal waits until failures(m) first grows past its value in base,
// then for the refusal, and returns when the first failure was seen and
// the last scrape. While it waits, the server's key must be in backoff.
func holdRefusal(t *testing.T, hk *hivekeeper, base samples, failures func(samples) float64, what string) (time.Time, samples) {
	t.Helper()
	var first time.Time
	framework.Eventually(t, 30*time.Second, slowly(50*time.Millisecond, func() (bool, error) {
		m, err := hk.scrape()
		if err != nil {
			return false, err
		}
		first = time.Now()
		return failures(m) > failures(base), nil
	}), "the first refused %s", what)
	time.Sleep(refusal)
	m := hk.mustScrape(t)
	if keys := m.sum(keysInBackoff, mcpserverController); keys != 1 {
		t.Errorf("%s = %g during the refusal, want 1", keysInBackoff, keys)
	}
	// The first attempt may have failed a moment before it was seen.
	if oldest := m.sum(oldestFailing, mcpserverController); oldest < (refusal - 5*time.Second).Seconds() {
		t.Errorf("%s = %gs after a %v refusal", oldestFailing, oldest, refusal)
	}
	return first, m
}

// TestLongQuotaRefusalConverges: a ResourceQuota refuses the proxy
// Service for 4 minutes, then is deleted. No event reaches the MCPServer
// when a quota goes away; the retries alone must create the Service, within
// the backoff's cap of the quota's removal, and must back off meanwhile.
func TestLongQuotaRefusalConverges(t *testing.T) {
	t.Parallel()
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	quotas := env.Kube.CoreV1().ResourceQuotas(ns)
	quota, err := quotas.Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "services", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("1")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The test API server runs no quota controller: the usage is set by
	// hand, at the limit, so every Service is refused.
	quota.Status = corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("1")},
		Used: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("1")},
	}
	if _, err := quotas.UpdateStatus(ctx, quota, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	hk := startHivekeeper(t, "hivekeeper", env.Kubeconfig, ns)
	hk.waitReady(t)
	failedCreates := func(m samples) float64 {
		return m.sum(writesTotal, map[string]string{"resource": "services", "verb": "create", "outcome": "error"})
	}
	base := hk.mustScrape(t)
	name := createServers(t, env, ns, "refused", 1)[0]
	first, m := holdRefusal(t, hk, base, failedCreates, "Service create")
	refusedFor := time.Since(first)
	attempts := int(failedCreates(m) - failedCreates(base))
	if bound := backoffAttempts(refusedFor) + childEventSyncs; attempts > bound {
		t.Errorf("%d Service create attempts in %v, want at most %d: the retries do not back off", attempts, refusedFor.Round(time.Second), bound)
	}

	if err := quotas.Delete(ctx, quota.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lifted := time.Now()
	svc := naming.MCPServerServiceName(name)
	framework.Eventually(t, loop.MaxRetryDelay+convergeSlack, slowly(time.Second, func() (bool, error) {
		if _, err := getService(env, ns, svc); err != nil {
			return false, err
		}
		c, err := observe(env, ns)
		if err != nil {
			return false, err
		}
		return c.converged(name), fmt.Errorf("MCPServer %s not converged", name)
	}), "MCPServer %s to converge within the backoff's cap of the quota's removal", name)
	after := time.Since(lifted)
	framework.Eventually(t, 10*time.Second, slowly(100*time.Millisecond, func() (bool, error) {
		m, err := hk.scrape()
		if err != nil {
			return false, err
		}
		return m.sum(keysInBackoff, mcpserverController) == 0 && m.sum(oldestFailing, mcpserverController) == 0,
			fmt.Errorf("%s %g, %s %g", keysInBackoff, m.sum(keysInBackoff, mcpserverController), oldestFailing, m.sum(oldestFailing, mcpserverController))
	}), "no key in backoff once converged")
	t.Logf("%d refused Service creates in %v; converged %v after the quota was deleted", attempts, refusedFor.Round(time.Second), after.Round(time.Second))
	recordFault(t,
		fmt.Sprintf("retried with backoff (capped at %v) for as long as it was refused; %s showed the key failing for %.0f s; converged %v after the quota was deleted",
			loop.MaxRetryDelay, oldestFailing, m.sum(oldestFailing, mcpserverController), after.Round(time.Second)),
		fmt.Sprintf("%d refused Service creates in %v (backoff allows %d, plus %d from child events)",
			attempts, refusedFor.Round(time.Second), backoffAttempts(refusedFor), childEventSyncs))
}

// refuseDeletingServers installs a ValidatingAdmissionPolicy that refuses
// every update of an MCPServer in ns that is being deleted (so the release
// of its finalizer), or that carries the refusedByPolicy label, by which a
// dry run of probe tells when the API server enforces it. It returns a
// function that lifts the policy.
func refuseDeletingServers(t *testing.T, env *framework.Env, ns, probe string) func() {
	t.Helper()
	ctx := context.Background()
	vap := env.Kube.AdmissionregistrationV1()
	name := "refuse-deleting-servers-" + ns
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
				Expression: fmt.Sprintf("!has(object.metadata.deletionTimestamp) && !(has(object.metadata.labels) && %q in object.metadata.labels)", refusedByPolicy),
				Message:    "updates of a deleting MCPServer are refused by the test",
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := vap.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
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
	probePatch := fmt.Sprintf(`{"metadata":{"labels":{%q:"probe"}}}`, refusedByPolicy)
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Patch(ctx, probe, types.MergePatchType, []byte(probePatch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	}, "the admission policy to be enforced")
	return lift
}

// TestLongFinalizerRefusalConverges: the release of a deleted MCPServer's
// finalizer is refused by an admission policy for 4 minutes, then the
// policy is removed. Nothing sends the server an event when a policy goes
// away; the retries alone must release it, within the backoff's cap.
func TestLongFinalizerRefusalConverges(t *testing.T) {
	t.Parallel()
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	hk := startHivekeeper(t, "hivekeeper", env.Kubeconfig, ns)
	hk.waitReady(t)
	names := createServers(t, env, ns, "held", 1)
	name := names[0]
	waitConverged(t, env, ns, names)
	lift := refuseDeletingServers(t, env, ns, name)

	refusedPatches := func(m samples) float64 {
		return m.sum(writesTotal, map[string]string{"resource": "mcpservers", "verb": "patch", "outcome": "error"})
	}
	base := hk.mustScrape(t)
	if err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	first, m := holdRefusal(t, hk, base, refusedPatches, "finalizer release")
	refusedFor := time.Since(first)
	attempts := int(refusedPatches(m) - refusedPatches(base))
	if bound := backoffAttempts(refusedFor) + childEventSyncs; attempts > bound {
		t.Errorf("%d finalizer releases in %v, want at most %d: the retries do not back off", attempts, refusedFor.Round(time.Second), bound)
	}
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the MCPServer is gone while its finalizer's release was refused: %v", err)
	}

	lift()
	lifted := time.Now()
	framework.Eventually(t, loop.MaxRetryDelay+convergeSlack, slowly(time.Second, func() (bool, error) {
		_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there: %v", err)
	}), "MCPServer %s to be released within the backoff's cap of the policy's removal", name)
	after := time.Since(lifted)
	t.Logf("%d refused finalizer releases in %v; released %v after the policy was lifted", attempts, refusedFor.Round(time.Second), after.Round(time.Second))
	recordFault(t,
		fmt.Sprintf("retried with backoff (capped at %v) for as long as it was refused; %s showed the key failing for %.0f s; the finalizer was released %v after the policy was lifted",
			loop.MaxRetryDelay, oldestFailing, m.sum(oldestFailing, mcpserverController), after.Round(time.Second)),
		fmt.Sprintf("%d refused finalizer releases in %v (backoff allows %d, plus %d from child events)",
			attempts, refusedFor.Round(time.Second), backoffAttempts(refusedFor), childEventSyncs))
}
