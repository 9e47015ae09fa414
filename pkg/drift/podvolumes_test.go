package drift

import (
	"encoding/json"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

func hashedDeployment(hash string, vols []corev1.Volume) *appsv1.Deployment {
	annotations := map[string]string{"owner": "x"}
	if hash != "" {
		annotations[naming.AnnotationPodVolumesHash] = hash
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Annotations: annotations},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "i", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}}},
			Volumes:    vols,
		}}},
	}
	return d
}

// defaultedVolumes are volumes of sources the API server defaults fields
// of.
func defaultedVolumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}},
		}}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/x"}}},
	}
}

func TestDiffDeploymentByVolumesHash(t *testing.T) {
	vols := defaultedVolumes()
	want := hashedDeployment("h1", vols)

	// The live volumes carry server defaults and foreign additions: not
	// compared, only the hash is.
	live := want.DeepCopy()
	live.Spec.Template.Spec.Volumes = NormalizeVolumes(live.Spec.Template.Spec.Volumes)
	live.Spec.Template.Spec.Volumes = append(live.Spec.Template.Spec.Volumes, corev1.Volume{Name: "istio"})
	live.Spec.Template.Spec.Containers[0].VolumeMounts = append(live.Spec.Template.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "istio", MountPath: "/istio"})
	if got := DiffDeploymentByVolumesHash(want, live); len(got) != 0 {
		t.Fatalf("drift %v with the same hash", got)
	}
	if live.Spec.Template.Spec.Volumes == nil || len(live.Spec.Template.Spec.Containers[0].VolumeMounts) != 2 || want.Annotations[naming.AnnotationPodVolumesHash] != "h1" {
		t.Fatal("the comparator changed its inputs")
	}

	other := hashedDeployment("h2", vols)
	if got := DiffDeploymentByVolumesHash(want, other); !slices.Equal(got, []string{FieldPodVolumesHash}) {
		t.Fatalf("changed hash: drift %v, want only %s", got, FieldPodVolumesHash)
	}
	// No volumes wanted any more, but the live object still has a hash.
	none := hashedDeployment("", nil)
	if got := DiffDeploymentByVolumesHash(none, want); !slices.Equal(got, []string{FieldPodVolumesHash}) {
		t.Fatalf("stale hash: drift %v, want only %s", got, FieldPodVolumesHash)
	}
	if got := DiffDeploymentByVolumesHash(none, hashedDeployment("", nil)); len(got) != 0 {
		t.Fatalf("no hash on either side: drift %v", got)
	}
	// Everything else is still compared.
	img := want.DeepCopy()
	img.Spec.Template.Spec.Containers[0].Image = "evil"
	if got := DiffDeploymentByVolumesHash(want, img); !slices.Equal(got, []string{FieldContainerImage}) {
		t.Fatalf("image drift: %v", got)
	}
}

// A hash no longer wanted is removed from the Deployment.
func TestDeploymentPatchPrunesTheVolumesHash(t *testing.T) {
	body, err := DeploymentPatch(hashedDeployment("", nil), hashedDeployment("h1", nil), PodVolumesPrune, false)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonHasNull(t, body, "metadata", "annotations", naming.AnnotationPodVolumesHash) {
		t.Fatalf("patch does not null the stale hash: %s", body)
	}
}

// jsonHasNull reports whether the JSON document has an explicit null at
// path.
func jsonHasNull(t *testing.T, doc []byte, path ...string) bool {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	for i, k := range path {
		v, ok := m[k]
		if !ok {
			return false
		}
		if i == len(path)-1 {
			return v == nil
		}
		if m, ok = v.(map[string]any); !ok {
			return false
		}
	}
	return false
}
