package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

const benchNS = "bench"

var (
	serversGVR = thv1.SchemeGroupVersion.WithResource("mcpservers")
	configsGVR = thv1.SchemeGroupVersion.WithResource("mcpoidcconfigs")
)

// result holds the numbers of one run at one N.
type result struct {
	N, K int

	createSeconds float64
	statusSeconds float64
	// readySeconds is the time until every MCPServer is Ready: its proxy
	// pod scheduled, reported Ready and counted in the Deployment's
	// status by the controller manager.
	readySeconds float64
	// rolloutWrites are hivekeeper's writes, other than statuses, from
	// the moment every status was written until every MCPServer was
	// Ready: the ReplicaSets, pods and Deployment status updates of the
	// rollouts reach its informers, and must cost nothing.
	rolloutWrites    float64
	createRequests   map[string]float64 // by HTTP method, whole create phase
	createWrites     float64
	createCPU        map[string]float64 // CPU seconds by process during the create phase
	syncP50, syncP99 float64

	steadyWindow time.Duration
	steadyWrites float64
	steadyReqs   map[string]float64
	// steadySyncs is how many MCPServer syncs the window saw: events of
	// the cluster around hivekeeper (there is no resync by default).
	steadySyncs float64

	labelWrites float64

	configReferrers int
	configSeconds   float64
	configWrites    float64
	// configStatusWrites is the part of configWrites that went to status
	// subresources: the rollouts change readyReplicas as they go.
	configStatusWrites float64

	deleteSeconds float64
	deleteCPU     map[string]float64
	// collectSeconds is the time from the first delete until the garbage
	// collector removed every child.
	collectSeconds float64

	// createAPI and deleteAPI are the API server's byte counters over
	// the create and delete phases.
	createAPI, deleteAPI apiCounters

	// coldRound is the round of the cold start and its floors whose cold
	// ÷ spec floor is the median of the rounds run (-rounds).
	coldRound
	// coldRatios are every round's cold ÷ spec floor, in the order run,
	// and specFloors every round's spec floor.
	coldRatios, specFloors []float64

	// peer is ToolHive's operator at the same N, when measured.
	peer *peerResult

	rssBytes, peakRSSBytes, heapBytes float64
	// rssAnonBytes and rssFileBytes split the resident memory at the end
	// of the run: anonymous, and pages of the binary mapped from disk.
	rssAnonBytes, rssFileBytes float64
	churn                      float64
}

// coldRound holds one round of the cold start and its two floors.
type coldRound struct {
	// The cold start: N MCPServers stored before the controller starts;
	// times from the process's start.
	coldSeconds, coldStatusSeconds, coldReadySeconds float64
	coldCPU                                          map[string]float64
	coldAPI                                          apiCounters
	coldRSSBytes                                     float64
	// coldStats is where the cold start's time went, until every child
	// existed; coldSyncs counts the MCPServer syncs in that time and
	// coldSyncsWithoutWrites those that wrote nothing.
	coldStats                         *phaseStats
	coldSyncs, coldSyncsWithoutWrites float64
	// specFloorStats is the same for the spec floor.
	specFloorStats *phaseStats
	// floorSeconds is the same children created by plain client-go
	// creates, in the same run.
	floorSeconds float64
	floorCreates int
	// floorServiceSeconds is the floor's time for its Services alone:
	// the kind whose create costs the API server more the more of it
	// exist.
	floorServiceSeconds float64
	// specFloorSeconds is the floor of a controller that follows the
	// spec: the creates plus the two MCPServer patches, per MCPServer.
	specFloorSeconds float64
}

type env struct {
	// ns is the namespace the controller watches and the load goes to.
	ns string
	// floorNS is where the floors of the current cold round create their
	// copies.
	floorNS string
	track   *tracker
	srv     *framework.Server
	kube    kubernetes.Interface
	// watch is the trackers' client of built-in kinds: protobuf, as
	// hivekeeper's and kube-controller-manager's watches are, so that the
	// API server encodes each event of theirs once for all three.
	watch   kubernetes.Interface
	dyn     dynamic.Interface
	metrics string
	// pprof is hivekeeper's CPU profile endpoint (with -profile).
	pprof string
	// controllerConfig and controllerKubeconfig are the identity the
	// controller runs with.
	controllerConfig     *rest.Config
	controllerKubeconfig string
	proc                 *exec.Cmd
}

