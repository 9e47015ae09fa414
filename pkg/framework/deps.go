package framework

import (
	"time"

	"context"
	"fmt"

	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
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
	Gate   WriteGate
	Config Config
	// FanInWindow is the shortest time a config's or group's status waits
	// for more referrer or member changes before it is recomputed (see
	// FanInDelay); zero recomputes on every change.
	FanInWindow time.Duration
}

// Scope is the informer factories of one watch scope: a namespace, or all
// of them (Namespace empty). The Kubernetes factory holds only objects
// labelled toolhive=true.
type Scope struct {
	Namespace string
	Kube      kubeinformers.SharedInformerFactory
	Toolhive  informers.SharedInformerFactory
}

// Config is what the controllers deploy: images, the runner
// ClusterRoles their RoleBindings grant, and whether the RunConfigs turn
// on the runner's usage metrics.
type Config struct {
	RunnerImage  string
	VMCPImage    string
	Runners      rbac.Runners
	UsageMetrics bool
}

// KubeInformer returns one Kubernetes informer kind across every scope.
func (d *Deps) KubeInformer(pick func(kubeinformers.SharedInformerFactory) cache.SharedIndexInformer) *Informer {
	parts := make([]cache.SharedIndexInformer, len(d.Scopes))
	for i, s := range d.Scopes {
		parts[i] = pick(s.Kube)
	}
	return newInformer(parts)
}

// ToolhiveInformer returns one ToolHive informer kind across every scope.
func (d *Deps) ToolhiveInformer(pick func(informers.SharedInformerFactory) cache.SharedIndexInformer) *Informer {
	parts := make([]cache.SharedIndexInformer, len(d.Scopes))
	for i, s := range d.Scopes {
		parts[i] = pick(s.Toolhive)
	}
	return newInformer(parts)
}

// NewWriter returns the Writer of the controller name, behind the gate.
func (d *Deps) NewWriter(name string) *Writer { return NewWriter(name, d.Gate) }

// Runnable is a built controller.
type Runnable interface {
	Run(ctx context.Context, workers int) error
	// Drained and StartAfter are the Loop's: they order the first syncs
	// of a cold start (Descriptor.Referenced).
	Drained() <-chan struct{}
	StartAfter(chs ...<-chan struct{})
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
