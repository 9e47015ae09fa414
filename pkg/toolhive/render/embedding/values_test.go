package embedding

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// What the spec sets reaches the children, not the default in its place:
// the replicas, the pull policy, the model cache's access mode and the
// overrides' annotations; overrides without annotations leave none (an
// empty map is no metadata). The parity tests only check that a child
// matches its own live copy, which a default in place of the value would.
func TestBuildUsesSetValues(t *testing.T) {
	out, err := Build(newServer(toolhivetest.WithModelCache("20Gi"), func(e *thv1.EmbeddingServer) {
		e.Spec.Replicas, e.Spec.ImagePullPolicy = ptr.To[int32](3), "Always"
		e.Spec.ModelCache.AccessMode = "ReadWriteMany"
		e.Spec.ResourceOverrides = &thv1.EmbeddingResourceOverrides{
			StatefulSet: &thv1.EmbeddingStatefulSetOverrides{ResourceMetadataOverrides: thv1.ResourceMetadataOverrides{Annotations: map[string]string{"a": "b"}}},
			Service:     &thv1.ResourceMetadataOverrides{Labels: map[string]string{"tier": "ml"}},
		}
	}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sts := out.StatefulSet
	if got := ptr.Deref(sts.Spec.Replicas, 0); got != 3 {
		t.Errorf("replicas %d, want 3", got)
	}
	if got := sts.Spec.Template.Spec.Containers[0].ImagePullPolicy; got != corev1.PullAlways {
		t.Errorf("pull policy %s, want Always", got)
	}
	if got := sts.Spec.VolumeClaimTemplates; len(got) != 1 || !slices.Equal(got[0].Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) {
		t.Errorf("claim templates %+v, want ReadWriteMany", got)
	}
	if sts.Annotations["a"] != "b" {
		t.Errorf("statefulset annotations %v", sts.Annotations)
	}
	if out.Service.Annotations != nil {
		t.Errorf("service annotations %v, want none", out.Service.Annotations)
	}
}
