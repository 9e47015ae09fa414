package embeddingserver

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// The podTemplateSpec is merged into the StatefulSet's pod hivekeeper
// writes, so a template that reaches the node or names an account
// hivekeeper made for a workload is refused whatever the admission policy
// says: phase Failed, one Warning event naming the field, the StatefulSet
// not touched, and no retry.
func TestPodTemplateMayNotReachTheNode(t *testing.T) {
	type refusal struct {
		template, condition, reason, field string
	}
	cases := map[string]refusal{
		// An EmbeddingServer has no account of its own to name.
		"a workload's account": {`{"spec":{"serviceAccountName":"agg-vmcp"}}`, "",
			thv1.ReasonServiceAccountNotAllowed, "spec.podTemplateSpec.spec.serviceAccountName"},
	}
	for _, tc := range workloadtest.RefusedPodTemplates {
		cases[tc.Name] = refusal{tc.Template, thv1.ConditionPodTemplateValid, thv1.ReasonPodSecurityNotAllowed, tc.Field}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, newServer(), toolhivetest.ManagedServiceAccount(testNS, "agg-vmcp", thv1.KindVirtualMCPServer, "agg"))
			f.converge("embed")
			f.Events()
			e := f.server("embed")
			e.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(tc.template)}
			f.update(e)
			acts := f.sync("embed")
			got := f.server("embed")
			f.AssertRefusedPod(t, acts, "embeddingservers", got.Status.Conditions, tc.condition, tc.reason, tc.field)
			if got.Status.Phase != thv1.EmbeddingServerPhaseFailed || got.Status.Message == "" {
				t.Errorf("status %+v", got.Status)
			}
			if tc.condition == "" && meta.IsStatusConditionFalse(got.Status.Conditions, thv1.ConditionPodTemplateValid) {
				t.Errorf("an account refusal reported as an invalid template")
			}
			f.Refresh()
			assertActions(t, f.sync("embed"))
		})
	}

	// An account of the user's own is fine.
	f := newFixture(t, newServer(func(e *thv1.EmbeddingServer) {
		e.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(`{"spec":{"serviceAccountName":"mine"}}`)}
	}))
	f.converge("embed")
	if sa := f.statefulSet("embed").Spec.Template.Spec.ServiceAccountName; sa != "mine" {
		t.Errorf("serviceAccountName %q", sa)
	}
}
