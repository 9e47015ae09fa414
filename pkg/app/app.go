// Package app wires hivekeeper together: clients, informer factories with
// managedFields stripped, the reference indexes, and the list of
// controllers (Controllers). The
// binary (cmd/controller), the integration tests and the benchmark all start
// controllers through Start, so what is tested is what ships; kubectl
// hivekeeper preflight runs the same set (Build) over in-memory copies of a
// cluster's objects.
package app

import (
	"cmp"
	"context"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hivekeeper/hivekeeper/pkg/controller/embeddingserver"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpauthzconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpexternalauthconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpoidcconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpregistry"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpremoteproxy"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserverentry"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcptelemetryconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcptoolconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpwebhookconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpcompositetooldefinition"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

func init() {
	// Events name their involved object by kind, so the recorder's scheme
	// must know the ToolHive kinds as well as the core ones.
	utilruntime.Must(thscheme.AddToScheme(kubescheme.Scheme))
}

// ChildLabelSelector selects every child hivekeeper creates. The
// Deployment and Service informers watch only these objects, so a
// cluster's unrelated Deployments and Services never reach hivekeeper's
// memory. ConfigMaps, ServiceAccounts and RoleBindings are watched whole
// (framework.Scope.KubeAll), the unrelated ones cached as their metadata
// only.
const ChildLabelSelector = "toolhive=true"

// SelectedLabelSelectors select the StatefulSets, Deployments and
// Services that do not carry toolhive=true: those of the kinds ToolHive's
// operator labels its own way (EmbeddingServer, MCPRegistry), which
// hivekeeper labels the same way so that either operator finds the
// other's children. Each has informer factories of its own
// (framework.Scope.Selected).
//
// The proxy pods of the MCPServers and MCPRemoteProxies and the vMCPs'
// pods are selected too (naming.WorkloadPodSelector), and cached trimmed
// (framework.TrimPod).
var SelectedLabelSelectors = []string{naming.EmbeddingServerSelector, naming.RegistrySelector, naming.WorkloadPodSelector}

// ReleaseImages are the proxy runner and vMCP images of ToolHive release r,
// the controllers' defaults.
func ReleaseImages(r release.Release) (runner, vmcp string) {
	return "ghcr.io/stacklok/toolhive/proxyrunner:" + r.Version, "ghcr.io/stacklok/toolhive/vmcp:" + r.Version
}

// Defaults of the images the controllers deploy.
const (
	// DefaultRunnerImage and DefaultVMCPImage are the newest release's
	// (ReleaseImages of release.Newest()).
	DefaultRunnerImage = "ghcr.io/stacklok/toolhive/proxyrunner:v0.66.0"
	DefaultVMCPImage   = "ghcr.io/stacklok/toolhive/vmcp:v0.66.0"
	// DefaultRegistryAPIImage is the registry API image of ToolHive's
	// operator chart at the same release.
	DefaultRegistryAPIImage = "ghcr.io/stacklok/thv-registry-api:v1.5.3"
	// DefaultProxyHost is the runner's listen address of ToolHive's
	// operator chart (operator.proxyHost).
	DefaultProxyHost = "0.0.0.0"
)

// release is the release written: Options.Release, or the newest.
func (o Options) release() release.Release {
	if o.Release.Version == "" {
		return release.Newest()
	}
	return o.Release
}

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
	// RegistryAPIImage is the MCPRegistry's registry API image.
	RegistryAPIImage string
	// UsageMetrics are ToolHive's operator's usage-metrics settings, which
	// decide the RunConfigs' usage-metrics middleware and what the release
	// passes to the workloads (wiring.UsageMetrics).
	UsageMetrics wiring.UsageMetrics
	// Release is the ToolHive release whose output is written; the zero
	// value means the newest (release.Newest).
	Release release.Release
	// PullSecrets name the Secrets every workload's pods and accounts pull
	// images with, after the workload's own.
	PullSecrets []string
	// ProxyHost is the runner's listen address in the RunConfig; empty
	// means DefaultProxyHost.
	ProxyHost string
	// ResyncPeriod of the informers; 0 disables periodic resync.
	ResyncPeriod time.Duration
	// Runners names the ClusterRoles bound to the runner ServiceAccounts;
	// an empty name means its default.
	Runners rbac.Runners
	// DefaultRedis is the session storage Redis of a workload whose spec
	// names none (see wiring.SessionStorage); nil for none.
	DefaultRedis *wiring.DefaultRedis
	// WriteGate is asked before every write; nil allows every write. The
	// binary sets it under leader election.
	WriteGate framework.WriteGate
	// FanInWindow is how long a config's or group's status waits for more
	// referrer or member changes before it is recomputed (the base of
	// framework.FanInDelay). Zero means DefaultFanInWindow; a negative
	// window recomputes on every change.
	FanInWindow time.Duration
	// Drift, when set, is told every drift the controllers find
	// (framework.Deps.Drift); the binary sets none.
	Drift framework.DriftObserver
	// ResolveUsageMetrics, when set, is called once before the workers
	// start, and its result replaces UsageMetrics: it reads, and stores
	// when missing, the installation's instance id
	// (app.ResolveUsageMetrics), a write that under leader election only
	// the leader makes. An error stops the controllers.
	ResolveUsageMetrics func(context.Context) (wiring.UsageMetrics, error)
}

