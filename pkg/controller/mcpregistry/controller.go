package mcpregistry

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of its metrics.
const Name = "mcpregistry"

// resource is the resource label of the writes to MCPRegistries.
const resource = "mcpregistries"

// Controller converges MCPRegistries.
type Controller struct {
	*framework.Loop

	toolhive        versioned.Interface
	registries      thlisters.MCPRegistryLister
	configMaps      framework.ChildOps[*corev1.ConfigMap]
	serviceAccounts framework.ChildOps[*corev1.ServiceAccount]
	roleBindings    framework.ChildOps[*rbacv1.RoleBinding]
	deployments     framework.ChildOps[*appsv1.Deployment]
	services        framework.ChildOps[*corev1.Service]
	config          framework.Config
	writer          *framework.Writer
	recorder        record.EventRecorder
	clock           clock.PassiveClock
}

// New builds the controller and registers its event handlers: its own
// kind, and its children (every change, the Deployment's status included:
// its ready replicas are the registry's phase).
func New(d *framework.Deps) (*Controller, error) {
	registries := d.ToolhiveInformer(func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPRegistries().Informer()
	})
	// The ConfigMap, ServiceAccount and RoleBinding are read from the
	// informers of every object of their kinds, as the workloads' are; the
	// Deployment and Service, which ToolHive's operator labels without
	// toolhive=true, by the registry's own label.
	children := []*framework.Informer{
		d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().ConfigMaps().Informer()
		}),
		d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().ServiceAccounts().Informer()
		}),
		d.KubeAllInformer(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Rbac().V1().RoleBindings().Informer()
		}),
	}
	for _, pick := range []func(kubeinformers.SharedInformerFactory) cache.SharedIndexInformer{
		func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Apps().V1().Deployments().Informer()
		},
		func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Services().Informer()
		},
	} {
		inf, err := d.SelectedInformer(naming.RegistrySelector, pick)
		if err != nil {
			return nil, err
		}
		children = append(children, inf)
	}
	c := &Controller{
		toolhive:        d.Toolhive,
		registries:      thlisters.NewMCPRegistryLister(registries.Indexer()),
		configMaps:      workload.ConfigMapOps(d, children[0]),
		serviceAccounts: workload.ServiceAccountOps(d, children[1]),
		roleBindings:    workload.RoleBindingOps(d, children[2]),
		deployments:     workload.DeploymentOps(d, children[3]),
		services:        workload.ServiceOps(d, children[4]),
		config:          d.Config,
		writer:          d.NewWriter(Name),
		recorder:        d.Recorder,
		clock:           d.Clock,
	}
	// The account gets the spec's pull secrets, as ToolHive's operator
	// gives them; the pod is built whole, the template merged ToolHive's
	// way (not a strategic merge), so it is compared by value.
	c.serviceAccounts.Diff, c.serviceAccounts.PatchBody = drift.DiffServiceAccountWithPullSecrets, drift.ServiceAccountPatchWithPullSecrets
	c.deployments.Diff, c.deployments.PatchBody = drift.DiffDeploymentWholePod, drift.DeploymentPatchWholePod
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Loop = framework.NewLoop(Name, c.sync)
	lookup := func(ns, name string) (types.UID, bool) {
		r, err := c.registries.MCPRegistries(ns).Get(name)
		if err != nil {
			return "", false
		}
		return r.UID, true
	}
	childHandler := framework.ChildHandler(thv1.Kind(thv1.KindMCPRegistry), lookup, c.EnqueueKey)
	synced, err := registries.AddEventHandler(framework.PrimaryHandler(c.Loop, c.writer))
	if err != nil {
		return nil, fmt.Errorf("adding handler: %w", err)
	}
	c.AddSynced(synced)
	c.AddPrimary(registries.Indexer())
	for _, i := range children {
		synced, err := i.AddEventHandler(childHandler)
		if err != nil {
			return nil, fmt.Errorf("adding handler: %w", err)
		}
		c.AddSynced(synced)
	}
	// The account a podTemplateSpec names re-syncs the registry when it
	// appears, goes or changes owner.
	if err := workload.WatchNamedServiceAccounts(d, registries.Indexer(), c.Loop); err != nil {
		return nil, fmt.Errorf("adding handler: %w", err)
	}
	return c, nil
}
