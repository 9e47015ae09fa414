package workload

import (
	"context"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Children are the ChildOps of every child kind a workload controller
// writes, reading from the shared informers and writing with the typed
// clients.
type Children struct {
	ConfigMaps      framework.ChildOps[*corev1.ConfigMap]
	ServiceAccounts framework.ChildOps[*corev1.ServiceAccount]
	RoleBindings    framework.ChildOps[*rbacv1.RoleBinding]
	Deployments     framework.ChildOps[*appsv1.Deployment]
	Services        framework.ChildOps[*corev1.Service]
}

// NewChildren wires the child kinds to their informers and clients. It
// returns the informers so the caller can register handlers and wait for
// their caches.
func NewChildren(d *framework.Deps) (*Children, []*framework.Informer) {
	// ToolHive's operator labels its ConfigMaps, ServiceAccounts and
	// RoleBindings otherwise than toolhive=true: they are read unfiltered,
	// so a switch from it finds them cached (framework.Scope).
	cmInf := d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ConfigMaps().Informer()
	})
	saInf := d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ServiceAccounts().Informer()
	})
	rbInf := d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Rbac().V1().RoleBindings().Informer()
	})
	depInf := d.KubeInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Apps().V1().Deployments().Informer()
	})
	svcInf := d.KubeInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Services().Informer()
	})
	c := &Children{
		ConfigMaps:      ConfigMapOps(d, cmInf),
		ServiceAccounts: ServiceAccountOps(d, saInf),
		RoleBindings:    RoleBindingOps(d, rbInf),
		Deployments:     DeploymentOps(d, depInf),
		Services:        ServiceOps(d, svcInf),
	}
	return c, []*framework.Informer{cmInf, saInf, rbInf, depInf, svcInf}
}

// childObject is a child kind: a typed object the informers cache.
type childObject interface {
	runtime.Object
	metav1.Object
}

// newOps wires one child kind to its informer, read through FreshReads so
// that a sync sees this controller's own writes before their watch events
// arrive, and to its typed client.
func newOps[T childObject](inf *framework.Informer, gr schema.GroupResource, client func(ns string) framework.ChildClient[T],
	diff func(want, have T) []string, patch func(want, have T, adopt bool) ([]byte, error)) framework.ChildOps[T] {
	get, written := framework.FreshReads[T](inf.Indexer(), gr)
	return framework.ChildOps[T]{Resource: gr.Resource, Get: get, Written: written, Client: client, Diff: diff, PatchBody: patch}
}

// ConfigMapOps are the ChildOps of ConfigMaps read from inf.
func ConfigMapOps(d *framework.Deps, inf *framework.Informer) framework.ChildOps[*corev1.ConfigMap] {
	return newOps(inf, corev1.Resource("configmaps"), func(ns string) framework.ChildClient[*corev1.ConfigMap] {
		return d.Kube.CoreV1().ConfigMaps(ns)
	}, drift.DiffConfigMap, drift.ConfigMapPatch)
}

// ServiceAccountOps are the ChildOps of ServiceAccounts read from inf.
func ServiceAccountOps(d *framework.Deps, inf *framework.Informer) framework.ChildOps[*corev1.ServiceAccount] {
	return newOps(inf, corev1.Resource("serviceaccounts"), func(ns string) framework.ChildClient[*corev1.ServiceAccount] {
		return d.Kube.CoreV1().ServiceAccounts(ns)
	}, drift.DiffServiceAccount, drift.ServiceAccountPatch)
}

// RoleBindingOps are the ChildOps of RoleBindings read from inf; a
// binding whose roleRef drifted is recreated.
func RoleBindingOps(d *framework.Deps, inf *framework.Informer) framework.ChildOps[*rbacv1.RoleBinding] {
	ops := newOps(inf, rbacv1.Resource("rolebindings"), func(ns string) framework.ChildClient[*rbacv1.RoleBinding] {
		return d.Kube.RbacV1().RoleBindings(ns)
	}, drift.DiffRoleBinding, drift.RoleBindingPatch)
	ops.NeedsRecreate = drift.RoleBindingNeedsRecreate
	return ops
}