// DefaultFanInWindow is the default Options.FanInWindow: short enough that
// a status follows a single change within a second, long enough that a
// burst of thousands of changes costs a handful of status writes.
const DefaultFanInWindow = 500 * time.Millisecond

// Controllers lists every controller hivekeeper runs, in start order.
// Adding a controller is one line here; a controller of objects the
// workloads reference is AsReferenced, so that at a cold start the
// workload controllers wait until it has synced each object once.
func Controllers() []framework.Descriptor {
	return []framework.Descriptor{
		framework.Describe(mcpgroup.Name, mcpgroup.New).AsReferenced(),
		framework.Describe(mcpoidcconfig.Name, mcpoidcconfig.New).AsReferenced(),
		framework.Describe(mcptoolconfig.Name, mcptoolconfig.New).AsReferenced(),
		framework.Describe(mcpauthzconfig.Name, mcpauthzconfig.New).AsReferenced(),
		framework.Describe(mcpexternalauthconfig.Name, mcpexternalauthconfig.New).AsReferenced(),
		framework.Describe(mcptelemetryconfig.Name, mcptelemetryconfig.New).AsReferenced(),
		framework.Describe(mcpwebhookconfig.Name, mcpwebhookconfig.New).AsReferenced(),
		framework.Describe(virtualmcpcompositetooldefinition.Name, virtualmcpcompositetooldefinition.New).AsReferenced(),
		framework.Describe(mcpserverentry.Name, mcpserverentry.New).AsReferenced(),
		framework.Describe(embeddingserver.Name, embeddingserver.New).AsReferenced(),
		framework.Describe(mcpserver.Name, mcpserver.New),
		framework.Describe(mcpremoteproxy.Name, mcpremoteproxy.New),
		framework.Describe(virtualmcpserver.Name, virtualmcpserver.New),
		framework.Describe(mcpregistry.Name, mcpregistry.New),
	}
}

// StripManagedFields is the informers' transform: managedFields are large,
// never read by hivekeeper, and would otherwise double the cache's memory.
func StripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// stripOrTrimPod is the labelled informers' transform: a pod reduced to
// what a status reads of it (framework.TrimPod), anything else
// StripManagedFields.
func stripOrTrimPod(obj any) (any, error) {
	if _, ok := obj.(*corev1.Pod); ok {
		return framework.TrimPod(obj)
	}
	return StripManagedFields(obj)
}

// trimChild is the transform of the informers of children labelled
// toolhive=true: stripOrTrimPod, and a StatefulSet, which there is the
// runner's, reduced to its metadata: the MCPServer controller reads only
// whether it exists, and its pod template is the MCP server's, secrets in
// its environment included. (An EmbeddingServer's StatefulSets, read whole,
// come from the factory of their own labels.)
func trimChild(obj any) (any, error) {
	if sts, ok := obj.(*appsv1.StatefulSet); ok {
		sts.Spec, sts.Status = appsv1.StatefulSetSpec{}, appsv1.StatefulSetStatus{}
	}
	return stripOrTrimPod(obj)
}

// trimForeign is the unfiltered informers' transform: StripManagedFields,
// then framework.TrimForeign.
func trimForeign(obj any) (any, error) {
	obj, err := StripManagedFields(obj)
	if err != nil {
		return nil, err
	}
	return framework.TrimForeign(obj)
}

