package wiring

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
