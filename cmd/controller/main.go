// Command hivekeeper runs the hivekeeper controllers for the ToolHive MCP
// API (toolhive.stacklok.dev/v1beta1).
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/secureserving"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

type options struct {
	kubeconfig           string
	namespaces           []string
	workers              int
	qps                  float32
	burst                int
	runnerImage          string
	vmcpImage            string
	registryAPIImage     string
	usageMetrics         bool
	skipUpdateCheck      bool
	toolhiveRelease      string
	instanceIDNamespace  string
	runners              rbac.Runners
	redis                redisFlags
	metricsAddr          string
	metricsSecure        bool
	profiling            bool
	metricsCertPath      string
	healthAddr           string
	leaderElect          bool
	leaderElectNamespace string
	leaderElectID        string
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration
	shutdownGrace        time.Duration
	resync               time.Duration
	fanInWindow          time.Duration
	logFormat            string
	showVersion          bool
	defaultPullSecrets   []string
	proxyHost            string
}

// defaultGCPercent makes the collector run at half the default heap growth:
// a controller's heap is mostly its informer caches, and a smaller GC target
// keeps resident memory close to them for a little CPU. GOGC overrides it.
const defaultGCPercent = 50

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if err := run(); err != nil {
		klog.ErrorS(err, "hivekeeper failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}

func run() error {
	o := options{}
	fs := pflag.CommandLine
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Empty means the in-cluster configuration.")
	fs.StringSliceVar(&o.namespaces, "namespaces", nil, "Comma-separated namespaces to watch. Empty means all namespaces.")
	fs.IntVar(&o.workers, "workers", 16, "Concurrent syncs per controller. Syncs wait on the API server, so more workers than cores pay off.")
	fs.Float32Var(&o.qps, "kube-api-qps", -1, "Client-side limit of queries per second to the API server. Negative (the default) disables it: flow control is left to the server's API Priority and Fairness, as SIG API Machinery recommends.")
	fs.IntVar(&o.burst, "kube-api-burst", 1000, "Burst above --kube-api-qps when it is positive.")
	fs.StringVar(&o.toolhiveRelease, "toolhive-release", release.Newest().Version, "The ToolHive release whose output hivekeeper writes, one of "+strings.Join(release.Versions(), ", ")+": the release of the ToolHive operator a cluster switches from (kubectl hivekeeper preflight prints it), so the switch restarts no pod. Moving it to a newer release changes workloads as ToolHive's own upgrade to it does.")
	fs.StringVar(&o.runnerImage, "runner-image", "", "ToolHive proxy runner image for MCPServer and MCPRemoteProxy Deployments. Empty: the --toolhive-release's (ghcr.io/stacklok/toolhive/proxyrunner:<release>).")
	fs.StringVar(&o.vmcpImage, "vmcp-image", "", "vMCP image for VirtualMCPServer Deployments. Empty: the --toolhive-release's (ghcr.io/stacklok/toolhive/vmcp:<release>).")
	fs.StringVar(&o.registryAPIImage, "registry-api-image", app.DefaultRegistryAPIImage, "ToolHive registry API image for MCPRegistry Deployments.")
	fs.BoolVar(&o.usageMetrics, "toolhive-usage-metrics", true, "ToolHive's usage metrics: on, the runner's anonymous usage-metrics middleware is written into every RunConfig, as ToolHive's operator does by default. Set it to false where ToolHive's operator ran with TOOLHIVE_USAGE_METRICS_ENABLED=false; from ToolHive v0.66.0 on, workloads then get TOOLHIVE_USAGE_METRICS_ENABLED=false too.")
	fs.BoolVar(&o.skipUpdateCheck, "toolhive-skip-update-check", false, "Set it where ToolHive's operator ran with TOOLHIVE_SKIP_UPDATE_CHECK=true or a CI variable in its environment: no RunConfig gets the usage-metrics middleware and, from ToolHive v0.66.0 on, workloads get TOOLHIVE_SKIP_UPDATE_CHECK=true.")
	fs.StringVar(&o.instanceIDNamespace, "toolhive-instance-id-namespace", "", "Namespace of the ConfigMap "+app.InstanceIDConfigMap+", which holds the installation's anonymous id that ToolHive's operator (from v0.66.0 on) gives every workload: ToolHive's operator's namespace. hivekeeper reads it before its first sync (the leader, under leader election) and creates it, as ToolHive's operator does, when it is missing. Empty: the namespace hivekeeper runs in (POD_NAMESPACE), else "+app.DefaultInstanceIDNamespace+".")
	fs.StringSliceVar(&o.defaultPullSecrets, "default-image-pull-secrets", nil, "Comma-separated Secret names added to the imagePullSecrets of every workload's pods and ServiceAccounts, after the workload's own (ToolHive's TOOLHIVE_DEFAULT_IMAGE_PULL_SECRETS, the operator chart's operator.defaultImagePullSecrets).")
	fs.StringVar(&o.proxyHost, "proxy-host", app.DefaultProxyHost, "Address the proxy runner listens on in its pod, written into every RunConfig (ToolHive's TOOLHIVE_PROXY_HOST, the operator chart's operator.proxyHost).")
	fs.StringVar(&o.runners.ProxyRunner, "proxy-runner-cluster-role", rbac.DefaultProxyRunnerClusterRole, "ClusterRole bound to the proxy runner ServiceAccount of each MCPServer whose transport is sse or streamable-http; it must exist (the Helm chart creates it) and hivekeeper needs bind on it.")
	fs.StringVar(&o.runners.StdioProxyRunner, "stdio-proxy-runner-cluster-role", rbac.DefaultStdioProxyRunnerClusterRole, "ClusterRole bound to the proxy runner ServiceAccount of each stdio MCPServer: the other's rules and pods/attach; it must exist (the Helm chart creates it) and hivekeeper needs bind on it.")
	fs.StringVar(&o.runners.RemoteProxyRunner, "remote-proxy-runner-cluster-role", rbac.DefaultRemoteProxyRunnerClusterRole, "ClusterRole bound to each MCPRemoteProxy's runner ServiceAccount; it must exist (the Helm chart creates it) and hivekeeper needs bind on it.")
	fs.StringVar(&o.runners.RegistryAPI, "registry-api-cluster-role", rbac.DefaultRegistryAPIClusterRole, "ClusterRole bound to each MCPRegistry's registry API ServiceAccount; it must exist (the Helm chart creates it) and hivekeeper needs bind on it.")
	fs.StringVar(&o.runners.VMCPDiscovered, "vmcp-discovered-cluster-role", rbac.DefaultVMCPDiscoveredClusterRole, "ClusterRole bound to the ServiceAccount of each VirtualMCPServer whose vmcp discovers its group's members (outgoingAuth.source discovered); it must exist (the Helm chart creates it) and hivekeeper needs bind on it.")
	fs.StringVar(&o.runners.VMCPInline, "vmcp-inline-cluster-role", rbac.DefaultVMCPInlineClusterRole, "ClusterRole bound to the ServiceAccount of each VirtualMCPServer with outgoingAuth.source inline; it must exist (the Helm chart creates it) and hivekeeper needs bind on it.")
	o.redis.register(fs)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics server; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", false, "Serve /metrics over HTTPS to clients whose bearer token the API server authenticates (TokenReview) and authorizes for get on /metrics (SubjectAccessReview). Off: plain HTTP, for local runs.")
	fs.StringVar(&o.metricsCertPath, "metrics-cert-path", "", "Folder with tls.crt and tls.key for --metrics-secure, reloaded when they change. Empty: a self-signed certificate made at start.")
	fs.BoolVar(&o.profiling, "profiling", false, "Serve Go's CPU and heap profiles at /debug/pprof/ on the metrics server, behind the same authentication when --metrics-secure is set.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz server; \"0\" disables it.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader on a Lease so that only one replica writes.")
	fs.StringVar(&o.leaderElectNamespace, "leader-elect-namespace", "", "Namespace of the leader-election Lease; defaults to the pod's namespace, else kube-system.")
	fs.StringVar(&o.leaderElectID, "leader-elect-id", "hivekeeper-leader", "Name of the leader-election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a lease is valid without renewal.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader retries renewing before it gives up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the lease.")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace-period", 20*time.Second, "Time allowed for workers and servers to stop after SIGTERM.")
	fs.DurationVar(&o.fanInWindow, "fan-in-window", app.DefaultFanInWindow, "How long an MCPGroup's member lists and a config's referencingWorkloads wait for more changes before they are recomputed; it grows by the same amount per 100 entries listed, so a burst of N changes costs O(N) bytes of status. 0 recomputes on every change.")
	fs.DurationVar(&o.resync, "resync-period", 10*time.Hour, "Informer resync period; 0 disables it.")
	fs.StringVar(&o.logFormat, "log-format", "text", "Log format: text (klog) or json (one JSON object per line).")
	fs.BoolVar(&o.showVersion, "version", false, "Print the version and exit.")

	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlag(klogFlags.Lookup("v"))
	pflag.Usage = func() {
		fmt.Fprintf(os.Stderr, "hivekeeper runs the controllers of the ToolHive MCP API (toolhive.stacklok.dev/v1beta1).\n\nUsage:\n  hivekeeper [flags]\n\nFlags:\n%s", fs.FlagUsages())
	}
	pflag.Parse()
	if o.showVersion {
		fmt.Println(version)
		return nil
	}
	if err := setupLogging(o.logFormat, klogFlags); err != nil {
		return err
	}
	defaultRedis, err := o.redis.defaultRedis()
	if err != nil {
		return fmt.Errorf("invalid global Redis configuration: %w", err)
	}
	defer klog.Flush()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := klog.Background().WithName("hivekeeper")
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting", "version", version, "namespaces", o.namespaces)

	cfg, err := clientConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	cfg.UserAgent = "hivekeeper/" + version
	kube, th, err := app.NewClients(cfg)
	if err != nil {
		return err
	}

	var ready atomic.Bool
	readyCh := make(chan struct{})
	go func() {
		select {
		case <-readyCh:
			ready.Store(true)
		case <-ctx.Done():
		}
	}()

	var electionHealth *leaderelection.HealthzAdaptor
	if o.leaderElect {
		electionHealth = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	metricsServing, err := newMetricsServing(o, kube)
	if err != nil {
		return err
	}
	servers := startServers(ctx, o, &ready, electionHealth, metricsServing)

	rel, err := release.Lookup(o.toolhiveRelease)
	if err != nil {
		return err
	}
	usage := wiring.UsageMetrics{SkipUpdateCheck: o.skipUpdateCheck, Disabled: !o.usageMetrics}
	runnerImage, vmcpImage := app.ReleaseImages(rel)
	appOpts := app.Options{
		Namespaces:       o.namespaces,
		Workers:          o.workers,
		RunnerImage:      cmp.Or(o.runnerImage, runnerImage),
		VMCPImage:        cmp.Or(o.vmcpImage, vmcpImage),
		RegistryAPIImage: o.registryAPIImage,
		UsageMetrics:     usage,
		Release:          rel,
		PullSecrets:      o.defaultPullSecrets,
		ProxyHost:        o.proxyHost,
		ResyncPeriod:     o.resync,
		Runners:          o.runners,
		DefaultRedis:     defaultRedis,
		FanInWindow:      o.fanInWindow,
		// Read, and stored when missing, by the leader only, before its
		// workers start.
		ResolveUsageMetrics: func(ctx context.Context) (wiring.UsageMetrics, error) {
			return app.ResolveUsageMetrics(ctx, kube, rel, usage,
				cmp.Or(o.instanceIDNamespace, os.Getenv("POD_NAMESPACE"), app.DefaultInstanceIDNamespace))
		},
	}
	if o.fanInWindow == 0 {
		// The flag's 0 means no window; Options' zero means the default.
		appOpts.FanInWindow = -1
	}
	var runErr error
	if !o.leaderElect {
		runErr = runUntilStopped(ctx, o.shutdownGrace, func(ctx context.Context) error {
			return app.Start(ctx, kube, th, appOpts, readyCh)
		})
	} else {
		var lock resourcelock.Interface
		lock, err = newLeaseLock(o, cfg)
		if err != nil {
			return err
		}
		// Every replica keeps warm caches; only the one holding the
		// Lease runs workers, behind the gate of its renewals.
		tracker := newRenewTracker(lock, clock.RealClock{})
		appOpts.WriteGate = tracker.gate(o.renewDeadline)
		runErr = app.StartElected(ctx, kube, th, appOpts, readyCh, func(ctx context.Context, lead func(context.Context) error) error {
			return runWithLeaderElection(ctx, o, tracker, electionHealth, lead)
		})
	}
	shutdownServers(logger, servers, o.shutdownGrace)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	logger.Info("Stopped cleanly")
	return nil
}

// setupLogging routes klog, and so every contextual logger, to the chosen
// format. JSON goes through the standard library's slog handler, whose
// level is the negated klog verbosity, so -v keeps its meaning.
func setupLogging(format string, klogFlags *flag.FlagSet) error {
	switch format {
	case "text", "":
		return nil
	case "json":
		v, _ := strconv.Atoi(klogFlags.Lookup("v").Value.String())
		h := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-v)})
		klog.SetSlogLogger(slog.New(h))
		return nil
	default:
		return fmt.Errorf("--log-format must be text or json, not %q", format)
	}
}

func clientConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		if env := os.Getenv("KUBECONFIG"); env != "" {
			kubeconfig = env
		}
	}
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// runUntilStopped runs the controllers until ctx is done, then waits for
// them to stop, at most grace.
func runUntilStopped(ctx context.Context, grace time.Duration, run func(context.Context) error) error {
	stopped := make(chan error, 1)
	go func() { stopped <- run(ctx) }()
	select {
	case err := <-stopped:
		return err
	case <-ctx.Done():
		return waitStopped(stopped, grace)
	}
}

// waitStopped waits for the controllers' result, at most grace: a sync
// stuck in a request must not keep the process from exiting before the
// kubelet's own deadline.
func waitStopped(stopped <-chan error, grace time.Duration) error {
	select {
	case err := <-stopped:
		return err
	case <-time.After(grace):
		return fmt.Errorf("controllers did not stop within the shutdown grace period of %s", grace)
	}
}

// newLeaseLock is the leader-election Lease of this process, with an
// identity unique per process.
func newLeaseLock(o options, cfg *rest.Config) (resourcelock.Interface, error) {
	ns := o.leaderElectNamespace
	if ns == "" {
		ns = podNamespace()
	}
	id, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	id += "_" + string(uuid.NewUUID())
	return resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, ns, o.leaderElectID,
		resourcelock.ResourceLockConfig{Identity: id}, cfg, o.renewDeadline)
}