func runOne(ctx context.Context, c config, root string, n int) (*result, error) {
	logf("N=%d: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok", n)
	opts := framework.Options{CRDDir: filepath.Join(root, "config", "crd"), Cluster: true}
	if c.profile != "" {
		opts.ExtraAPIServerArgs = []string{"--profiling=true"}
	}
	srv, err := framework.Start(opts)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	e, err := newEnv(srv)
	if err != nil {
		return nil, err
	}
	if err := e.useNamespace(ctx, benchNS); err != nil {
		return nil, err
	}
	defer func() { e.track.stop() }()
	if c.identity != identityAdmin {
		if err := e.useChartIdentity(ctx, root, c.identity); err != nil {
			return nil, err
		}
	}
	if err := e.startController(c); err != nil {
		return nil, err
	}
	defer e.stopController()

	r := &result{N: n, K: c.configs}
	if c.coldOnly {
		e.stopController()
		return r, e.coldRounds(ctx, c, r)
	}
	if err := e.create(ctx, c, r); err != nil {
		return r, err
	}
	if err := e.steady(ctx, c, r); err != nil {
		return r, err
	}
	if err := e.labelAll(ctx, c, r); err != nil {
		return r, err
	}
	if err := e.changeConfig(ctx, c, r); err != nil {
		return r, err
	}
	m, err := scrapeMetrics(e.metrics)
	if err != nil {
		return r, err
	}
	r.rssBytes = m.sum("process_resident_memory_bytes", nil)
	r.heapBytes = m.sum("go_memstats_heap_alloc_bytes", nil)
	r.peakRSSBytes = peakRSS(e.proc.Process.Pid)
	r.rssAnonBytes, r.rssFileBytes = rssSplit(e.proc.Process.Pid)
	r.churn = m.sum("hivekeeper_churn_writes_total", nil)
	if err := e.deleteAll(ctx, c, r); err != nil {
		return r, err
	}
	e.stopController()
	if c.noCold {
		return r, nil
	}
	return r, e.coldRounds(ctx, c, r)
}

// coldRounds runs the cold start and its two floors c.rounds[N] times and
// keeps in r the round whose cold ÷ spec floor is the median. One round's
// ratio moves by a quarter either way on this machine (the spec floor
// alone by a third): a ratio taken within a round sees the same machine
// on both sides, and the median of several is what a target can be held
// to. Each round runs in namespaces of its own; the one before it is
// deleted first, untimed, so that every round starts beside the same
// objects (the Service allocator's cost grows with the addresses in use).
func (e *env) coldRounds(ctx context.Context, c config, r *result) error {
	var rounds []*result
	for i := 1; i <= c.rounds[r.N]; i++ {
		cold, floor := "cold", floorNS
		if i > 1 {
			if err := e.dropNamespaces(ctx, r.N, e.ns, e.floorNS); err != nil {
				return err
			}
			cold, floor = fmt.Sprintf("cold-%d", i), fmt.Sprintf("%s-%d", floorNS, i)
			// One set of profiles is enough to read.
			c.profile = ""
		}
		logf("N=%d: cold round %d of %d", r.N, i, c.rounds[r.N])
		rr := &result{N: r.N, K: r.K}
		e.floorNS = floor
		if err := e.coldStart(ctx, c, rr, cold); err != nil {
			return err
		}
		if err := e.floor(ctx, c, rr); err != nil {
			return err
		}
		rounds = append(rounds, rr)
		r.coldRatios = append(r.coldRatios, rr.coldSeconds/rr.specFloorSeconds)
		r.specFloors = append(r.specFloors, rr.specFloorSeconds)
	}
	slices.SortStableFunc(rounds, func(a, b *result) int {
		return cmp.Compare(a.coldSeconds/a.specFloorSeconds, b.coldSeconds/b.specFloorSeconds)
	})
	r.coldRound = rounds[len(rounds)/2].coldRound
	logf("N=%d: cold ÷ spec floor by round %s; the median round's %.2f is reported", r.N, formatRatios(r.coldRatios), r.coldSeconds/r.specFloorSeconds)
	return nil
}

