package embedding

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The template is merged into the pod: it may not reach the node, nor name
// an account hivekeeper made for a workload (an EmbeddingServer has none
// of its own); an account of the user's is fine.
func TestBuildRefusesPodsThatReachTheNode(t *testing.T) {
	template := func(s string) func(*thv1.EmbeddingServer) {
		return func(e *thv1.EmbeddingServer) { e.Spec.PodTemplateSpec = toolhivetest.Raw(s) }
	}
	vmcpAccount := toolhivetest.ManagedServiceAccount(testNS, "agg-vmcp", thv1.KindVirtualMCPServer, "agg")
	var invalid *wiring.InvalidSpecError
	_, err := Build(newServer(template(`{"spec":{"hostNetwork":true}}`)), nil, nil)
	if !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionPodTemplateValid || invalid.Reason != thv1.ReasonPodSecurityNotAllowed ||
		!strings.HasPrefix(invalid.Message, "spec.podTemplateSpec.spec.hostNetwork: ") {
		t.Errorf("hostNetwork: %v", err)
	}
	_, err = Build(newServer(template(`{"spec":{"serviceAccountName":"agg-vmcp"}}`)), nil, vmcpAccount)
	if !errors.As(err, &invalid) || invalid.Reason != thv1.ReasonServiceAccountNotAllowed ||
		!strings.HasPrefix(invalid.Message, "spec.podTemplateSpec.spec.serviceAccountName: ") {
		t.Errorf("a workload's account: %v", err)
	}
	out, err := Build(newServer(template(`{"spec":{"serviceAccountName":"mine"}}`)), nil,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "mine"}})
	if err != nil || out.StatefulSet.Spec.Template.Spec.ServiceAccountName != "mine" {
		t.Errorf("an account of the user's: %v", err)
	}
}
