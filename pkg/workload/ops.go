package workload

import (
	"context"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	kube := d.Kube
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
	// Each kind is read through FreshReads, so a sync sees this
	// controller's own writes before their watch events arrive.
	cmGet, cmWritten := framework.FreshReads[*corev1.ConfigMap](cmInf.Indexer(), corev1.Resource("configmaps"))
	saGet, saWritten := framework.FreshReads[*corev1.ServiceAccount](saInf.Indexer(), corev1.Resource("serviceaccounts"))
	rbGet, rbWritten := framework.FreshReads[*rbacv1.RoleBinding](rbInf.Indexer(), rbacv1.Resource("rolebindings"))
	depGet, depWritten := framework.FreshReads[*appsv1.Deployment](depInf.Indexer(), appsv1.Resource("deployments"))
	svcGet, svcWritten := framework.FreshReads[*corev1.Service](svcInf.Indexer(), corev1.Resource("services"))
	c := &Children{
		ConfigMaps: framework.ChildOps[*corev1.ConfigMap]{
			Resource: "configmaps",
			Get:      cmGet,
			Written:  cmWritten,
			Client: func(ns string) framework.ChildClient[*corev1.ConfigMap] {
				return kube.CoreV1().ConfigMaps(ns)
			},
			Diff:      drift.DiffConfigMap,
			PatchBody: drift.ConfigMapPatch,
		},
		ServiceAccounts: framework.ChildOps[*corev1.ServiceAccount]{
			Resource: "serviceaccounts",
			Get:      saGet,
			Written:  saWritten,
			Client: func(ns string) framework.ChildClient[*corev1.ServiceAccount] {
				return kube.CoreV1().ServiceAccounts(ns)
			},
			Diff:      drift.DiffServiceAccount,
			PatchBody: drift.ServiceAccountPatch,
		},
		RoleBindings: framework.ChildOps[*rbacv1.RoleBinding]{
			Resource: "rolebindings",
			Get:      rbGet,
			Written:  rbWritten,
			Client: func(ns string) framework.ChildClient[*rbacv1.RoleBinding] {
				return kube.RbacV1().RoleBindings(ns)
			},
			Diff:          drift.DiffRoleBinding,
			NeedsRecreate: drift.RoleBindingNeedsRecreate,
			PatchBody:     drift.RoleBindingPatch,
		},
		Deployments: framework.ChildOps[*appsv1.Deployment]{
			Resource: "deployments",
			Get:      depGet,
			Written:  depWritten,
			Client: func(ns string) framework.ChildClient[*appsv1.Deployment] {
				return kube.AppsV1().Deployments(ns)
			},
			Diff:          drift.DiffDeployment,
			NeedsRecreate: drift.DeploymentNeedsRecreate,
			PatchBody: func(want, have *appsv1.Deployment, adopt bool) ([]byte, error) {
				return drift.DeploymentPatch(want, have, nil, adopt)
			},
		},
		Services: framework.ChildOps[*corev1.Service]{
			Resource: "services",
			Get:      svcGet,
			Written:  svcWritten,
			Client: func(ns string) framework.ChildClient[*corev1.Service] {
				return kube.CoreV1().Services(ns)
			},
			Diff:      drift.DiffService,
			PatchBody: drift.ServicePatch,
		},
	}
	return c, []*framework.Informer{cmInf, saInf, rbInf, depInf, svcInf}
}

// NamedServiceAccount returns the cached ServiceAccount a spec's
// serviceAccount names, for CheckServiceAccount: nil when the spec names
// none or no such account exists. An account that is no workload's child
// is cached as its metadata only (framework.TrimForeign), which is all
// CheckServiceAccount reads.
func (c *Children) NamedServiceAccount(namespace string, spec *string) *corev1.ServiceAccount {
	name, ok := wiring.CustomServiceAccount(spec)
	if !ok {
		return nil
	}
	sa, err := c.ServiceAccounts.Get(namespace, name)
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
	ConfigMap            *corev1.ConfigMap
	Service              *corev1.Service
	Deployment           *appsv1.Deployment
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