// dropNamespaces deletes the namespaces of a finished cold round and waits
// until they are gone. The round's MCPServers and MCPOIDCConfigs keep the
// finalizers of a controller that no longer runs: they are removed first,
// as an operator retiring a controller would.
func (e *env) dropNamespaces(ctx context.Context, n int, namespaces ...string) error {
	start := time.Now()
	for _, ns := range namespaces {
		for _, gvr := range []schema.GroupVersionResource{serversGVR, configsGVR} {
			l, err := e.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if err := parallel(len(l.Items), 16, func(i int) error {
				_, err := e.dyn.Resource(gvr).Namespace(ns).Patch(ctx, l.Items[i].GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				return err
			}); err != nil {
				return err
			}
		}
		if err := e.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	if err := poll(30*time.Minute, func() bool {
		for _, ns := range namespaces {
			if _, err := e.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("namespaces %v never went away: %w", namespaces, err)
	}
	logf("N=%d: deleted namespaces %v in %.2fs", n, namespaces, time.Since(start).Seconds())
	return nil
}

// formatRatios renders ratios as "1.21, 1.11, 1.35".
func formatRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, v := range rs {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(parts, ", ")
}

// median is the middle of vs (the upper one of an even count).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

// newEnv is the benchmark's clients of srv.
func newEnv(srv *framework.Server) (*env, error) {
	kube, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		return nil, err
	}
	watch, _, err := app.NewClients(srv.Config)
	if err != nil {
		return nil, err
	}
	return &env{srv: srv, kube: kube, watch: watch, dyn: dyn, controllerConfig: srv.Config, controllerKubeconfig: srv.Kubeconfig}, nil
}

// useNamespace creates ns, points the load at it and tracks it.
func (e *env) useNamespace(ctx context.Context, ns string) error {
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if e.track != nil {
		e.track.stop()
	}
	e.ns, e.track = ns, newTracker(ctx, e.watch, e.dyn, ns)
	return nil
}

func (e *env) startController(c config) error {
	mport, err := framework.FreePort()
	if err != nil {
		return err
	}
	hport, err := framework.FreePort()
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + e.controllerKubeconfig,
		"--namespaces=" + e.ns,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", mport),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", hport),
	}
	args = append(args, c.chartFlags...)
	if c.workers > 0 {
		args = append(args, fmt.Sprintf("--workers=%d", c.workers))
	}
	if c.qps != 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%g", c.qps))
	}
	if c.burst > 0 {
		args = append(args, fmt.Sprintf("--kube-api-burst=%d", c.burst))
	}
	if c.profile != "" {
		args = append(args, "--profiling")
	}
	if c.fanIn > 0 {
		args = append(args, "--fan-in-window="+c.fanIn.String())
	}
	logFile, err := os.Create(filepath.Join(e.srv.Dir, "hivekeeper.log"))
	if err != nil {
		return err
	}
	e.proc = exec.Command(c.binary, args...)
	e.proc.Stdout, e.proc.Stderr = logFile, logFile
	e.proc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := e.proc.Start(); err != nil {
		return err
	}
	e.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	e.pprof = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", mport, int(profileWindow/time.Second))
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", hport)
	return poll(30*time.Second, func() bool {
		m, err := scrapeMetrics(e.metrics)
		return err == nil && m != nil && httpOK(ready)
	})
}

func (e *env) stopController() {
	if e.proc == nil || e.proc.Process == nil {
		return
	}
	_ = e.proc.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = e.proc.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = e.proc.Process.Kill()
		<-done
	}
}