// NewClients builds the clientsets from a rest config. Core types travel
// as protobuf, as kube-controller-manager's do: it is cheaper to encode and
// decode than JSON on both sides, for every write and every watch event.
// Custom resources have no protobuf encoding and stay JSON.
//
// Responses are not compressed, as kube-controller-manager and
// kube-scheduler ask: the API server gzips every flush of a watch
// separately for each watcher that accepts gzip (encoding is shared
// between watchers, compression is not), and every large list. A cold
// start profile showed gzip at a quarter of what serving the controller's
// watches cost kube-apiserver, and the controller spent CPU inflating it;
// between a controller and its API server CPU is scarcer than bandwidth.
func NewClients(cfg *rest.Config) (kubernetes.Interface, versioned.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
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

// Start builds the informers and one controller of each kind across every
// watched namespace (Build), with an event recorder that writes Events
// through kube, and runs them until ctx is done. ready is closed once
// every cache has synced (it backs /readyz).
func Start(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, opts Options, ready chan<- struct{}) error {
	return start(ctx, kube, th, opts, func(s *Set) error { return s.Run(ctx, ready) })
}

// Elect campaigns for the leader-election lease until ctx is done or this
// replica's leadership ends. Once this replica leads it calls lead with a
// context that ends with its leadership, and returns lead's result.
type Elect func(ctx context.Context, lead func(context.Context) error) error

// StartElected is Start for a replica of several, as a warm standby
// (Set.RunElected): its informers run and its caches are synced (ready is
// closed then) before it leads, and its controllers write only while elect
// says it leads.
func StartElected(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, opts Options, ready chan<- struct{}, elect Elect) error {
	return start(ctx, kube, th, opts, func(s *Set) error { return s.RunElected(ctx, ready, elect) })
}

// start builds the set with an event recorder that writes Events through
// kube and runs it.
func start(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, opts Options, run func(*Set) error) error {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(kubescheme.Scheme, corev1.EventSource{Component: framework.FieldManager})

	set, err := Build(kube, th, opts, recorder)
	if err != nil {
		return err
	}
	return run(set)
}

// Set is every controller of Controllers, built over one Deps.
type Set struct {
	// Deps are what the controllers were built from.
	Deps        *framework.Deps
	controllers []framework.Runnable
	workers     int
	resolve     func(context.Context) (wiring.UsageMetrics, error)
}

// Build applies opts' defaults, makes the dependencies (NewDeps) and builds
// every controller of Controllers in start order, the workload controllers
// held until the referenced kinds' controllers have synced each of their
// objects once. Nothing runs until Run. Start is Build and Run; kubectl
// hivekeeper preflight builds the same set over in-memory clients.
func Build(kube kubernetes.Interface, th versioned.Interface, opts Options, recorder record.EventRecorder) (*Set, error) {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.RunnerImage == "" {
		opts.RunnerImage = DefaultRunnerImage
	}
	if opts.VMCPImage == "" {
		opts.VMCPImage = DefaultVMCPImage
	}
	if opts.RegistryAPIImage == "" {
		opts.RegistryAPIImage = DefaultRegistryAPIImage
	}
	opts.Runners = opts.Runners.WithDefaults()

	d := NewDeps(kube, th, opts, recorder)
	s := &Set{Deps: d, workers: opts.Workers, resolve: opts.ResolveUsageMetrics}
	var workloads []framework.Runnable
	var referenced []<-chan struct{}
	for _, desc := range Controllers() {
		c, err := desc.New(d)
		if err != nil {
			return nil, err
		}
		s.controllers = append(s.controllers, c)
		if desc.Referenced {
			referenced = append(referenced, c.Drained())
		} else {
			workloads = append(workloads, c)
		}
	}
	for _, c := range workloads {
		c.StartAfter(referenced...)
	}
	return s, nil
}

// Idle reports whether every controller has synced each object it had at
// start once (Drained) and now has no key queued and no sync in flight
// (framework.Loop.Idle).
func (s *Set) Idle() bool {
	for _, c := range s.controllers {
		select {
		case <-c.Drained():
		default:
			return false
		}
		if !c.Idle() {
			return false
		}
	}
	return true
}

// Run starts the informers and runs the controllers until ctx is done,
// then shuts the informers down. ready, when not nil, is closed once every
// cache has synced.
func (s *Set) Run(ctx context.Context, ready chan<- struct{}) error {
	defer s.startInformers(ctx, ready)()
	return s.runControllers(ctx)
}

// RunElected runs the set as a warm standby until it leads: the informers
// start at once and ready is closed once every cache has synced, while
// every controller's queue is held (framework.Loop.Hold), so nothing is
// synced and nothing written. elect calls back once this replica leads;
// then the controllers run on the synced caches, every object enqueued
// once as at a start, until leadership ends. The informers stop when
// RunElected returns.
func (s *Set) RunElected(ctx context.Context, ready chan<- struct{}, elect Elect) error {
	for _, c := range s.controllers {
		c.Hold()
	}
	defer s.startInformers(ctx, ready)()
	return elect(ctx, s.runControllers)
}

// startInformers starts every informer factory; ready, when not nil, is
// closed once every cache has synced. The informers run until ctx is done
// or stop is called; stop waits for them.
func (s *Set) startInformers(ctx context.Context, ready chan<- struct{}) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	logger := klog.FromContext(ctx)
	d := s.Deps
	for _, sc := range d.Scopes {
		for _, f := range sc.Factories() {
			f.Start(ctx.Done())
		}
	}
	go func() {
		for _, sc := range d.Scopes {
			for _, f := range sc.Factories() {
				for _, ok := range f.WaitForCacheSync(ctx.Done()) {
					if !ok {
						return
					}
				}
			}
		}
		logger.Info("Caches synced")
		if ready != nil {
			close(ready)
		}
	}()
	return func() {
		// Shutdown waits for informers that stop when ctx is done: a
		// replica that lost the lease stops them before its process
		// context ends.
		cancel()
		for _, sc := range d.Scopes {
			for _, f := range sc.Factories() {
				f.Shutdown()
			}
		}
	}
}

