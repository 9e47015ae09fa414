package registry

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The pod starts from the template and takes spec.volumes: neither may
// reach the node, and the template may name no account hivekeeper made for
// another workload; this registry's own API account is fine.
func TestBuildRefusesPodsThatReachTheNode(t *testing.T) {
	template := func(s string) func(*thv1.MCPRegistry) {
		return func(r *thv1.MCPRegistry) { r.Spec.PodTemplateSpec = toolhivetest.Raw(s) }
	}
	for _, tc := range []struct {
		name      string
		mut       func(*thv1.MCPRegistry)
		in        Input
		condition string
		reason    string
		field     string
	}{
		{"privileged", template(`{"spec":{"containers":[{"name":"registry-api","securityContext":{"privileged":true}}]}}`), testInput,
			thv1.ConditionPodTemplateValid, thv1.ReasonPodSecurityNotAllowed, "spec.podTemplateSpec.spec.containers[0].securityContext.privileged"},
		{"host path in the template", template(`{"spec":{"volumes":[{"name":"h","hostPath":{"path":"/"}}]}}`), testInput,
			thv1.ConditionPodTemplateValid, thv1.ReasonPodSecurityNotAllowed, "spec.podTemplateSpec.spec.volumes[0].hostPath"},
		{"host path in spec.volumes", func(r *thv1.MCPRegistry) {
			r.Spec.Volumes = []apiextensionsv1.JSON{raw(`{"name":"d","emptyDir":{}}`), raw(`{"name":"h","hostPath":{"path":"/"}}`)}
		}, testInput, thv1.ConditionReady, thv1.ReasonPodSecurityNotAllowed, "spec.volumes[1].hostPath"},
		{"another workload's account", template(`{"spec":{"serviceAccountName":"agg-vmcp"}}`),
			Input{Image: testInput.Image, ClusterRole: testInput.ClusterRole,
				TemplateServiceAccount: toolhivetest.ManagedServiceAccount(testNS, "agg-vmcp", thv1.KindVirtualMCPServer, "agg")},
			thv1.ConditionReady, thv1.ReasonServiceAccountNotAllowed, "spec.podTemplateSpec.spec.serviceAccountName"},
	} {
		_, err := Build(newRegistry(tc.mut), tc.in)
		var invalid *wiring.InvalidSpecError
		if !errors.As(err, &invalid) || invalid.Condition != tc.condition || invalid.Reason != tc.reason || !strings.HasPrefix(invalid.Message, tc.field+": ") {
			t.Errorf("%s: %v, want %s refusing %s", tc.name, err, tc.reason, tc.field)
		}
	}

	own := toolhivetest.ManagedServiceAccount(testNS, naming.RegistryAPIAccountName("reg"), thv1.KindMCPRegistry, "reg")
	own.OwnerReferences[0].UID = newRegistry().UID
	in := testInput
	in.TemplateServiceAccount = own
	out, err := Build(newRegistry(template(`{"spec":{"serviceAccountName":"`+own.Name+`"}}`)), in)
	if err != nil || out.Deployment.Spec.Template.Spec.ServiceAccountName != own.Name {
		t.Errorf("its own account: %v", err)
	}
}
