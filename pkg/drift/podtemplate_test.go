package drift

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// With a template involved, the patch nulls what the live pod has and the
// desired one lacks, nested keys included, and prunes the hash; without
// one it is DeploymentPatch's.
func TestDeploymentPatchWithPodTemplate(t *testing.T) {
	want := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		ServiceAccountName: "sa",
		SecurityContext:    &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
	}}}}
	have := want.DeepCopy()
	have.Annotations = map[string]string{naming.AnnotationPodTemplateSpecHash: "old"}
	have.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "mcp"}
	have.Spec.Template.Spec.SecurityContext.SupplementalGroups = []int64{3000}
	body, err := DeploymentPatchWithPodTemplate(want, have, false)
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Metadata struct {
			Annotations map[string]any `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Template struct {
				Spec map[string]any `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		t.Fatal(err)
	}
	if v, ok := patch.Metadata.Annotations[naming.AnnotationPodTemplateSpecHash]; !ok || v != nil {
		t.Errorf("hash not pruned: %s", body)
	}
	ps := patch.Spec.Template.Spec
	if v, ok := ps["nodeSelector"]; !ok || v != nil {
		t.Errorf("nodeSelector not nulled: %s", body)
	}
	sc := ps["securityContext"].(map[string]any)
	if v, ok := sc["supplementalGroups"]; !ok || v != nil || sc["runAsUser"] == nil {
		t.Errorf("securityContext %v", sc)
	}

	plain, _ := DeploymentPatchWithPodTemplate(want, want, false)
	ref, _ := DeploymentPatch(want, want, []string{naming.AnnotationPodTemplateSpecHash}, false)
	if string(plain) != string(ref) {
		t.Errorf("without a template:\n%s\nwant\n%s", plain, ref)
	}
}

// The comparator sees a template's hash coming, changing and going, and
// the scheduling fields by value only while a template is involved.
func TestDiffDeploymentWithPodTemplate(t *testing.T) {
	want := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{naming.AnnotationPodTemplateSpecHash: "h1"}}}
	want.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "mcp"}
	has := func(fields []string, f string) bool {
		for _, x := range fields {
			if x == f {
				return true
			}
		}
		return false
	}
	if d := DiffDeploymentWithPodTemplate(want, want.DeepCopy()); len(d) != 0 {
		t.Errorf("equal: %v", d)
	}
	changed := want.DeepCopy()
	changed.Annotations[naming.AnnotationPodTemplateSpecHash] = "h0"
	changed.Spec.Template.Spec.NodeSelector = nil
	if d := DiffDeploymentWithPodTemplate(want, changed); !has(d, FieldPodTemplateSpecHash) || !has(d, FieldNodeSelector) {
		t.Errorf("changed: %v", d)
	}
	gone := &appsv1.Deployment{}
	if d := DiffDeploymentWithPodTemplate(gone, want); !has(d, FieldPodTemplateSpecHash) {
		t.Errorf("template removed: %v", d)
	}
}