// runControllers completes the usage metrics (Options.ResolveUsageMetrics)
// and runs every controller until ctx is done: each waits for its caches,
// then starts its workers.
func (s *Set) runControllers(ctx context.Context) error {
	if s.resolve != nil {
		u, err := s.resolve(ctx)
		if err != nil {
			return err
		}
		// No worker runs yet: the controllers read it from here
		// (workload.Base.Config) once they start.
		s.Deps.Config.UsageMetrics = u
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range s.controllers {
		g.Go(func() error { return c.Run(gctx, s.workers) })
	}
	return g.Wait()
}

// NewDeps builds the controllers' dependencies: three informer factories
// per watched namespace (or for all), managedFields stripped: the
// Kubernetes ones holding only workloads' children (by label, or whole
// with what is no workload's child reduced to its metadata; see
// framework.Scope), the ToolHive one carrying the reference indexes.
// Every controller gets the same Deps, so there is one controller per kind
// whatever the number of namespaces.
func NewDeps(kube kubernetes.Interface, th versioned.Interface, opts Options, recorder record.EventRecorder) *framework.Deps {
	scopes := opts.Namespaces
	if len(scopes) == 0 {
		scopes = []string{corev1.NamespaceAll}
	}
	runnerImage, vmcpImage := ReleaseImages(opts.release())
	d := &framework.Deps{
		Kube: kube, Toolhive: th, Recorder: recorder, Clock: clock.RealClock{}, Gate: opts.WriteGate, Drift: opts.Drift,
		Config: framework.Config{RunnerImage: cmp.Or(opts.RunnerImage, runnerImage), VMCPImage: cmp.Or(opts.VMCPImage, vmcpImage), RegistryAPIImage: opts.RegistryAPIImage,
			Runners: opts.Runners.WithDefaults(), DefaultRedis: opts.DefaultRedis, UsageMetrics: opts.UsageMetrics,
			PullSecrets: wiring.PullSecretRefs(opts.PullSecrets), ProxyHost: cmp.Or(opts.ProxyHost, DefaultProxyHost),
			Release: opts.release()},
		FanInWindow: max(0, cmp.Or(opts.FanInWindow, DefaultFanInWindow)),
	}
	for _, ns := range scopes {
		kubeFactory := func(selector string, transform cache.TransformFunc) kubeinformers.SharedInformerFactory {
			return kubeinformers.NewSharedInformerFactoryWithOptions(kube, opts.ResyncPeriod,
				kubeinformers.WithNamespace(ns),
				kubeinformers.WithTransform(transform),
				kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
		}
		s := framework.Scope{
			Namespace: ns,
			Kube:      kubeFactory(ChildLabelSelector, trimChild),
			KubeAll: kubeinformers.NewSharedInformerFactoryWithOptions(kube, opts.ResyncPeriod,
				kubeinformers.WithNamespace(ns),
				kubeinformers.WithTransform(trimForeign)),
			Toolhive: informers.NewSharedInformerFactoryWithOptions(th, opts.ResyncPeriod,
				informers.WithNamespace(ns),
				informers.WithTransform(StripManagedFields)),
			Selected: map[string]kubeinformers.SharedInformerFactory{},
		}
		for _, sel := range SelectedLabelSelectors {
			s.Selected[sel] = kubeFactory(sel, stripOrTrimPod)
		}
		// Before any informer starts; the indexes are the same for every
		// controller that asks.
		utilruntime.Must(index.AddToInformers(s.Toolhive))
		d.Scopes = append(d.Scopes, s)
	}
	return d
}
