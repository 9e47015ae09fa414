package framework

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Deps is everything a controller is built from. pkg/app makes one for
// the whole process; tests make one on fake clientsets.
type Deps struct {
	Kube     kubernetes.Interface
	Toolhive versioned.Interface
	// Scopes are the informer factories, one per watched namespace, or a
	// single one for all namespaces. A controller sees them as one through
	// KubeInformer and ToolhiveInformer.
	Scopes   []Scope
	Recorder record.EventRecorder
	// Clock stamps condition transition times; tests fix it.
	Clock clock.PassiveClock
	// Gate is asked before every write (see WriteGate); nil allows all.
	Gate WriteGate
	// Drift, when set, is told every drift a Writer finds (Writer.Drift).
	Drift  DriftObserver
	Config Config
	// FanInWindow is the shortest time a config's or group's status waits
	// for more referrer or member changes before it is recomputed (see
	// FanInDelay); zero recomputes on every change.
	FanInWindow time.Duration
}

// Scope is the informer factories of one watch scope: a namespace, or all
// of them (Namespace empty).
type Scope struct {
	Namespace string
	// Kube holds only objects labelled toolhive=true: the kinds both
	// hivekeeper and ToolHive's operator label so (Deployments, Services),
	// and of which a cluster has many that are neither's.
	Kube kubeinformers.SharedInformerFactory
	// KubeAll selects no label, its transform TrimForeign keeping only the
	// metadata (and a ConfigMap's keys) of what is no workload's child: the kinds ToolHive's operator
	// writes without toolhive=true (ConfigMaps, ServiceAccounts,
	// RoleBindings). hivekeeper must find those children in its cache when
	// it takes over from that operator, or it would create each, be refused
	// (AlreadyExists), and read it live before it could leave it alone.
	KubeAll  kubeinformers.SharedInformerFactory
	Toolhive informers.SharedInformerFactory
	// Selected holds one factory per other label selector: the
	// StatefulSets, Deployments and Services of the kinds whose children
	// ToolHive's operator labels its own way, without toolhive=true
	// (naming.EmbeddingServerSelector, naming.RegistrySelector).
	Selected map[string]kubeinformers.SharedInformerFactory
}

// Factory is what Start and Shutdown need of an informer factory, the
// Kubernetes ones and the generated ToolHive one alike.
type Factory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// Factories are the scope's informer factories, to start and stop.
func (s Scope) Factories() []Factory {
	out := []Factory{s.Kube, s.KubeAll, s.Toolhive}
	for _, sel := range slices.Sorted(maps.Keys(s.Selected)) {
		out = append(out, s.Selected[sel])
	}
	return out
}

// Config is what the controllers deploy: images, the runner
// ClusterRoles their RoleBindings grant, the Redis a workload without
// session storage of its own falls back to (nil for none), whether the
// RunConfigs turn on the runner's usage metrics, the pull secrets every
// workload gets after its own, and the runner's listen address. These are
// the operator-wide settings of ToolHive's operator (its environment), so
// each has a flag.
type Config struct {
	RunnerImage      string
	VMCPImage        string
	RegistryAPIImage string
	Runners          rbac.Runners
	DefaultRedis     *wiring.DefaultRedis
	// UsageMetrics are ToolHive's operator's usage-metrics settings.
	UsageMetrics wiring.UsageMetrics
	PullSecrets  []corev1.LocalObjectReference
	ProxyHost    string
	// Release is the ToolHive release whose output the controllers write.
	Release release.Release
}

// KubeInformer returns one Kubernetes informer kind across every scope,
// from the factories labelled toolhive=true (Scope.Kube).
func (d *Deps) KubeInformer(pick func(kubeinformers.SharedInformerFactory) cache.SharedIndexInformer) *Informer {
	return d.kubeInformer(func(s Scope) kubeinformers.SharedInformerFactory { return s.Kube }, pick)
}

// KubeAllInformer is KubeInformer from the unfiltered factories
// (Scope.KubeAll).
func (d *Deps) KubeAllInformer(pick func(kubeinformers.SharedInformerFactory) cache.SharedIndexInformer) *Informer {
	return d.kubeInformer(func(s Scope) kubeinformers.SharedInformerFactory { return s.KubeAll }, pick)
}

func (d *Deps) kubeInformer(factory func(Scope) kubeinformers.SharedInformerFactory, pick func(kubeinformers.SharedInformerFactory) cache.SharedIndexInformer) *Informer {
	parts := make([]cache.SharedIndexInformer, len(d.Scopes))
	for i, s := range d.Scopes {
		parts[i] = pick(factory(s))
	}
	return newInformer(parts)
}

// SelectedInformer returns one Kubernetes informer kind across every
// scope, from the factories of objects matching selector. It fails when
// the scopes have no factory for selector (pkg/app makes one for each
// selector a controller asks for).
func (d *Deps) SelectedInformer(selector string, pick func(kubeinformers.SharedInformerFactory) cache.SharedIndexInformer) (*Informer, error) {
	parts := make([]cache.SharedIndexInformer, len(d.Scopes))
	for i, s := range d.Scopes {
		f, ok := s.Selected[selector]
		if !ok {
			return nil, fmt.Errorf("no informer factory for the label selector %q", selector)
		}
		parts[i] = pick(f)
	}
	return newInformer(parts), nil
}

// ToolhiveInformer returns one ToolHive informer kind across every scope.
func (d *Deps) ToolhiveInformer(pick func(informers.SharedInformerFactory) cache.SharedIndexInformer) *Informer {
	parts := make([]cache.SharedIndexInformer, len(d.Scopes))
	for i, s := range d.Scopes {
		parts[i] = pick(s.Toolhive)
	}
	return newInformer(parts)
}

// NewWriter returns the Writer of the controller name, behind the gate,
// telling d.Drift of every drift.
func (d *Deps) NewWriter(name string) *Writer {
	w := NewWriter(name, d.Gate)
	w.onDrift = d.Drift
	return w
}

// DriftObserver is told, for one child, the owned fields its comparator
// found different from what the controller builds: the reason of the
// write that follows. kubectl hivekeeper preflight names with it the field
// that restarts a pod.
type DriftObserver func(controller, resource string, obj klog.ObjectRef, fields []string)

// Runnable is a built controller.
type Runnable interface {
	Run(ctx context.Context, workers int) error
	// Drained and StartAfter are the Loop's: they order the first syncs
	// of a cold start (Descriptor.Referenced).
	Drained() <-chan struct{}
	StartAfter(chs ...<-chan struct{})
	// Idle is the Loop's: nothing queued and nothing in flight.
	Idle() bool
	// Hold is the Loop's: a warm standby's queue stays empty until Run.
	Hold()
}

// Descriptor names a controller and builds it: pkg/app lists them, the
// way kube-controller-manager lists its controller descriptors.
type Descriptor struct {
	Name string
	New  func(*Deps) (Runnable, error)
	// Referenced marks a controller of objects the workload controllers
	// read (configs, groups): the others start their workers once it has
	// synced each of its objects once.
	Referenced bool
}

// AsReferenced marks d as a controller of referenced objects.
func (d Descriptor) AsReferenced() Descriptor {
	d.Referenced = true
	return d
}

// Describe makes the Descriptor of a controller package's Name and New.
func Describe[C Runnable](name string, newFn func(*Deps) (C, error)) Descriptor {
	return Descriptor{Name: name, New: func(d *Deps) (Runnable, error) {
		c, err := newFn(d)
		if err != nil {
			return nil, fmt.Errorf("building controller %s: %w", name, err)
		}
		return c, nil
	}}
}
