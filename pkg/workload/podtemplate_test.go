package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// The hash is ToolHive's: SHA-256 of the JSON re-encoded with sorted keys,
// so the API server's key order does not matter, and no template is no
// hash.
func TestHashPodTemplateSpec(t *testing.T) {
	a, err := HashPodTemplateSpec(raw(`{"spec":{"nodeSelector":{"b":"2","a":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := HashPodTemplateSpec(raw(`{ "spec" : { "nodeSelector" : { "a":"1", "b":"2" } } }`))
	if a == "" || a != b {
		t.Errorf("hashes %q %q, want equal and set", a, b)
	}
	sum := sha256.Sum256([]byte(`{"spec":{"nodeSelector":{"a":"1","b":"2"}}}`))
	if want := hex.EncodeToString(sum[:]); a != want {
		t.Errorf("hash %q, want %q", a, want)
	}
	for _, none := range []*runtime.RawExtension{nil, {}, raw("null")} {
		if h, err := HashPodTemplateSpec(none); h != "" || err != nil {
			t.Errorf("%v: %q %v", none, h, err)
		}
	}
}

// Merging follows strategic merge patch: lists with a merge key merge by
// it, the rest replaces; a field the user left out stays as built.
func TestApplyPodTemplate(t *testing.T) {
	base := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "built",
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "built"}},
			Containers: []corev1.Container{{Name: naming.ProxyContainerName, Image: "runner",
				Env: []corev1.EnvVar{{Name: "A", Value: "built"}, {Name: "B", Value: "built"}}}},
			Volumes: []corev1.Volume{{Name: "runconfig", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	got, err := ApplyPodTemplate(base, raw(`{"spec":{
		"imagePullSecrets":[{"name":"user"}],
		"containers":[{"name":"toolhive","env":[{"name":"B","value":"user"},{"name":"C","value":"user"}]}]}}`), map[string]string{"app": "x"})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if c.Image != "runner" || env["A"] != "built" || env["B"] != "user" || env["C"] != "user" || len(got.Spec.Containers) != 1 {
		t.Errorf("container %+v", c)
	}
	if len(got.Spec.ImagePullSecrets) != 2 || got.Spec.ServiceAccountName != "built" || len(got.Spec.Volumes) != 1 {
		t.Errorf("pod %+v", got.Spec)
	}
	if same, err := ApplyPodTemplate(base, nil, nil); err != nil || same.Spec.ServiceAccountName != "built" {
		t.Errorf("no template: %v %v", same, err)
	}

	for name, bad := range map[string]string{
		"wrong type":     `{"spec":{"containers":{}}}`,
		"selector label": `{"metadata":{"labels":{"app":"y"}}}`,
	} {
		_, err := ApplyPodTemplate(base, raw(bad), map[string]string{"app": "x"})
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionPodTemplateValid || invalid.Reason != thv1.ReasonPodTemplateInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}

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
