package mcpregistry

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// The registry API's pod starts from the podTemplateSpec and takes
// spec.volumes, so either reaching the node, or the template naming
// another workload's account, is refused whatever the admission policy
// says: phase Failed, the condition and one Warning event naming the
// field, the Deployment not touched, and no retry.
func TestPodTemplateMayNotReachTheNode(t *testing.T) {
	type refusal struct {
		mut                      func(*thv1.MCPRegistry)
		condition, reason, field string
	}
	template := func(raw string) func(*thv1.MCPRegistry) {
		return func(r *thv1.MCPRegistry) { r.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(raw)} }
	}
	cases := map[string]refusal{
		"another workload's account": {template(`{"spec":{"serviceAccountName":"agg-vmcp"}}`), thv1.ConditionReady,
			thv1.ReasonServiceAccountNotAllowed, "spec.podTemplateSpec.spec.serviceAccountName"},
		"a host path in spec.volumes": {func(r *thv1.MCPRegistry) {
			r.Spec.Volumes = []apiextensionsv1.JSON{{Raw: []byte(`{"name":"data","configMap":{"name":"d"}}`)}, {Raw: []byte(`{"name":"root","hostPath":{"path":"/"}}`)}}
		}, thv1.ConditionReady, thv1.ReasonPodSecurityNotAllowed, "spec.volumes[1].hostPath"},
	}
	for _, tc := range workloadtest.RefusedPodTemplates {
		cases[tc.Name] = refusal{template(tc.Template), thv1.ConditionPodTemplateValid, thv1.ReasonPodSecurityNotAllowed, tc.Field}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, newRegistry(), toolhivetest.ManagedServiceAccount(testNS, "agg-vmcp", thv1.KindVirtualMCPServer, "agg"))
			f.converge("reg")
			f.Events()
			r := f.registry("reg")
			tc.mut(r)
			f.update(r)
			acts := f.sync("reg")
			got := f.registry("reg")
			f.AssertRefusedPod(t, acts, "mcpregistries", got.Status.Conditions, tc.condition, tc.reason, tc.field)
			if got.Status.Phase != thv1.MCPRegistryPhaseFailed {
				t.Errorf("phase %q", got.Status.Phase)
			}
			f.Refresh()
			assertActions(t, f.sync("reg"))
		})
	}

	// Its own API account, which hivekeeper made for it, is fine.
	f := newFixture(t, newRegistry(template(`{"spec":{"serviceAccountName":"`+naming.RegistryAPIAccountName("reg")+`"}}`)))
	f.converge("reg")
	f.converge("reg")
	if w := f.Warnings(); len(w) != 1 || f.registry("reg").Status.Phase == thv1.MCPRegistryPhaseFailed {
		t.Errorf("its own account: %q, phase %s", w, f.registry("reg").Status.Phase)
	}
}
