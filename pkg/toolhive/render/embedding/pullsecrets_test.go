package embedding

import (
	"fmt"
	"testing"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// ToolHive's operator gives an EmbeddingServer's pods the operator-wide
// pull secrets (the kind has no list of its own; a podTemplateSpec may
// add more).
func TestDefaultPullSecrets(t *testing.T) {
	out, err := Build(newServer(), wiring.PullSecretRefs([]string{"org-pull"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(out.StatefulSet.Spec.Template.Spec.ImagePullSecrets); got != "[{org-pull}]" {
		t.Errorf("pod pull secrets %s", got)
	}
	if out, _ := Build(newServer(), nil, nil); out.StatefulSet.Spec.Template.Spec.ImagePullSecrets != nil {
		t.Errorf("no defaults: %v", out.StatefulSet.Spec.Template.Spec.ImagePullSecrets)
	}
}
