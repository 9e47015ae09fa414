package plugin

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
)

// forbid makes f refuse verb on resource in namespace ns ("" for any),
// as the API server refuses a request RBAC does not allow: 403.
func forbid(f *clienttesting.Fake, verb, resource, ns string) {
	f.PrependReactor(verb, resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if ns != "" && a.GetNamespace() != ns {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "",
			errors.New(`User "alice" cannot `+verb+` resource "`+resource+`"`))
	})
}

// leading is hivekeeper's Deployment electing a leader, with the Lease
// one of its pods holds.
func leading() (*appsv1.Deployment, []runtime.Object) {
	hk := hivekeeperDeployment()
	hk.Spec.Template.Spec.Containers[0].Args = []string{"--leader-elect"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: hk.Namespace, Name: "hivekeeper-1", Labels: hk.Spec.Template.Labels}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: hk.Namespace, Name: "hivekeeper-leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("hivekeeper-1_0f9a")}}
	return hk, []runtime.Object{hk, pod, lease}
}

// A read refused in a wait fails the wait and names the permission the
// plugin lacks, where it would otherwise pass as done (no pod seen, so
// none left; no pod seen, so the Lease's holder is fine) or wait on.
func TestWaitsFailOnARefusedRead(t *testing.T) {
	const interval, timeout = 5 * time.Millisecond, 2 * time.Second
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) error
		says string
	}{
		{"the old operator's pods gone", func(t *testing.T) error {
			op := operatorDeployment()
			kube := k8sfake.NewClientset(op)
			forbid(&kube.Fake, "list", "pods", "toolhive-system")
			return scaleTo(ctx, kube, op, 0, timeout, interval)
		}, "list pods in namespace toolhive-system"},
		{"a Deployment's replicas", func(t *testing.T) error {
			op := operatorDeployment()
			kube := k8sfake.NewClientset(op)
			forbid(&kube.Fake, "get", "deployments", "toolhive-system")
			return scaleTo(ctx, kube, op, 1, timeout, interval)
		}, "get deployments in namespace toolhive-system"},
		{"the new leader's pod", func(t *testing.T) error {
			hk, objs := leading()
			kube := k8sfake.NewClientset(objs...)
			forbid(&kube.Fake, "list", "pods", "hivekeeper-system")
			return waitLeader(ctx, kube, hk, timeout, interval)
		}, "list pods in namespace hivekeeper-system"},
		{"the new leader's Lease", func(t *testing.T) error {
			hk, objs := leading()
			kube := k8sfake.NewClientset(objs...)
			forbid(&kube.Fake, "get", "leases", "hivekeeper-system")
			return waitLeader(ctx, kube, hk, timeout, interval)
		}, "get leases.coordination.k8s.io in namespace hivekeeper-system"},
		{"the image check's pod", func(t *testing.T) error {
			kube := k8sfake.NewClientset()
			forbid(&kube.Fake, "get", "pods", "hivekeeper-system")
			return pullCheck(ctx, kube, hivekeeperDeployment(), timeout, interval)
		}, "get pods in namespace hivekeeper-system"},
		{"the namespaces settled", func(t *testing.T) error {
			kube := k8sfake.NewClientset()
			forbid(&kube.Fake, "list", "configmaps", "team-a")
			_, _, err := settle(ctx, clients{kube: kube, toolhive: thfake.NewSimpleClientset()}, []string{"team-a"}, time.Second, timeout, interval)
			return err
		}, "list configmaps in namespace team-a"},
		{"a CRD served", func(t *testing.T) error {
			x := crd("mcpservers", "MCPServer", "v1beta1")
			x.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true, Storage: true}}
			x.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{{Group: thv1.GroupName, Version: "v1beta1", Resource: "mcpservers"}: "MCPServerList"})
			forbid(&dyn.Fake, "list", "mcpservers", "")
			return replaceCRDs(ctx, clients{crds: apiextensionsfake.NewSimpleClientset(x), dyn: dyn}, []*apiextensionsv1.CustomResourceDefinition{x}, timeout, interval)
		}, "list mcpservers.toolhive.stacklok.dev cluster-wide"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t)
			if err == nil || !strings.Contains(err.Error(), "missing permission: "+tc.says) || !apierrors.IsForbidden(err) {
				t.Errorf("the wait ended with %v; want a failure naming the missing permission %q", err, tc.says)
			}
			if err != nil && strings.Contains(err.Error(), "not within") {
				t.Errorf("the wait ran to its timeout before failing: %v", err)
			}
		})
	}
}

// A switch whose account may not list the old operator's pods stops at
// that step, naming the permission, before hivekeeper is scaled up: it
// cannot tell that ToolHive's operator stopped writing. The record stays,
// in phase switching, for switch --back.
func TestSwitchStopsWhenItCannotSeeTheOldOperatorGo(t *testing.T) {
	c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
	forbid(&c.kube.(*k8sfake.Clientset).Fake, "list", "pods", "toolhive-system")
	writes(c)
	r, err := switchTo(context.Background(), c, testSwitchOptions(), &progress{w: io.Discard}, logr.Discard())
	if err == nil || !strings.Contains(err.Error(), "missing permission: list pods in namespace toolhive-system") {
		t.Fatalf("switch: %v, want the missing permission named", err)
	}
	if r == nil || slices.ContainsFunc(r.Steps, func(s string) bool { return strings.Contains(s, "its pods are gone") }) {
		t.Errorf("the report's steps: %+v", r)
	}
	if slices.Contains(writes(c), "patch deployments hivekeeper") {
		t.Error("hivekeeper was scaled up though the old operator's pods were not seen gone")
	}
	if rec, err := readRecord(context.Background(), c.kube, "hivekeeper-system"); err != nil || rec == nil || rec.Phase != phaseSwitching {
		t.Errorf("the record after the failed step: %+v, %v", rec, err)
	}
}