// runWithLeaderElection runs the controllers' workers (run) only while
// this process holds the Lease whose writes tracker records (its gate is
// the controllers' WriteGate). Losing the lease ends the process: a
// controller that keeps writing after another replica took over would
// fight it.
//
// client-go starts the controllers in a goroutine of their own and returns
// as soon as leading ends, without waiting for them. Their context is
// cancelled by then; this waits, at most the shutdown grace period, for
// them to finish their current syncs before the process exits.
func runWithLeaderElection(ctx context.Context, o options, tracker *renewTracker, health *leaderelection.HealthzAdaptor, run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	id := tracker.Identity()
	stopped := make(chan error, 1)
	lost := false
	leCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaderelection.RunOrDie(leCtx, leaderelection.LeaderElectionConfig{
		Lock:            tracker,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		Name:            o.leaderElectID,
		WatchDog:        health,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Started leading", "identity", id)
				stopped <- run(ctx)
				cancel()
			},
			// Called by RunOrDie itself before it returns.
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					logger.Info("Leadership lost; exiting so that only the new leader writes")
					lost = true
				}
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					logger.Info("Another replica leads", "leader", identity)
				}
			},
		},
	})
	var runErr error
	if tracker.held() {
		runErr = waitStopped(stopped, o.shutdownGrace)
	}
	if lost {
		return errors.Join(errors.New("leader election lost"), runErr)
	}
	return runErr
}

