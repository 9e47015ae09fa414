package framework

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTrimForeign: what may be a workload's child (labelled toolhive=true,
// or controlled by a ToolHive kind of either served version, as ToolHive's
// operator's children are) is cached as it is; anything else keeps only
// what tells whose it is, in an object of its own type.
func TestTrimForeign(t *testing.T) {
	labelled := newChild("ns", "a-runconfig", "1")
	labelled.Labels = map[string]string{"toolhive": "true"}
	labelled.Data = map[string]string{"runconfig.json": "{}"}
	owned := newChild("ns", "b-runconfig", "2", ownerRef("toolhive.stacklok.dev/v1alpha1", "MCPServer", "b", "uid-b", true))
	owned.Labels = map[string]string{"toolhive.stacklok.io/managed-by": "toolhive-operator"}
	owned.Data = map[string]string{"runconfig.json": "{}"}
	for name, obj := range map[string]*corev1.ConfigMap{"labelled toolhive=true": labelled, "controlled by a ToolHive kind": owned} {
		got, err := TrimForeign(obj)
		if err != nil || got != any(obj) {
			t.Errorf("%s: TrimForeign = %v, %v; want the object itself", name, got, err)
		}
	}

	ownedByDeployment := ownerRef("apps/v1", "Deployment", "x", "uid-x", true)
	notController := ownerRef("toolhive.stacklok.dev/v1beta1", "MCPServer", "b", "uid-b", false)
	foreign := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "dashboards", UID: "uid-cm", ResourceVersion: "7", Generation: 3,
			Labels:          map[string]string{"app": "grafana"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			OwnerReferences: []metav1.OwnerReference{ownedByDeployment, notController},
			Finalizers:      []string{"example.com/keep"},
		},
		Data:       map[string]string{"big.json": "{...}"},
		BinaryData: map[string][]byte{"blob": []byte("...")},
	}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "dashboards", UID: "uid-cm", ResourceVersion: "7",
		Labels: foreign.Labels, OwnerReferences: foreign.OwnerReferences,
	}, Data: map[string]string{"big.json": ""}, BinaryData: map[string][]byte{"blob": nil}}
	got, err := TrimForeign(foreign)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("TrimForeign(foreign ConfigMap) = %#v, %v; want %#v", got, err, want)
	}
	if again, _ := TrimForeign(got); !reflect.DeepEqual(again, want) {
		t.Errorf("TrimForeign is not idempotent: %#v", again)
	}
	if foreign.Data == nil || foreign.Annotations == nil {
		t.Errorf("TrimForeign changed the object it was given: %#v", foreign)
	}

	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "admins", UID: "uid-rb", ResourceVersion: "9"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", Name: "admins"}},
	}
	wantRB := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "admins", UID: "uid-rb", ResourceVersion: "9"}}
	if got, err := TrimForeign(rb); err != nil || !reflect.DeepEqual(got, wantRB) {
		t.Errorf("TrimForeign(foreign RoleBinding) = %#v, %v; want %#v", got, err, wantRB)
	}

	tomb := tombstone(foreign)
	if got, err := TrimForeign(tomb); err != nil || !reflect.DeepEqual(got, tomb) {
		t.Errorf("TrimForeign(tombstone) = %#v, %v; want it unchanged", got, err)
	}
}
