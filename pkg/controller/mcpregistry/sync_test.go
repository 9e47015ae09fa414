package mcpregistry

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

const (
	testNS    = "team-a"
	testImage = "ghcr.io/stacklok/thv-registry-api:test"
)

var assertActions = workloadtest.AssertActions

type fixture struct {
	*workloadtest.Fixture
	t *testing.T
	c *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	wf := workloadtest.New(t, objs...)
	c, err := New(wf.Deps(framework.Config{RegistryAPIImage: testImage, Runners: rbac.DefaultRunners()}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	f := &fixture{Fixture: wf, t: t, c: c}
	f.Refresh()
	return f
}

func (f *fixture) syncErr(name string) error {
	return f.c.sync(context.Background(), cache.NewObjectName(testNS, name))
}

func (f *fixture) sync(name string) []core.Action {
	f.t.Helper()
	if err := f.syncErr(name); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	return f.Writes()
}

func (f *fixture) converge(name string) {
	f.t.Helper()
	f.Converge(func() error { return f.syncErr(name) })
}

func (f *fixture) registry(name string) *thv1.MCPRegistry {
	f.t.Helper()
	r, err := f.Toolhive.ToolhiveV1beta1().MCPRegistries(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) deployment() *appsv1.Deployment {
	f.t.Helper()
	d, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "reg-api", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *fixture) update(obj runtime.Object) {
	f.t.Helper()
	ctx := context.Background()
	var err error
	switch o := obj.(type) {
	case *thv1.MCPRegistry:
		_, err = f.Toolhive.ToolhiveV1beta1().MCPRegistries(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	case *appsv1.Deployment:
		_, err = f.Kube.AppsV1().Deployments(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	}
	if err != nil {
		f.t.Fatal(err)
	}
	f.Refresh()
}

func newRegistry(mut ...func(*thv1.MCPRegistry)) *thv1.MCPRegistry {
	r := toolhivetest.NewMCPRegistry(testNS, "reg", mut...)
	return r
}

// The first sync warns of the deprecation, creates every child in
// ToolHive's order, adds ToolHive's finalizer and writes the status once:
// Pending, Ready False, no URL yet.
func TestFirstSyncCreatesChildren(t *testing.T) {
	f := newFixture(t, newRegistry())
	acts := f.sync("reg")
	assertActions(t, acts, "create configmaps", "create serviceaccounts", "create rolebindings", "create deployments", "create services",
		"patch mcpregistries", "patch mcpregistries/status")
	r := f.registry("reg")
	c := meta.FindStatusCondition(r.Status.Conditions, thv1.ConditionReady)
	if r.Status.Phase != thv1.MCPRegistryPhasePending || r.Status.URL != "" || c == nil || c.Reason != thv1.ReasonRegistryNotReady || r.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", r.Status)
	}
	if evs := f.Events(); len(evs) != 1 || evs[0] != "Warning MCPRegistryDeprecated "+deprecationMessage {
		t.Errorf("events %q", evs)
	}
	rb, err := f.Kube.RbacV1().RoleBindings(testNS).Get(context.Background(), "reg-registry-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.DefaultRegistryAPIClusterRole}) {
		t.Errorf("roleRef %+v", rb.RoleRef)
	}
	if d := f.deployment(); d.Spec.Template.Spec.Containers[0].Image != testImage {
		t.Errorf("image %s", d.Spec.Template.Spec.Containers[0].Image)
	}
	// The next sync neither warns again nor writes.
	f.Refresh()
	f.converge("reg")
	if evs := f.Events(); len(evs) != 0 {
		t.Errorf("events after the first sync %q", evs)
	}
}

// Invariant 2: a converged registry costs nothing, pgpass, volumes and a
// template included.
func TestSteadyStateMakesNoWrites(t *testing.T) {
	f := newFixture(t, newRegistry(func(r *thv1.MCPRegistry) {
		r.Spec.PGPassSecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pg"}, Key: ".pgpass"}
		r.Spec.PodTemplateSpec = toolhivetest.Raw(toolhivetest.RegistryFullTemplate)
		r.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	}))
	f.converge("reg")
	assertActions(t, f.sync("reg"))
}

// Ready follows the Deployment's ready replicas, through its informer; the
// URL is written then, and kept.
func TestReadyFollowsTheDeployment(t *testing.T) {
	f := newFixture(t, newRegistry())
	f.converge("reg")
	d := f.deployment()
	d.Status.ReadyReplicas = 1
	f.update(d)
	assertActions(t, f.sync("reg"), "patch mcpregistries/status")
	r := f.registry("reg")
	if r.Status.Phase != thv1.MCPRegistryPhaseReady || r.Status.URL != "http://reg-api.team-a:8080" || r.Status.ReadyReplicas != 1 ||
		!meta.IsStatusConditionTrue(r.Status.Conditions, thv1.ConditionReady) {
		t.Errorf("status %+v", r.Status)
	}
	d = f.deployment()
	d.Status.ReadyReplicas = 0
	f.update(d)
	assertActions(t, f.sync("reg"), "patch mcpregistries/status")
	if r := f.registry("reg"); r.Status.Phase != thv1.MCPRegistryPhasePending || r.Status.URL == "" {
		t.Errorf("status %+v", r.Status)
	}
}

// A configuration change rewrites the ConfigMap (new checksum) and rolls
// the Deployment (the spec's hash), once; a pgpassSecretRef removed takes
// its init container and volumes with it.
func TestSpecChangeRollsOnce(t *testing.T) {
	f := newFixture(t, newRegistry(func(r *thv1.MCPRegistry) {
		r.Spec.PGPassSecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pg"}, Key: ".pgpass"}
	}))
	f.converge("reg")
	f.Events()
	oldHash := f.deployment().Spec.Template.Annotations[naming.AnnotationRegistryConfigHash]
	r := f.registry("reg")
	r.Spec.ConfigYAML += "# changed\n"
	r.Spec.PGPassSecretRef = nil
	r.Generation = 2
	f.update(r)
	assertActions(t, f.sync("reg"), "patch configmaps", "patch deployments", "patch mcpregistries/status")
	d := f.deployment()
	if d.Spec.Template.Annotations[naming.AnnotationRegistryConfigHash] == oldHash || len(d.Spec.Template.Spec.InitContainers) != 0 ||
		len(d.Spec.Template.Spec.Volumes) != 1 {
		t.Errorf("deployment after the change: %+v", d.Spec.Template)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning MCPRegistryDeprecated") {
		t.Errorf("events %q: want the deprecation once per spec change", evs)
	}
	f.Refresh()
	f.converge("reg")
}

// What ToolHive's operator refuses, hivekeeper refuses the same way:
// phase Failed, Ready False ValidationFailed, one event, no child.
func TestValidationFailureWritesNoChild(t *testing.T) {
	f := newFixture(t, newRegistry(func(r *thv1.MCPRegistry) {
		r.Finalizers = []string{thv1.MCPRegistryFinalizer}
		r.Spec.PGPassSecretRef = &corev1.SecretKeySelector{Key: ".pgpass"}
	}))
	assertActions(t, f.sync("reg"), "patch mcpregistries/status")
	r := f.registry("reg")
	c := meta.FindStatusCondition(r.Status.Conditions, thv1.ConditionReady)
	if r.Status.Phase != thv1.MCPRegistryPhaseFailed || c == nil || c.Reason != thv1.ReasonValidationFailed ||
		r.Status.Message != "Spec validation failed: pgpassSecretRef.name is required" {
		t.Errorf("status %+v", r.Status)
	}
	if evs := f.Events(); len(evs) != 2 || !strings.HasPrefix(evs[1], "Warning ValidationFailed") {
		t.Errorf("events %q", evs)
	}
}

// Deletion: status Terminating, ToolHive's finalizer released.
func TestDeletionReleasesTheFinalizer(t *testing.T) {
	f := newFixture(t, newRegistry())
	f.converge("reg")
	r := f.registry("reg")
	r.DeletionTimestamp = &metav1.Time{Time: toolhivetest.Now}
	f.update(r)
	assertActions(t, f.sync("reg"), "patch mcpregistries/status", "patch mcpregistries")
	if r := f.registry("reg"); r.Status.Phase != thv1.MCPRegistryPhaseTerminating || len(r.Finalizers) != 0 {
		t.Errorf("registry %+v %v", r.Status, r.Finalizers)
	}
}

// A child the API server refuses makes the registry not Ready with
// ToolHive's reason for that child (the account and its binding are its
// RBAC), and the sync is retried.
func TestRefusedChildWriteReason(t *testing.T) {
	for _, tc := range []struct{ resource, reason string }{
		{"configmaps", thv1.ReasonRegistryConfigMapFailed},
		{"serviceaccounts", thv1.ReasonRegistryRBACFailed},
		{"rolebindings", thv1.ReasonRegistryRBACFailed},
		{"deployments", thv1.ReasonRegistryDeploymentFailed},
		{"services", thv1.ReasonRegistryServiceFailed},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			f := newFixture(t, newRegistry(func(r *thv1.MCPRegistry) { r.Finalizers = []string{thv1.MCPRegistryFinalizer} }))
			f.Kube.PrependReactor("create", tc.resource, func(core.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: tc.resource}, "x", errors.New("denied by policy"))
			})
			if err := f.syncErr("reg"); err == nil {
				t.Fatal("a refused write is no retry")
			}
			c := meta.FindStatusCondition(f.registry("reg").Status.Conditions, thv1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason {
				t.Errorf("Ready %+v, want reason %s", c, tc.reason)
			}
		})
	}
}
