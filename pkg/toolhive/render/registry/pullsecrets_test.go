package registry

import (
	"fmt"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The operator-wide pull secrets follow spec.imagePullSecrets on the
// registry API's pods and account, as ToolHive's operator merges them.
func TestDefaultPullSecrets(t *testing.T) {
	in := testInput
	in.PullSecrets = wiring.PullSecretRefs([]string{"org-pull", "own"})
	out, err := Build(newRegistry(func(r *thv1.MCPRegistry) { r.Spec.ImagePullSecrets = wiring.PullSecretRefs([]string{"own"}) }), in)
	if err != nil {
		t.Fatal(err)
	}
	const want = "[{own} {org-pull}]"
	if got := fmt.Sprint(out.Deployment.Spec.Template.Spec.ImagePullSecrets); got != want {
		t.Errorf("pod pull secrets %s, want %s", got, want)
	}
	if got := fmt.Sprint(out.ServiceAccount.ImagePullSecrets); got != want {
		t.Errorf("account pull secrets %s, want %s", got, want)
	}
}
