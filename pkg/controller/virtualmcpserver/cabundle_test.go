package virtualmcpserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// CABundleRefValidated follows the CA bundle ConfigMap of the incoming
// OIDC configuration as ToolHive v0.63.0's operator reports it, with its
// reasons and messages: not found, then found without the key, then
// valid; it is advisory, so the vMCP is deployed throughout, and it goes
// when the configuration names no CA bundle. The ConfigMap is a user's,
// cached with its keys only (framework.TrimForeign), and each of its
// changes re-syncs the vMCP through the MCPOIDCConfig.
func TestCABundleRefValidated(t *testing.T) {
	cfg := newOIDCConfig("auth", "corp-ca")
	f := newFixture(t, newVMCP("agg", withOIDC("auth")), cfg, toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
	f.converge("agg")
	want := func(status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		v := f.get("agg")
		c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionCABundleRefValidated)
		if c == nil || c.Status != status || c.Reason != reason || c.Message != message {
			t.Fatalf("CABundleRefValidated: %+v, want %s %s %q", c, status, reason, message)
		}
		if _, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "agg", metav1.GetOptions{}); err != nil {
			t.Fatalf("the vMCP is not deployed: %v", err)
		}
	}
	want(metav1.ConditionFalse, thv1.ReasonCABundleRefNotFound, "CA bundle ConfigMap 'corp-ca' not found in namespace 'team-a'")
	if n := len(f.Events()); n != 0 {
		t.Errorf("%d events for an advisory condition", n)
	}

	drain := func() int { return len(drainQueue(f)) }
	drain()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "corp-ca"}, Data: map[string]string{"bundle.pem": "-----BEGIN CERTIFICATE-----"}}
	trimmed, _ := framework.TrimForeign(cm)
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "unrelated"}}
	h := f.c.caBundleHandler()
	h.OnAdd(other, false)
	if n := drain(); n != 0 {
		t.Errorf("an unrelated ConfigMap enqueued %d", n)
	}
	h.OnAdd(trimmed, false)
	if n := drain(); n != 1 {
		t.Errorf("the CA ConfigMap's creation enqueued %d", n)
	}
	newer := trimmed.(*corev1.ConfigMap).DeepCopy()
	newer.ResourceVersion = "2"
	h.OnUpdate(trimmed, newer)
	if n := drain(); n != 0 {
		t.Errorf("a change of values only enqueued %d", n)
	}
	newer.Data["ca.crt"] = ""
	h.OnUpdate(trimmed, newer)
	if n := drain(); n != 1 {
		t.Errorf("a new key enqueued %d", n)
	}
	if _, err := f.Kube.CoreV1().ConfigMaps(testNS).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ := f.sync("agg")
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	want(metav1.ConditionFalse, reasonCABundleRefInvalid, "Key 'ca.crt' not found in ConfigMap 'corp-ca'")

	cm.Data = map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----"}
	if _, err := f.Kube.CoreV1().ConfigMaps(testNS).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, _ = f.sync("agg")
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	want(metav1.ConditionTrue, thv1.ReasonCABundleRefValid, "CA bundle ConfigMap 'corp-ca' is valid (key: ca.crt)")
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Fatalf("converged: %s", wt.Describe(acts))
	}

	cfg = cfg.DeepCopy()
	cfg.Spec.Inline.CABundleRef = nil
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(testNS).Update(context.Background(), cfg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	f.converge("agg")
	if c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionCABundleRefValidated); c != nil {
		t.Errorf("CABundleRefValidated stays: %+v", c)
	}
}
