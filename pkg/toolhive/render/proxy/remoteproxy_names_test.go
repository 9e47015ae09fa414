package proxy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// TestRemoteProxyNameLimitFitsEveryChild derives the CRD's name limit from the
// children hivekeeper builds.
func TestRemoteProxyNameLimitFitsEveryChild(t *testing.T) {
	toolhivetest.AssertNameLimit(t, thv1.MaxMCPRemoteProxyNameLength, func(name string) []metav1.Object {
		d, err := BuildRemoteProxy(newProxy(name), Input{RunnerImage: "runner:test"})
		if err != nil {
			t.Fatal(err)
		}
		return []metav1.Object{d.RunConfig, d.RunnerServiceAccount, d.RunnerRoleBinding, d.Deployment, d.Service}
	})
}
