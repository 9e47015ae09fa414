package workload

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
)

// A reference is usable only to a config that exists and is Valid.
func TestConfigKindCheck(t *testing.T) {
	valid := &thv1.MCPOIDCConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ok"},
		Status: thv1.ConfigStatus{Conditions: []metav1.Condition{{Type: thv1.ConditionValid, Status: metav1.ConditionTrue}}}}
	invalid := &thv1.MCPOIDCConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad"},
		Status: thv1.ConfigStatus{Conditions: []metav1.Condition{{Type: thv1.ConditionValid, Status: metav1.ConditionFalse}}}}
	for _, tc := range []struct {
		cfg  *thv1.MCPOIDCConfig
		want string
	}{{valid, thv1.ReasonOIDCConfigRefValid}, {invalid, thv1.ReasonOIDCConfigRefNotValid}, {nil, thv1.ReasonOIDCConfigRefNotFound}} {
		ok, reason, msg := OIDCConfigs.check("x", tc.cfg, tc.cfg != nil)
		if reason != tc.want || ok != (tc.cfg == valid) || !strings.Contains(msg, `MCPOIDCConfig "x"`) {
			t.Errorf("%s: ok=%v reason=%s message=%q", tc.want, ok, reason, msg)
		}
	}
}

func TestConditionFlippedTo(t *testing.T) {
	cond := func(st metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: st, Reason: reason}}
	}
	f := metav1.ConditionFalse
	if !ConditionFlippedTo(nil, cond(f, "A"), "Ready", f) || !ConditionFlippedTo(cond(metav1.ConditionTrue, "A"), cond(f, "A"), "Ready", f) ||
		!ConditionFlippedTo(cond(f, "A"), cond(f, "B"), "Ready", f) {
		t.Error("a transition was missed")
	}
	if ConditionFlippedTo(cond(f, "A"), cond(f, "A"), "Ready", f) || ConditionFlippedTo(nil, cond(metav1.ConditionTrue, "A"), "Ready", f) {
		t.Error("no transition reported as one")
	}
}

// framework.DeleteStaleChild deletes only what the owner controls, and reads the
// cache before it sends anything.
func TestDeleteStaleChild(t *testing.T) {
	owned := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owned", UID: "sa-1",
		OwnerReferences: []metav1.OwnerReference{{Kind: "X", Name: "x", UID: "me", Controller: ptr.To(true)}}}}
	foreign := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "foreign",
		OwnerReferences: []metav1.OwnerReference{{Kind: "X", Name: "y", UID: "someone", Controller: ptr.To(true)}}}}
	kube := k8sfake.NewClientset(owned, foreign)
	f := kubeinformers.NewSharedInformerFactory(kube, 0)
	ch, _ := NewChildren(&framework.Deps{Kube: kube, Scopes: []framework.Scope{{Kube: f, KubeAll: f}}})
	for _, o := range []any{owned, foreign} {
		if err := f.Core().V1().ServiceAccounts().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	kube.ClearActions()
	w := framework.NewWriter("test", nil)
	ctx := context.Background()
	for _, name := range []string{"foreign", "absent"} {
		if err := framework.DeleteStaleChild(ctx, w, ch.ServiceAccounts, "ns", name, types.UID("me")); err != nil {
			t.Fatal(err)
		}
	}
	if acts := kube.Actions(); len(acts) != 0 {
		t.Fatalf("actions on foreign or absent children: %v", acts)
	}
	if err := framework.DeleteStaleChild(ctx, w, ch.ServiceAccounts, "ns", "owned", types.UID("me")); err != nil {
		t.Fatal(err)
	}
	if acts := kube.Actions(); len(acts) != 1 || acts[0].GetVerb() != "delete" {
		t.Fatalf("actions %v, want one delete", acts)
	}
}
