package wiring

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

func TestCheckServiceAccount(t *testing.T) {
	owned := func(name string, labels map[string]string, kind string, uid types.UID) *corev1.ServiceAccount {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
		gvk := thv1.SchemeGroupVersion.WithKind(kind)
		if kind == "Deployment" {
			gvk = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}
		}
		if kind != "" {
			sa.OwnerReferences = []metav1.OwnerReference{naming.OwnerRef(&metav1.ObjectMeta{Name: "owner", UID: uid}, gvk)}
		}
		return sa
	}
	ours := naming.Labels("mcpserver", "owner")
	for _, tc := range []struct {
		name    string
		sa      *corev1.ServiceAccount
		refused bool
	}{
		{"not in the cache: the user's own account", nil, false},
		// Neither operator labels the accounts it writes: the controller
		// decides.
		{"no label, another server's account", owned("bar-sa", nil, thv1.KindMCPServer, "other"), true},
		{"label but no owner", owned("bar-sa", ours, "", ""), false},
		{"label and a foreign controller", owned("bar-sa", ours, "Deployment", "other"), false},
		{"another server's backend account", owned("bar-sa", ours, thv1.KindMCPServer, "other"), true},
		{"another server's runner account", owned("bar-proxy-runner", ours, thv1.KindMCPServer, "other"), true},
		{"a remote proxy's runner account", owned("bar-remote-proxy-runner", ours, thv1.KindMCPRemoteProxy, "other"), true},
		{"a virtual server's account", owned("bar-vmcp", ours, thv1.KindVirtualMCPServer, "other"), true},
		{"this workload's own account", owned("me-sa", ours, thv1.KindMCPServer, "me"), false},
		{"this workload's runner account", owned("me-proxy-runner", ours, thv1.KindMCPServer, "me"), true},
	} {
		err := CheckServiceAccount(tc.sa, "me", "me-sa")
		var invalid *InvalidSpecError
		if refused := errors.As(err, &invalid); refused != tc.refused {
			t.Errorf("%s: refused = %v, want %v (%v)", tc.name, refused, tc.refused, err)
			continue
		}
		if tc.refused && (invalid.Reason != thv1.ReasonServiceAccountNotAllowed || invalid.Condition != thv1.ConditionReady ||
			!strings.HasPrefix(invalid.Message, "spec.serviceAccount: ") || !strings.Contains(invalid.Message, tc.sa.Name)) {
			t.Errorf("%s: %+v", tc.name, invalid)
		}
	}
}

func TestCustomServiceAccount(t *testing.T) {
	if _, ok := CustomServiceAccount(nil); ok {
		t.Error("nil is custom")
	}
	if _, ok := CustomServiceAccount(ptr.To("")); ok {
		t.Error("empty is custom")
	}
	if sa, ok := CustomServiceAccount(ptr.To("mine")); !ok || sa != "mine" {
		t.Error("named account not custom")
	}
}