// DeploymentOps are the ChildOps of Deployments read from inf; one whose
// selector drifted is recreated.
func DeploymentOps(d *framework.Deps, inf *framework.Informer) framework.ChildOps[*appsv1.Deployment] {
	ops := newOps(inf, appsv1.Resource("deployments"), func(ns string) framework.ChildClient[*appsv1.Deployment] {
		return d.Kube.AppsV1().Deployments(ns)
	}, drift.DiffDeployment, func(want, have *appsv1.Deployment, adopt bool) ([]byte, error) {
		return drift.DeploymentPatch(want, have, nil, adopt)
	})
	ops.NeedsRecreate = drift.DeploymentNeedsRecreate
	return ops
}

// ServiceOps are the ChildOps of Services read from inf.
func ServiceOps(d *framework.Deps, inf *framework.Informer) framework.ChildOps[*corev1.Service] {
	return newOps(inf, corev1.Resource("services"), func(ns string) framework.ChildClient[*corev1.Service] {
		return d.Kube.CoreV1().Services(ns)
	}, drift.DiffService, drift.ServicePatch)
}

// StatefulSetOps are the ChildOps of StatefulSets read from inf: their pod
// is built whole (drift.DiffStatefulSet), and one whose immutable fields
// drifted is recreated.
func StatefulSetOps(d *framework.Deps, inf *framework.Informer) framework.ChildOps[*appsv1.StatefulSet] {
	ops := newOps(inf, appsv1.Resource("statefulsets"), func(ns string) framework.ChildClient[*appsv1.StatefulSet] {
		return d.Kube.AppsV1().StatefulSets(ns)
	}, drift.DiffStatefulSet, drift.StatefulSetPatch)
	ops.NeedsRecreate = drift.StatefulSetNeedsRecreate
	return ops
}

// NamedServiceAccount returns the cached ServiceAccount a spec's
// serviceAccount names, for CheckServiceAccount: nil when the spec names
// none or no such account exists. An account that is no workload's child
// is cached as its metadata only (framework.TrimForeign), which is all
// CheckServiceAccount reads.
func (c *Children) NamedServiceAccount(namespace string, spec *string) *corev1.ServiceAccount {
	return NamedServiceAccount(c.ServiceAccounts, namespace, spec)
}

// NamedServiceAccount is Children.NamedServiceAccount for a controller
// that reads ServiceAccounts through ops.
func NamedServiceAccount(ops framework.ChildOps[*corev1.ServiceAccount], namespace string, spec *string) *corev1.ServiceAccount {
	name, ok := wiring.CustomServiceAccount(spec)
	if !ok {
		return nil
	}
	sa, err := ops.Get(namespace, name)
	if err != nil {
		return nil
	}
	return sa
}

// Desired are the children of one workload in the order Ensure writes
// them: the pod's identities, permissions and configuration before the
// Deployment, so that its first pod finds them. A nil child is not
// wanted.
type Desired struct {
	RunnerServiceAccount *corev1.ServiceAccount
	RunnerRoleBinding    *rbacv1.RoleBinding
	PodServiceAccount    *corev1.ServiceAccount
	// AuthzConfigMap is a proxy's inline authorization config; when it
	// is nil, one named StaleAuthzConfigMap that this workload controls is
	// deleted.
	AuthzConfigMap      *corev1.ConfigMap
	StaleAuthzConfigMap string
	ConfigMap           *corev1.ConfigMap
	Service             *corev1.Service
	Deployment          *appsv1.Deployment
	// Stale names children made earlier that are no longer wanted (the
	// runner's binding and account once the spec names its own account):
	// they are deleted after the Deployment, so that no pod is left
	// without the permissions it runs with, and nothing keeps granting
	// permissions to an account no pod uses. The binding goes first.
	StaleRoleBinding, StaleServiceAccount string
}