func poll(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// parallel runs f(i) for i in [0,n) on c goroutines and returns the first
// error.
func parallel(n, c int, f func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range c {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func configObj(ns string, i int, issuer string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": thv1.SchemeGroupVersion.String(), "kind": thv1.KindMCPOIDCConfig,
		"metadata": map[string]any{"name": fmt.Sprintf("idp-%d", i), "namespace": ns},
		"spec": map[string]any{"type": "inline", "inline": map[string]any{
			"issuer": issuer, "jwksUrl": issuer + "/jwks", "clientId": "hivekeeper",
		}},
	}}
}

// serverObj is the i-th MCPServer: a third of each transport, a quarter
// with overrides, each referencing one of k configs.
func serverObj(ns string, i, k int) *unstructured.Unstructured {
	transports := []string{"stdio", "streamable-http", "sse"}
	spec := map[string]any{
		"image":         fmt.Sprintf("ghcr.io/example/server-%d:1.0", i%7),
		"transport":     transports[i%3],
		"args":          []any{"--port", "8080"},
		"oidcConfigRef": map[string]any{"name": fmt.Sprintf("idp-%d", i%k), "audience": "mcp"},
	}
	if i%4 == 0 {
		spec["resourceOverrides"] = map[string]any{"proxyDeployment": map[string]any{
			"annotations": map[string]any{"owner": "platform"},
			"podTemplateMetadataOverrides": map[string]any{
				"annotations": map[string]any{"vault.hashicorp.com/agent-inject": "true"},
			},
			"env": []any{map[string]any{"name": "HTTP_PROXY", "value": "http://proxy:3128"}},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": thv1.SchemeGroupVersion.String(), "kind": thv1.KindMCPServer,
		"metadata": map[string]any{"name": fmt.Sprintf("mcp-%04d", i), "namespace": ns},
		"spec":     spec,
	}}
}

// storeLoad creates the K configs and N MCPServers in the current
// namespace, without waiting for anything.
func (e *env) storeConfigs(ctx context.Context, c config) error {
	for i := range c.configs {
		if _, err := e.dyn.Resource(configsGVR).Namespace(e.ns).Create(ctx, configObj(e.ns, i, "https://idp.example.com"), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) storeServers(ctx context.Context, c config, n int) error {
	return parallel(n, c.concurrency, func(i int) error {
		_, err := e.dyn.Resource(serversGVR).Namespace(e.ns).Create(ctx, serverObj(e.ns, i, c.configs), metav1.CreateOptions{})
		return err
	})
}

// waitChildren waits until every MCPServer has its Deployment and RunConfig.
func (e *env) waitChildren(n int) error { return waitChildren(e.track, n) }

// waitChildren waits until t has seen a Deployment and a RunConfig for
// each of n MCPServers.
func waitChildren(t *tracker, n int) error {
	if err := poll(30*time.Minute, func() bool {
		// ">=": another operator may keep ConfigMaps of its own.
		d, cm := t.children()
		return d == n && cm >= n
	}); err != nil {
		return fmt.Errorf("children never all existed: %w", err)
	}
	return nil
}

// waitStatuses waits until every MCPServer has a phase.
func (e *env) waitStatuses(n int) error {
	if err := poll(30*time.Minute, func() bool {
		all, phased, _ := e.track.servers()
		return all == n && phased == n
	}); err != nil {
		return fmt.Errorf("statuses never all written: %w", err)
	}
	return nil
}

// waitReady waits until every MCPServer is Ready.
func (e *env) waitReady(n int) error {
	if err := poll(30*time.Minute, func() bool {
		all, _, ready := e.track.servers()
		return all == n && ready == n
	}); err != nil {
		_, _, ready := e.track.servers()
		return fmt.Errorf("only %d of %d MCPServers ever Ready: %w", ready, n, err)
	}
	return nil
}

// nonStatusWrites sums hivekeeper_writes_total over every resource but
// status subresources.
func nonStatusWrites(m scrape) float64 {
	var sum float64
	for resource, v := range m.byLabel("hivekeeper_writes_total", "resource", nil) {
		if !strings.HasSuffix(resource, "/status") {
			sum += v
		}
	}
	return sum
}

func (e *env) create(ctx context.Context, c config, r *result) error {
	if err := e.storeConfigs(ctx, c); err != nil {
		return err
	}
	// Let the configs become Valid so the run measures MCPServers.
	if err := poll(30*time.Second, func() bool {
		l, err := e.dyn.Resource(configsGVR).Namespace(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, u := range l.Items {
			if h, _, _ := unstructured.NestedString(u.Object, "status", "configHash"); h == "" {
				return false
			}
		}
		return len(l.Items) == c.configs
	}); err != nil {
		return fmt.Errorf("configs not valid: %w", err)
	}
	if err := e.storeRunnerStatefulSets(ctx, c, r.N); err != nil {
		return err
	}
	before, err := scrapeMetrics(e.metrics)
	if err != nil {
		return err
	}
	apiBefore, err := e.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	logf("N=%d: creating %d MCPServers", r.N, r.N)
	cpuBefore := e.cpu()
	start := time.Now()
	if err := e.storeServers(ctx, c, r.N); err != nil {
		return err
	}
	if err := e.waitChildren(r.N); err != nil {
		return err
	}
	r.createSeconds = time.Since(start).Seconds()
	r.createCPU = diff(cpuBefore, e.cpu())
	if err := e.waitStatuses(r.N); err != nil {
		return err
	}
	r.statusSeconds = time.Since(start).Seconds()
	statuses, err := scrapeMetrics(e.metrics)
	if err != nil {
		return err
	}
	if err := e.waitReady(r.N); err != nil {
		return err
	}
	r.readySeconds = time.Since(start).Seconds()
	// Wait for the queues to drain before reading the create phase's cost.
	after, err := e.quiesce(2 * time.Second)
	if err != nil {
		return err
	}
	apiAfter, err := e.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	r.createAPI = apiAfter.minus(apiBefore)
	r.createRequests = diff(before.byLabel("rest_client_requests_total", "method", nil), after.byLabel("rest_client_requests_total", "method", nil))
	r.createWrites = after.sum("hivekeeper_writes_total", nil) - before.sum("hivekeeper_writes_total", nil)
	r.rolloutWrites = nonStatusWrites(after) - nonStatusWrites(statuses)
	r.syncP50 = quantile(0.5, before, after, "hivekeeper_reconcile_duration_seconds", map[string]string{"controller": "mcpserver"})
	r.syncP99 = quantile(0.99, before, after, "hivekeeper_reconcile_duration_seconds", map[string]string{"controller": "mcpserver"})
	logf("N=%d: children in %.2fs, statuses in %.2fs, all Ready in %.2fs", r.N, r.createSeconds, r.statusSeconds, r.readySeconds)
	return nil
}

// quiesce waits until the controller has made no request for idle and
// returns the scrape taken then.
func (e *env) quiesce(idle time.Duration) (scrape, error) {
	var last float64 = -1
	stableSince := time.Now()
	var m scrape
	err := poll(5*time.Minute, func() bool {
		var err error
		m, err = scrapeMetrics(e.metrics)
		if err != nil {
			return false
		}
		cur := m.sum("rest_client_requests_total", nil) + m.sum("hivekeeper_reconcile_total", nil)
		if cur != last {
			last, stableSince = cur, time.Now()
			return false
		}
		return time.Since(stableSince) >= idle
	})
	return m, err
}

func diff(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

func (e *env) steady(ctx context.Context, c config, r *result) error {
	logf("N=%d: steady window of %s", r.N, c.steady)
	before, err := scrapeMetrics(e.metrics)
	if err != nil {
		return err
	}
	time.Sleep(c.steady)
	after, err := scrapeMetrics(e.metrics)
	if err != nil {
		return err
	}
	r.steadyWindow = c.steady
	r.steadyWrites = after.sum("hivekeeper_writes_total", nil) - before.sum("hivekeeper_writes_total", nil)
	r.steadyReqs = diff(before.byLabel("rest_client_requests_total", "method", nil), after.byLabel("rest_client_requests_total", "method", nil))
	r.steadySyncs = after.sum("hivekeeper_reconcile_total", map[string]string{"controller": "mcpserver"}) -
		before.sum("hivekeeper_reconcile_total", map[string]string{"controller": "mcpserver"})
	return nil
}

// labelAll adds a label to every MCPServer: a metadata-only change that
// must cost no write.
func (e *env) labelAll(ctx context.Context, c config, r *result) error {
	logf("N=%d: labelling every MCPServer", r.N)
	before, err := scrapeMetrics(e.metrics)
	if err != nil {
		return err
	}
	syncs := before.sum("hivekeeper_reconcile_total", map[string]string{"controller": "mcpserver"})
	if err := parallel(r.N, c.concurrency, func(i int) error {
		_, err := e.dyn.Resource(serversGVR).Namespace(e.ns).Patch(ctx, fmt.Sprintf("mcp-%04d", i),
			types.MergePatchType, []byte(`{"metadata":{"labels":{"cost-center":"bench"}}}`), metav1.PatchOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := poll(5*time.Minute, func() bool {
		m, err := scrapeMetrics(e.metrics)
		return err == nil && m.sum("hivekeeper_reconcile_total", map[string]string{"controller": "mcpserver"}) >= syncs+float64(r.N)
	}); err != nil {
		return fmt.Errorf("label events not all synced: %w", err)
	}
	after, err := e.quiesce(time.Second)
	if err != nil {
		return err
	}
	r.labelWrites = after.sum("hivekeeper_writes_total", nil) - before.sum("hivekeeper_writes_total", nil)
	return nil
}

// changeConfig changes the issuer of idp-0 and waits until every referrer's
// Deployment carries a new RunConfig checksum.
func (e *env) changeConfig(ctx context.Context, c config, r *result) error {
	old := map[string]string{}
	for name, sum := range e.track.checksums() {
		i, _ := strconv.Atoi(strings.TrimPrefix(name, "mcp-"))
		if i%c.configs == 0 {
			old[name] = sum
		}
	}
	r.configReferrers = len(old)
	logf("N=%d: changing the issuer of a config with %d referrers", r.N, len(old))
	before, err := scrapeMetrics(e.metrics)
	if err != nil {
		return err
	}
	start := time.Now()
	patch := `{"spec":{"inline":{"issuer":"https://idp2.example.com"}}}`
	if _, err := e.dyn.Resource(configsGVR).Namespace(e.ns).Patch(ctx, "idp-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	if err := poll(10*time.Minute, func() bool {
		now := e.track.checksums()
		for name, sum := range old {
			if now[name] == sum {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("referrers never rolled: %w", err)
	}
	r.configSeconds = time.Since(start).Seconds()
	after, err := e.quiesce(time.Second)
	if err != nil {
		return err
	}
	r.configWrites = after.sum("hivekeeper_writes_total", nil) - before.sum("hivekeeper_writes_total", nil)
	r.configStatusWrites = r.configWrites - (nonStatusWrites(after) - nonStatusWrites(before))
	return nil
}

func (e *env) deleteAll(ctx context.Context, c config, r *result) error {
	logf("N=%d: deleting every MCPServer", r.N)
	apiBefore, err := e.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	cpuBefore := e.cpu()
	start := time.Now()
	if c.profile != "" {
		// The finalizers run long after the deletes are sent: profile
		// well into it (30 s in at N=3,000, a third of the delete).
		profiled := e.profileLater(ctx, time.Duration(r.N)*10*time.Millisecond, c.profile+"-delete", r.N)
		defer func() { <-profiled }()
	}
	// One delete per object: a single DeleteCollection of thousands of
	// objects outlives the API server's request timeout.
	if err := parallel(r.N, 16, func(i int) error {
		return e.dyn.Resource(serversGVR).Namespace(e.ns).Delete(ctx, fmt.Sprintf("mcp-%04d", i), metav1.DeleteOptions{})
	}); err != nil {
		return err
	}
	if err := poll(30*time.Minute, func() bool {
		all, _, _ := e.track.servers()
		return all == 0
	}); err != nil {
		return fmt.Errorf("finalizers did not complete: %w", err)
	}
	r.deleteSeconds = time.Since(start).Seconds()
	r.deleteCPU = diff(cpuBefore, e.cpu())
	// The garbage collector removes the children through their owner
	// references, and the ReplicaSets and pods after the Deployments;
	// collectSeconds is until the children are gone.
	if err := poll(30*time.Minute, func() bool {
		d, cm := e.track.children()
		return d == 0 && cm == 0
	}); err != nil {
		return fmt.Errorf("the garbage collector did not remove the children: %w", err)
	}
	r.collectSeconds = time.Since(start).Seconds()
	apiAfter, err := e.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	r.deleteAPI = apiAfter.minus(apiBefore)
	// The pods go last, each gracefully: wait for them (untimed), or the
	// cold start that follows shares the API server with their deletes.
	if err := e.waitPodsGone(ctx, e.ns); err != nil {
		return err
	}
	logf("N=%d: deleted in %.2fs, children collected in %.2fs", r.N, r.deleteSeconds, r.collectSeconds)
	return nil
}

// waitPodsGone waits until the garbage collector has removed every pod in
// ns, which it does last, each gracefully, after their Deployments'
// ReplicaSets.
func (e *env) waitPodsGone(ctx context.Context, ns string) error {
	if err := poll(30*time.Minute, func() bool {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(pods.Items) == 0
	}); err != nil {
		return fmt.Errorf("the garbage collector did not remove the pods in %s: %w", ns, err)
	}
	return nil
}

// coldStart stores K configs and N MCPServers in ns, a fresh namespace, with
// no controller running (as they are when hivekeeper replaces another
// operator, or starts after an outage), then starts the binary and times,
// from the process's start, until every Deployment and RunConfig exists
// and every status is written.
func (e *env) coldStart(ctx context.Context, c config, r *result, ns string) error {
	if err := e.useNamespace(ctx, ns); err != nil {
		return err
	}
	logf("N=%d: storing %d MCPServers for a cold start", r.N, r.N)
	if err := e.storeConfigs(ctx, c); err != nil {
		return err
	}
	if err := e.storeServers(ctx, c, r.N); err != nil {
		return err
	}
	if err := e.storeRunnerStatefulSets(ctx, c, r.N); err != nil {
		return err
	}
	apiBefore, err := e.apiScrape(ctx)
	if err != nil {
		return err
	}
	cpuBefore := e.cpu()
	start := time.Now()
	if err := e.startController(c); err != nil {
		return err
	}
	// Ready: its caches synced and its workers started (polled every
	// 100 ms).
	logf("N=%d: hivekeeper ready %.2fs after its start", r.N, time.Since(start).Seconds())
	stopTimeline := e.timeline(start)
	if c.profile != "" {
		profiled := e.profileLater(ctx, 0, c.profile+"-cold", r.N)
		defer func() { <-profiled }()
	}
	err = e.waitChildren(r.N)
	stopTimeline()
	if err != nil {
		return err
	}
	r.coldSeconds = time.Since(start).Seconds()
	if err := e.coldPhaseStats(ctx, r, apiBefore, cpuBefore); err != nil {
		return err
	}
	if err := e.waitStatuses(r.N); err != nil {
		return err
	}
	r.coldStatusSeconds = time.Since(start).Seconds()
	if err := e.waitReady(r.N); err != nil {
		return err
	}
	r.coldReadySeconds = time.Since(start).Seconds()
	if _, err := e.quiesce(2 * time.Second); err != nil {
		return err
	}
	r.coldCPU = diff(cpuBefore, e.cpu())
	r.coldRSSBytes = peakRSS(e.proc.Process.Pid)
	apiAfter, err := e.scrapeAPIServer(ctx)
	if err != nil {
		return err
	}
	r.coldAPI = apiAfter.minus(countersOf(apiBefore))
	logf("N=%d: cold start: children in %.2fs, statuses in %.2fs, all Ready in %.2fs", r.N, r.coldSeconds, r.coldStatusSeconds, r.coldReadySeconds)
	return nil
}

// coldPhaseStats records, once every child exists, what the cold start's
// requests cost on both sides, the APF level the controller's identity
// gets, and how many of its syncs so far wrote nothing.
func (e *env) coldPhaseStats(ctx context.Context, r *result, apiBefore scrape, cpuBefore map[string]float64) error {
	cpu := diff(cpuBefore, e.cpu())
	apiAfter, err := e.apiScrape(ctx)
	if err != nil {
		return err
	}
	hk, err := scrapeMetrics(e.metrics)
	if err != nil {
		return err
	}
	if r.coldStats, err = e.phaseStatsOf(ctx, "cold start", clientStats(nil, hk), apiBefore, apiAfter, cpu, e.controllerConfig, e.ns); err != nil {
		return err
	}
	// reconcile_total's requeue result counts a request to sync again,
	// on top of the sync's own success: the successful syncs are the
	// ones without_writes is a part of.
	r.coldSyncs = hk.sum("hivekeeper_reconcile_total", map[string]string{"controller": "mcpserver", "result": "success"})
	r.coldSyncsWithoutWrites = hk.sum("hivekeeper_reconcile_without_writes_total", map[string]string{"controller": "mcpserver"})
	logf("N=%d: cold start until every child existed: %.0f MCPServer syncs, %.0f of them wrote nothing", r.N, r.coldSyncs, r.coldSyncsWithoutWrites)
	return nil
}

// timeline logs, every half second until stopped, what the controller is
// doing: the depth of the MCPServer and config queues, syncs by result and
// requests by verb so far. It is how the cold start's time was found.
func (e *env) timeline(start time.Time) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			m, err := scrapeMetrics(e.metrics)
			if err != nil {
				continue
			}
			d, cm := e.track.children()
			_, phased, _ := e.track.servers()
			logf("  t=%5.1fs queue mcpserver=%.0f mcpoidcconfig=%.0f | syncs %v | requests %v | deployments %d configmaps %d statuses %d",
				time.Since(start).Seconds(),
				m.sum("workqueue_depth", map[string]string{"name": "mcpserver"}),
				m.sum("workqueue_depth", map[string]string{"name": "mcpoidcconfig"}),
				m.byLabel("hivekeeper_reconcile_total", "result", map[string]string{"controller": "mcpserver"}),
				m.byLabel("rest_client_requests_total", "method", nil), d, cm, phased)
		}
	}()
	return func() { close(done); <-finished }
}

// profileWindow is how long each profile lasts.
const profileWindow = 5 * time.Second

// profile writes CPU profiles of kube-apiserver (its /debug/pprof, served
// to the admin client) and of hivekeeper (--profiling), taken side by side,
// to show which requests and which of the controller's own work the time
// goes to.
func (e *env) profile(ctx context.Context, prefix string, n int) {
	var wg sync.WaitGroup
	wg.Go(func() {
		raw, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(profileWindow/time.Second))).DoRaw(ctx)
		writeProfile(fmt.Sprintf("%s-apiserver-%d.pprof", prefix, n), raw, err)
	})
	if e.proc != nil && e.proc.ProcessState == nil {
		wg.Go(func() {
			raw, err := httpGet(e.pprof)
			writeProfile(fmt.Sprintf("%s-hivekeeper-%d.pprof", prefix, n), raw, err)
		})
	}
	wg.Wait()
}

// profileLater takes the profiles after a delay, in the background; the
// channel closes when they are written.
func (e *env) profileLater(ctx context.Context, delay time.Duration, prefix string, n int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(delay)
		e.profile(ctx, prefix, n)
	}()
	return done
}

func writeProfile(path string, raw []byte, err error) {
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		logf("profiling: %s: %v", path, err)
		return
	}
	logf("wrote %s", path)
}
