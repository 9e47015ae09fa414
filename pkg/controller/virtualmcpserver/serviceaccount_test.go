package virtualmcpserver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// An account named before it exists is allowed; when another workload's
// sync then creates an account of that name, the vMCP naming it is
// re-synced and refused, and when the account goes the refusal is lifted.
// Without the ServiceAccount handler (and its index) the vMCP would run as
// the other workload's account until its own next change.
func TestNamedServiceAccountAppearingResyncs(t *testing.T) {
	other := naming.VMCPServiceAccountName("other")
	for _, tc := range []struct {
		name, field string
		mut         func(*thv1.VirtualMCPServer)
	}{
		{"podTemplateSpec", "spec.podTemplateSpec.spec.serviceAccountName", func(v *thv1.VirtualMCPServer) {
			v.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(`{"spec":{"serviceAccountName":"` + other + `"}}`)}
		}},
		{"serviceAccount", "spec.serviceAccount", func(v *thv1.VirtualMCPServer) { v.Spec.ServiceAccount = ptr.To(other) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newVMCP("agg", tc.mut), newVMCP("bystander"), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
			f.converge("agg")
			if w := f.Warnings(); len(w) != 0 {
				t.Fatalf("an account that does not exist yet: %q", w)
			}
			drainQueue(f)

			// The other vMCP's sync creates its account.
			sa := toolhivetest.ManagedServiceAccount(testNS, other, thv1.KindVirtualMCPServer, "other")
			if _, err := f.Kube.CoreV1().ServiceAccounts(testNS).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.Refresh()
			h := f.c.ServiceAccountHandler()
			h.OnAdd(sa, false)
			if got := drainQueue(f); len(got) != 1 || got[0] != testNS+"/agg" {
				t.Fatalf("the account's creation enqueued %q, want only %s/agg", got, testNS)
			}
			acts, err := f.sync("agg")
			if err != nil {
				t.Fatalf("a refusal is not retried: %v", err)
			}
			wt.AssertActions(t, acts, "patch virtualmcpservers/status")
			c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonServiceAccountNotAllowed || !strings.HasPrefix(c.Message, tc.field+": ") {
				t.Fatalf("Ready %+v, want False %s naming %s", c, thv1.ReasonServiceAccountNotAllowed, tc.field)
			}
			f.Refresh()

			// A change that keeps the owner (a pull secret added) is
			// nothing to the namers.
			withSecret := sa.DeepCopy()
			withSecret.ResourceVersion = "2"
			withSecret.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
			h.OnUpdate(sa, withSecret)
			if got := drainQueue(f); len(got) != 0 {
				t.Fatalf("an update keeping the owner enqueued %q", got)
			}

			// The account goes: the refusal is lifted.
			if err := f.Kube.CoreV1().ServiceAccounts(testNS).Delete(context.Background(), other, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			f.Refresh()
			h.OnDelete(withSecret)
			if got := drainQueue(f); len(got) != 1 || got[0] != testNS+"/agg" {
				t.Fatalf("the account's deletion enqueued %q, want only %s/agg", got, testNS)
			}
			f.converge("agg")
			if c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionReady); c == nil || c.Reason == thv1.ReasonServiceAccountNotAllowed {
				t.Fatalf("Ready %+v after the account went", c)
			}
		})
	}
}