// Ensure converges every child of owner (namespace ns) and returns the
// Deployment.
func (c *Children) Ensure(ctx context.Context, w *framework.Writer, owner types.UID, ns string, d Desired) (*appsv1.Deployment, error) {
	steps := []func() error{
		ensureIf(ctx, w, c.ServiceAccounts, d.RunnerServiceAccount, owner),
		ensureIf(ctx, w, c.RoleBindings, d.RunnerRoleBinding, owner),
		ensureIf(ctx, w, c.ServiceAccounts, d.PodServiceAccount, owner),
		ensureIf(ctx, w, c.ConfigMaps, d.AuthzConfigMap, owner),
		ensureIf(ctx, w, c.ConfigMaps, d.ConfigMap, owner),
		ensureIf(ctx, w, c.Services, d.Service, owner),
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	dep, err := framework.EnsureChild(ctx, w, c.Deployments, d.Deployment, owner)
	if err != nil {
		return nil, err
	}
	if d.AuthzConfigMap == nil && d.StaleAuthzConfigMap != "" {
		if err := framework.DeleteStaleChild(ctx, w, c.ConfigMaps, ns, d.StaleAuthzConfigMap, owner); err != nil {
			return nil, err
		}
	}
	if d.StaleRoleBinding != "" {
		if err := framework.DeleteStaleChild(ctx, w, c.RoleBindings, ns, d.StaleRoleBinding, owner); err != nil {
			return nil, err
		}
	}
	if d.StaleServiceAccount != "" {
		if err := framework.DeleteStaleChild(ctx, w, c.ServiceAccounts, ns, d.StaleServiceAccount, owner); err != nil {
			return nil, err
		}
	}
	return dep, nil
}

// ensureIf is the step that converges want, or nothing when want is nil.
func ensureIf[T metav1.Object](ctx context.Context, w *framework.Writer, ops framework.ChildOps[T], want T, owner types.UID) func() error {
	return func() error {
		if reflect.ValueOf(want).IsNil() {
			return nil
		}
		_, err := framework.EnsureChild(ctx, w, ops, want, owner)
		return err
	}
}

// WithPodTemplateSpec returns a copy of Deployment ops for a kind whose
// podTemplateSpec is merged into its Deployment's pod
// (DiffDeploymentWithPodTemplate, DeploymentPatchWithPodTemplate).
func WithPodTemplateSpec(ops framework.ChildOps[*appsv1.Deployment]) framework.ChildOps[*appsv1.Deployment] {
	ops.Diff = drift.DiffDeploymentWithPodTemplate
	ops.PatchBody = drift.DeploymentPatchWithPodTemplate
	return ops
}

// WithPodTemplateSpecAndVolumesHash returns a copy of Deployment ops for a
// kind whose podTemplateSpec is merged into its pod and whose built volumes
// are hashed: both annotations are compared and pruned when unwanted.
func WithPodTemplateSpecAndVolumesHash(ops framework.ChildOps[*appsv1.Deployment]) framework.ChildOps[*appsv1.Deployment] {
	ops.Diff = drift.DiffDeploymentWithPodTemplateByVolumesHash
	ops.PatchBody = drift.DeploymentPatchWithPodTemplateAndVolumesHash
	return ops
}

// WithPodVolumesHash returns a copy of Deployment ops that detects volume
// drift through naming.AnnotationPodVolumesHash and prunes the annotation when
// it is no longer wanted.
func WithPodVolumesHash(ops framework.ChildOps[*appsv1.Deployment]) framework.ChildOps[*appsv1.Deployment] {
	ops.Diff = drift.DiffDeploymentByVolumesHash
	ops.PatchBody = func(want, have *appsv1.Deployment, adopt bool) ([]byte, error) {
		return drift.DeploymentPatch(want, have, drift.PodVolumesPrune, adopt)
	}
	return ops
}
