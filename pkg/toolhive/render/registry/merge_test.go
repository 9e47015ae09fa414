package registry

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The user's podTemplateSpec wins field by field: a value the user sets
// is kept, and only what the user leaves unset is completed from the
// built pod (ToolHive's merge). Both directions are checked, since
// completing a set field and leaving an unset one empty are both bugs.
func TestMergePodTemplateKeepsSetValues(t *testing.T) {
	full := func(tag string) corev1.Container {
		probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/" + tag}}}
		return corev1.Container{
			Name: "registry-api", Image: "image:" + tag, Command: []string{tag}, Args: []string{"--" + tag}, WorkingDir: "/" + tag,
			Resources:     corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			LivenessProbe: probe, ReadinessProbe: probe.DeepCopy(), StartupProbe: probe.DeepCopy(),
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](int64(len(tag)))}, ImagePullPolicy: corev1.PullPolicy(tag),
		}
	}
	builtPod := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "built-sa", Containers: []corev1.Container{full("built")},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "built-pull"}}}}
	}
	user := corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "user-sa", Containers: []corev1.Container{full("user")},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "user-pull"}}}}
	got, err := mergePodTemplate(builtPod(), user)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, user.Spec) {
		t.Errorf("set values replaced:\n got %+v\nwant %+v", got.Spec, user.Spec)
	}

	empty := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "registry-api"}}}}
	got, err = mergePodTemplate(builtPod(), empty)
	if err != nil {
		t.Fatal(err)
	}
	if want := builtPod().Spec; !reflect.DeepEqual(got.Spec, want) {
		t.Errorf("unset values not completed:\n got %+v\nwant %+v", got.Spec, want)
	}
}

// Labels and annotations are the built ones overlaid by the user's; a
// side with none takes the other's whole, and none on both sides stays
// nil (not an empty map, which the drift comparison would see).
func TestMergePodTemplateMetadata(t *testing.T) {
	built := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "built", "shared": "built"}}}
	user := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{"shared": "user", "own": "user"},
		Annotations: map[string]string{"note": "user"},
	}}
	got, err := mergePodTemplate(built, user)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"app": "built", "shared": "user", "own": "user"}; !reflect.DeepEqual(got.Labels, want) {
		t.Errorf("labels = %v, want %v", got.Labels, want)
	}
	if want := map[string]string{"note": "user"}; !reflect.DeepEqual(got.Annotations, want) {
		t.Errorf("annotations only the user set = %v, want %v", got.Annotations, want)
	}
	got, err = mergePodTemplate(corev1.PodTemplateSpec{}, corev1.PodTemplateSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels != nil || got.Annotations != nil {
		t.Errorf("none on either side gave labels %#v, annotations %#v; want nil", got.Labels, got.Annotations)
	}
}

// The built containers the user's list does not name follow the user's,
// however many more the built list has.
func TestMergeContainersKeepsUnnamedBuilt(t *testing.T) {
	built := []corev1.Container{{Name: "registry-api", Image: "built"}, {Name: "sidecar", Image: "side"}, {Name: "helper", Image: "help"}}
	got := mergeContainers(built, []corev1.Container{{Name: "registry-api", Image: "mine"}})
	want := []corev1.Container{{Name: "registry-api", Image: "mine"}, {Name: "sidecar", Image: "side"}, {Name: "helper", Image: "help"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged containers:\n got %+v\nwant %+v", got, want)
	}
}
