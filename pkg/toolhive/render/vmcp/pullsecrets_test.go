package vmcp

import (
	"fmt"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The operator-wide pull secrets follow spec.imagePullSecrets on the
// vMCP's pods and account, and the pull-secret hash annotation covers the
// merged list, as ToolHive's operator writes them.
func TestDefaultPullSecrets(t *testing.T) {
	v := newVMCP("agg", func(v *thv1.VirtualMCPServer) { v.Spec.ImagePullSecrets = wiring.PullSecretRefs([]string{"own"}) })
	plain, err := Build(v, Input{Image: testImage})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Build(v, Input{Image: testImage, PullSecrets: wiring.PullSecretRefs([]string{"org-pull", "own"})})
	if err != nil {
		t.Fatal(err)
	}
	const want = "[{own} {org-pull}]"
	if got := fmt.Sprint(d.Deployment.Spec.Template.Spec.ImagePullSecrets); got != want {
		t.Errorf("pod pull secrets %s, want %s", got, want)
	}
	if got := fmt.Sprint(d.ServiceAccount.ImagePullSecrets); got != want {
		t.Errorf("account pull secrets %s, want %s", got, want)
	}
	h := func(o *Output) string { return o.Deployment.Annotations[naming.AnnotationImagePullSecretsHash] }
	if h(d) == "" || h(d) == h(plain) {
		t.Errorf("pull-secret hash %q with the defaults, %q without: the merged list must be hashed", h(d), h(plain))
	}
	assertNoDrift(t, "default pull secrets", d)
}
