package vmcp

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// TestNameLimitFitsEveryChild derives the CRD's name limit from the
// children hivekeeper builds.
func TestNameLimitFitsEveryChild(t *testing.T) {
	toolhivetest.AssertNameLimit(t, thv1.MaxVirtualMCPServerNameLength, func(name string) []metav1.Object {
		d, err := Build(newVMCP(name), Input{Image: "vmcp:test"})
		if err != nil {
			t.Fatal(err)
		}
		return []metav1.Object{d.Config, d.ServiceAccount, d.Deployment, d.Service}
	})
}
