package virtualmcpserver

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// The podTemplateSpec is merged into the vMCP pod hivekeeper writes, so a
// template that reaches the node or names another workload's account is
// refused whatever the admission policy says: the status says so, one
// Warning event names the field, the running Deployment is not touched,
// and the refusal is not retried.
func TestPodTemplateMayNotReachTheNode(t *testing.T) {
	type refusal struct {
		template, condition, reason, field string
	}
	cases := map[string]refusal{
		"another workload's account": {`{"spec":{"serviceAccountName":"fetch-proxy-runner"}}`, thv1.ConditionReady,
			thv1.ReasonServiceAccountNotAllowed, "spec.podTemplateSpec.spec.serviceAccountName"},
	}
	for _, tc := range wt.RefusedPodTemplates {
		cases[tc.Name] = refusal{tc.Template, thv1.ConditionPodTemplateValid, thv1.ReasonPodSecurityNotAllowed, tc.Field}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, newVMCP("agg"), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup),
				toolhivetest.ManagedServiceAccount(testNS, "fetch-proxy-runner", thv1.KindMCPServer, "fetch"))
			f.converge("agg")
			f.Events()
			f.update("agg", func(v *thv1.VirtualMCPServer) {
				v.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(tc.template)}
			})
			acts, err := f.sync("agg")
			if err != nil {
				t.Fatalf("a refusal is not retried: %v", err)
			}
			f.AssertRefusedPod(t, acts, "virtualmcpservers", f.get("agg").Status.Conditions, tc.condition, tc.reason, tc.field)
			f.Refresh()
			acts, _ = f.sync("agg")
			wt.AssertActions(t, acts)
		})
	}

	// Its own account, which hivekeeper made for it, is fine.
	f := newFixture(t, newVMCP("agg"), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	f.update("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(`{"spec":{"serviceAccountName":"` + naming.VMCPServiceAccountName("agg") + `"}}`)}
	})
	f.converge("agg")
	if w := f.Warnings(); len(w) != 0 {
		t.Errorf("its own account: %q", w)
	}
}
