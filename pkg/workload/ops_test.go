package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// The ops' patch is drift's, with the volumes hash pruned.
func TestWithPodVolumesHashPrunesTheAnnotation(t *testing.T) {
	ops := WithPodVolumesHash(framework.ChildOps[*appsv1.Deployment]{Resource: "deployments"})
	want := &appsv1.Deployment{}
	have := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{naming.AnnotationPodVolumesHash: "h1"}}}
	body, err := ops.PatchBody(want, have, false)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := drift.DeploymentPatch(want, have, drift.PodVolumesPrune, false)
	if string(body) != string(ref) {
		t.Fatalf("patch %s, want drift's %s", body, ref)
	}
}
