// Package app wires hivekeeper together: clients, informer factories with
// managedFields stripped, the reference indexes, and the controllers. The
// binary (cmd/controller), the integration tests and the benchmark all start
// controllers through Start, so what is tested is what ships.
package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
)

func init() {
	// Events name their involved object by kind, so the recorder's scheme
	// must know the ToolHive kinds as well as the core ones.
	utilruntime.Must(thscheme.AddToScheme(kubescheme.Scheme))
}

// ChildLabelSelector selects every child hivekeeper creates. The core
// informers watch only these objects, so a cluster's unrelated ConfigMaps,
// Deployments and Services never reach hivekeeper's memory.
const ChildLabelSelector = "toolhive=true"

// Defaults of the images the controllers deploy.
const (
	DefaultRunnerImage = "ghcr.io/stacklok/toolhive/proxyrunner:v0.47.0"
	DefaultVMCPImage   = "ghcr.io/stacklok/toolhive/vmcp:v0.47.0"
)

// Options configure the controllers.
type Options struct {
	// Namespaces to watch; empty means all.
	Namespaces []string
	// Workers per controller.
	Workers int
	// RunnerImage is the ToolHive proxy runner image.
	RunnerImage string
	// VMCPImage is the vMCP image.
	VMCPImage string
	// ResyncPeriod of the informers; 0 disables periodic resync.
	ResyncPeriod time.Duration
	// Runners names the ClusterRoles bound to the runner ServiceAccounts;
	// an empty name means its default.
	Runners rbac.Runners
}

// Deps is what a controller constructor gets: clients, the informer
// factories of one watch scope, an event recorder and the options.
type Deps struct {
	Kube              kubernetes.Interface
	Toolhive          versioned.Interface
	KubeInformers     kubeinformers.SharedInformerFactory
	ToolhiveInformers informers.SharedInformerFactory
	Recorder          record.EventRecorder
	Options           Options
	// QueueSuffix keeps queue names unique when several namespaces are
	// watched by separate factories.
	QueueSuffix string
}

// Runnable is a controller.
type Runnable interface {
	Run(ctx context.Context, workers int) error
}

// Constructor builds one controller from Deps. It registers its event
// handlers on the factories' informers.
type Constructor func(d *Deps) (Runnable, error)

var (
	constructorsMu sync.Mutex
	constructors   []namedConstructor
)

type namedConstructor struct {
	name string
	fn   Constructor
}

// Register adds a controller to every Start. Controller packages call it
// from their init via the list in controllers.go.
func Register(name string, fn Constructor) {
	constructorsMu.Lock()
	defer constructorsMu.Unlock()
	constructors = append(constructors, namedConstructor{name, fn})
}

// StripManagedFields is the informers' transform: managedFields are large,
// never read by hivekeeper, and would otherwise double the cache's memory.
func StripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// NewClients builds the clientsets from a rest config. Core types travel
// as protobuf, as kube-controller-manager's do: it is cheaper to encode and
// decode than JSON on both sides, for every write and every watch event.
// Custom resources have no protobuf encoding and stay JSON.
func NewClients(cfg *rest.Config) (kubernetes.Interface, versioned.Interface, error) {
	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = "application/vnd.kubernetes.protobuf"
	kubeCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return nil, nil, err
	}
	th, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return kube, th, nil
}

// Start builds informers and controllers for every watch scope, starts the
// informers, and runs the controllers until ctx is done. ready is closed
// once every cache has synced (it backs /readyz).
func Start(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, opts Options, ready chan<- struct{}) error {
	logger := klog.FromContext(ctx)
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.RunnerImage == "" {
		opts.RunnerImage = DefaultRunnerImage
	}
	if opts.VMCPImage == "" {
		opts.VMCPImage = DefaultVMCPImage
	}
	opts.Runners = opts.Runners.WithDefaults()

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(kubescheme.Scheme, corev1.EventSource{Component: controller.FieldManager})

	scopes := opts.Namespaces
	if len(scopes) == 0 {
		scopes = []string{corev1.NamespaceAll}
	}
	constructorsMu.Lock()
	ctors := append([]namedConstructor(nil), constructors...)
	constructorsMu.Unlock()

	type scope struct {
		deps        *Deps
		controllers []Runnable
	}
	var all []scope
	for _, ns := range scopes {
		d := &Deps{
			Kube:     kube,
			Toolhive: th,
			KubeInformers: kubeinformers.NewSharedInformerFactoryWithOptions(kube, opts.ResyncPeriod,
				kubeinformers.WithNamespace(ns),
				kubeinformers.WithTransform(StripManagedFields),
				kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ChildLabelSelector })),
			ToolhiveInformers: informers.NewSharedInformerFactoryWithOptions(th, opts.ResyncPeriod,
				informers.WithNamespace(ns),
				informers.WithTransform(StripManagedFields)),
			Recorder: recorder,
			Options:  opts,
		}
		if len(scopes) > 1 {
			d.QueueSuffix = "-" + ns
		}
		if err := index.AddToInformers(d.ToolhiveInformers); err != nil {
			return fmt.Errorf("adding indexers: %w", err)
		}
		s := scope{deps: d}
		for _, c := range ctors {
			r, err := c.fn(d)
			if err != nil {
				return fmt.Errorf("building controller %s: %w", c.name, err)
			}
			s.controllers = append(s.controllers, r)
		}
		all = append(all, s)
	}

	for _, s := range all {
		s.deps.KubeInformers.Start(ctx.Done())
		s.deps.ToolhiveInformers.Start(ctx.Done())
	}
	go func() {
		for _, s := range all {
			for _, ok := range s.deps.KubeInformers.WaitForCacheSync(ctx.Done()) {
				if !ok {
					return
				}
			}
			for _, ok := range s.deps.ToolhiveInformers.WaitForCacheSync(ctx.Done()) {
				if !ok {
					return
				}
			}
		}
		logger.Info("Caches synced")
		if ready != nil {
			close(ready)
		}
	}()

	g, gctx := errgroup.WithContext(ctx)
	for _, s := range all {
		for _, c := range s.controllers {
			g.Go(func() error { return c.Run(gctx, opts.Workers) })
		}
	}
	err := g.Wait()
	for _, s := range all {
		s.deps.KubeInformers.Shutdown()
		s.deps.ToolhiveInformers.Shutdown()
	}
	return err
}
