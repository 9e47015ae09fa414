package proxy

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// TestMCPServerNameLimitFitsEveryChild derives the CRD's name limit from the
// children hivekeeper builds and the objects the proxy runner creates.
func TestMCPServerNameLimitFitsEveryChild(t *testing.T) {
	toolhivetest.AssertNameLimit(t, thv1.MaxMCPServerNameLength, func(name string) []metav1.Object {
		d, err := BuildMCPServer(newServer(name), Input{RunnerImage: "runner:test"})
		if err != nil {
			t.Fatal(err)
		}
		objs := []metav1.Object{d.RunConfig, d.RunnerServiceAccount, d.RunnerRoleBinding, d.BackendServiceAccount, d.Deployment, d.Service,
			// The runner's StatefulSet; its pods carry the label
			// controller-revision-hash=<name>-<hash of up to 10>.
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: naming.MCPServerRunnerStatefulSetName(name),
				Labels: map[string]string{"controller-revision-hash": name + "-0123456789"}}}}
		for _, svc := range naming.MCPServerRunnerServiceNames(name) {
			objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc}})
		}
		return objs
	})
}
