package virtualmcpserver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
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
	if n := len(f.Warnings()); n != 0 {
		t.Errorf("%d Warning events for an advisory condition", n)
	}

	drain := func() int { return len(drainQueue(f)) }
	drain()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "corp-ca"}, Data: map[string]string{"bundle.pem": "-----BEGIN CERTIFICATE-----"}}
	trimmed, _ := framework.TrimForeign(cm)
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "unrelated"}}
	h := f.c.CABundleHandler()
	h.OnAdd(other, false)
	if n := drain(); n != 0 {
		t.Errorf("an unrelated ConfigMap enqueued %d", n)
	}
	h.OnAdd(trimmed, false)
	if n := drain(); n != 1 {
		t.Errorf("the CA ConfigMap's creation enqueued %d", n)
	}
	// A rotated certificate under the same key: the values differ (as
	// they would in the cache of a ConfigMap cached whole), the keys do
	// not, and the condition cannot change.
	rotated := cm.DeepCopy()
	rotated.ResourceVersion = "2"
	rotated.Data["bundle.pem"] = "-----BEGIN CERTIFICATE----- rotated"
	h.OnUpdate(cm, rotated)
	if n := drain(); n != 0 {
		t.Errorf("a change of values only enqueued %d", n)
	}
	newer := trimmed.(*corev1.ConfigMap).DeepCopy()
	newer.ResourceVersion = "2"
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
	want(metav1.ConditionFalse, thv1.ReasonCABundleRefInvalid, "Key 'ca.crt' not found in ConfigMap 'corp-ca'")

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

// A change of the CA ConfigMap's keys re-syncs the vMCP even when their
// number stays the same: a key renamed, in data or in binaryData, or
// moved from one to the other, can make the referenced key appear or go.
func TestCABundleKeyRenameResyncs(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withOIDC("auth")), newOIDCConfig("auth", "corp-ca"), toolhivetest.NewGroup(testNS, testGroup))
	f.converge("agg")
	drainQueue(f)
	h := f.c.CABundleHandler()
	cm := func(data map[string]string, binary map[string][]byte) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "corp-ca"}, Data: data, BinaryData: binary}
	}
	pem := "-----BEGIN CERTIFICATE-----"
	for _, tc := range []struct {
		name     string
		old, cur *corev1.ConfigMap
		want     int
	}{
		{"data key renamed", cm(map[string]string{"bundle.pem": pem}, nil), cm(map[string]string{"ca.crt": pem}, nil), 1},
		{"binaryData key renamed", cm(nil, map[string][]byte{"bundle.der": {1}}), cm(nil, map[string][]byte{"ca.crt": {1}}), 1},
		{"key moved to binaryData", cm(map[string]string{"ca.crt": pem}, map[string][]byte{"x": {1}}), cm(map[string]string{"x": pem}, map[string][]byte{"ca.crt": {1}}), 1},
		{"binaryData value changed", cm(nil, map[string][]byte{"ca.crt": {1}}), cm(nil, map[string][]byte{"ca.crt": {2}}), 0},
	} {
		h.OnUpdate(tc.old, tc.cur)
		if n := len(drainQueue(f)); n != tc.want {
			t.Errorf("%s: enqueued %d, want %d", tc.name, n, tc.want)
		}
	}
}

// CABundleRefValidated's other verdicts, as ToolHive v0.63.0's operator
// gives them: a key in binaryData is found as well as one in data; an
// empty ConfigMap name is refused; so is a name too long for the volume
// name oidc-ca-bundle-<name> to be a DNS label (63 characters, so 48 for
// the name), while the longest name that fits is looked up.
func TestCABundleRefVerdicts(t *testing.T) {
	long := func(n int) string { return strings.Repeat("c", n) }
	for _, tc := range []struct {
		name    string
		ref     *thv1.ConfigMapKeyRef
		objs    []runtime.Object
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"key in binaryData", &thv1.ConfigMapKeyRef{Name: "corp-ca", Key: "ca.der"},
			[]runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "corp-ca"}, BinaryData: map[string][]byte{"ca.der": {0x30}}}},
			metav1.ConditionTrue, thv1.ReasonCABundleRefValid, "CA bundle ConfigMap 'corp-ca' is valid (key: ca.der)"},
		{"empty name", &thv1.ConfigMapKeyRef{Key: "ca.crt"}, nil,
			metav1.ConditionFalse, thv1.ReasonCABundleRefInvalid, "configMapRef.name must be specified"},
		{"longest name", &thv1.ConfigMapKeyRef{Name: long(48)}, nil,
			metav1.ConditionFalse, thv1.ReasonCABundleRefNotFound, "CA bundle ConfigMap '" + long(48) + "' not found in namespace 'team-a'"},
		{"name one too long", &thv1.ConfigMapKeyRef{Name: long(49)}, nil,
			metav1.ConditionFalse, thv1.ReasonCABundleRefInvalid,
			"configMapRef.name \"" + long(49) + "\" is too long (49 chars); maximum is 48 characters to fit in Kubernetes volume name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newOIDCConfig("auth", "corp-ca")
			cfg.Spec.Inline.CABundleRef.ConfigMapRef = tc.ref
			f := newFixture(t, append(tc.objs, newVMCP("agg", withOIDC("auth")), cfg, toolhivetest.NewGroup(testNS, testGroup))...)
			f.converge("agg")
			c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionCABundleRefValidated)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Fatalf("CABundleRefValidated: %+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
			if tc.ref.Name != "" && len(validation.IsDNS1123Label(wiring.CABundleVolumePrefix+tc.ref.Name)) != 0 && tc.reason != thv1.ReasonCABundleRefInvalid {
				t.Errorf("accepted %q, whose volume name is no DNS label", tc.ref.Name)
			}
		})
	}
}