func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return "kube-system"
}

// metricsServing is how /metrics is served: plain HTTP when tlsConfig is
// nil, else over TLS to the requests auth lets through.
type metricsServing struct {
	tlsConfig *tls.Config
	auth      *secureserving.Authorizer
}

// profilingPath is where --profiling serves Go's profiles.
const profilingPath = "/debug/pprof/"

func newMetricsServing(o options, kube kubernetes.Interface) (metricsServing, error) {
	if !o.metricsSecure {
		return metricsServing{}, nil
	}
	host, _ := os.Hostname()
	cfg, err := secureserving.TLSConfig(o.metricsCertPath, host)
	if err != nil {
		return metricsServing{}, fmt.Errorf("--metrics-secure: %w", err)
	}
	// Only what the metrics server serves is authenticated at all: any
	// other path is 404 before a token is reviewed.
	paths := []string{rbac.MetricsPath}
	if o.profiling {
		paths = append(paths, profilingPath)
	}
	return metricsServing{tlsConfig: cfg, auth: secureserving.NewAuthorizer(kube, paths...)}, nil
}

func startServers(ctx context.Context, o options, ready *atomic.Bool, election *leaderelection.HealthzAdaptor, ms metricsServing) []*http.Server {
	logger := klog.FromContext(ctx)
	var servers []*http.Server
	serve := func(addr string, h http.Handler, what string, tlsConfig *tls.Config) {
		if addr == "" || addr == "0" {
			return
		}
		srv := &http.Server{Addr: addr, Handler: h, TLSConfig: tlsConfig, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
		servers = append(servers, srv)
		go func() {
			logger.Info("Serving", "what", what, "address", addr, "tls", tlsConfig != nil)
			var err error
			if tlsConfig != nil {
				err = srv.ListenAndServeTLS("", "")
			} else {
				err = srv.ListenAndServe()
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "Server failed", "what", what)
			}
		}()
	}
	mux := http.NewServeMux()
	mux.Handle(rbac.MetricsPath, promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	if o.profiling {
		// net/http/pprof registers on http.DefaultServeMux; mounting
		// that mux under its prefix keeps it off every other server.
		mux.Handle(profilingPath, http.DefaultServeMux)
	}
	var metricsHandler http.Handler = mux
	if ms.auth != nil {
		metricsHandler = ms.auth.Wrap(mux)
	}
	serve(o.metricsAddr, metricsHandler, "metrics", ms.tlsConfig)

	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if election != nil {
			if err := election.Check(r); err != nil {
				http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		// Ready once the caches synced, the leader's and a standby's
		// alike: a standby keeps them warm while it waits for the lease,
		// so a rollout replaces a pod only with one that can take over
		// at once.
		if ready.Load() {
			_, _ = w.Write([]byte("ok"))
			return
		}
		http.Error(w, "caches not synced", http.StatusServiceUnavailable)
	})
	serve(o.healthAddr, health, "health", nil)
	return servers
}

func shutdownServers(logger klog.Logger, servers []*http.Server, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil {
			logger.Error(err, "Server shutdown")
		}
	}
}
