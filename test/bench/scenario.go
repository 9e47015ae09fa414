package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
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

	createSeconds    float64
	statusSeconds    float64
	createRequests   map[string]float64 // by HTTP method, whole create phase
	createWrites     float64
	createCPU        map[string]float64 // CPU seconds by process during the create phase
	syncP50, syncP99 float64

	steadyWindow time.Duration
	steadyWrites float64
	steadyReqs   map[string]float64

	labelWrites float64

	configReferrers int
	configSeconds   float64
	configWrites    float64

	deleteSeconds float64

	rssBytes, peakRSSBytes, heapBytes float64
	churn                             float64
}

type env struct {
	srv     *framework.Server
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	metrics string
	proc    *exec.Cmd
}

func runOne(ctx context.Context, c config, root string, n int) (*result, error) {
	logf("N=%d: starting etcd and kube-apiserver", n)
	srv, err := framework.Start(framework.Options{CRDDir: filepath.Join(root, "config", "crd")})
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	kube, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		return nil, err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	e := &env{srv: srv, kube: kube, dyn: dyn}
	if err := e.startController(c); err != nil {
		return nil, err
	}
	defer e.stopController()

	r := &result{N: n, K: c.configs}
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
	r.churn = m.sum("hivekeeper_churn_writes_total", nil)
	if err := e.deleteAll(ctx, r); err != nil {
		return r, err
	}
	return r, nil
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
		"--kubeconfig=" + e.srv.Kubeconfig,
		"--namespaces=" + benchNS,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", mport),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", hport),
	}
	if c.workers > 0 {
		args = append(args, fmt.Sprintf("--workers=%d", c.workers))
	}
	if c.qps != 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%g", c.qps))
	}
	if c.burst > 0 {
		args = append(args, fmt.Sprintf("--kube-api-burst=%d", c.burst))
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

func configObj(i int, issuer string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": thv1.SchemeGroupVersion.String(), "kind": thv1.KindMCPOIDCConfig,
		"metadata": map[string]any{"name": fmt.Sprintf("idp-%d", i), "namespace": benchNS},
		"spec": map[string]any{"type": "inline", "inline": map[string]any{
			"issuer": issuer, "jwksUrl": issuer + "/jwks", "clientId": "hivekeeper",
		}},
	}}
}

// serverObj is the i-th MCPServer: a third of each transport, a quarter
// with overrides, each referencing one of k configs.
func serverObj(i, k int) *unstructured.Unstructured {
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
		"metadata": map[string]any{"name": fmt.Sprintf("mcp-%04d", i), "namespace": benchNS},
		"spec":     spec,
	}}
}

// count returns how many objects a list call matches without transferring
// them: limit=1 and the server's remainingItemCount. Polling with full
// lists would itself load the API server the benchmark measures.
func count(list func(metav1.ListOptions) (metav1.ListInterface, int, error), selector string) (int, error) {
	lm, n, err := list(metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		return 0, err
	}
	if rem := lm.GetRemainingItemCount(); rem != nil {
		n += int(*rem)
	}
	return n, nil
}

func (e *env) countChildren(ctx context.Context) (deps, cms int, err error) {
	deps, err = count(func(o metav1.ListOptions) (metav1.ListInterface, int, error) {
		l, err := e.kube.AppsV1().Deployments(benchNS).List(ctx, o)
		if err != nil {
			return nil, 0, err
		}
		return l, len(l.Items), nil
	}, "")
	if err != nil {
		return 0, 0, err
	}
	cms, err = count(func(o metav1.ListOptions) (metav1.ListInterface, int, error) {
		l, err := e.kube.CoreV1().ConfigMaps(benchNS).List(ctx, o)
		if err != nil {
			return nil, 0, err
		}
		return l, len(l.Items), nil
	}, "") // remainingItemCount is unset for selected lists; the namespace holds only our ConfigMaps.
	return deps, cms, err
}

func (e *env) create(ctx context.Context, c config, r *result) error {
	for i := range c.configs {
		if _, err := e.dyn.Resource(configsGVR).Namespace(benchNS).Create(ctx, configObj(i, "https://idp.example.com"), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	// Let the configs become Valid so the run measures MCPServers.
	if err := poll(30*time.Second, func() bool {
		l, err := e.dyn.Resource(configsGVR).Namespace(benchNS).List(ctx, metav1.ListOptions{})
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
	before, err := scrapeMetrics(e.metrics)
	if err != nil {
		return err
	}
	logf("N=%d: creating %d MCPServers", r.N, r.N)
	cpuBefore := e.cpu()
	start := time.Now()
	if err := parallel(r.N, c.concurrency, func(i int) error {
		_, err := e.dyn.Resource(serversGVR).Namespace(benchNS).Create(ctx, serverObj(i, c.configs), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := poll(10*time.Minute, func() bool {
		d, cm, err := e.countChildren(ctx)
		return err == nil && d == r.N && cm == r.N
	}); err != nil {
		return fmt.Errorf("children never all existed: %w", err)
	}
	r.createSeconds = time.Since(start).Seconds()
	r.createCPU = diff(cpuBefore, e.cpu())
	if err := poll(10*time.Minute, func() bool {
		l, err := e.dyn.Resource(serversGVR).Namespace(benchNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false
		}
		for _, u := range l.Items {
			if p, _, _ := unstructured.NestedString(u.Object, "status", "phase"); p == "" {
				return false
			}
		}
		return len(l.Items) == r.N
	}); err != nil {
		return fmt.Errorf("statuses never all written: %w", err)
	}
	r.statusSeconds = time.Since(start).Seconds()
	// Wait for the queues to drain before reading the create phase's cost.
	after, err := e.quiesce(2 * time.Second)
	if err != nil {
		return err
	}
	r.createRequests = diff(before.byLabel("rest_client_requests_total", "method", nil), after.byLabel("rest_client_requests_total", "method", nil))
	r.createWrites = after.sum("hivekeeper_writes_total", nil) - before.sum("hivekeeper_writes_total", nil)
	r.syncP50 = quantile(0.5, before, after, "hivekeeper_reconcile_duration_seconds", map[string]string{"controller": "mcpserver"})
	r.syncP99 = quantile(0.99, before, after, "hivekeeper_reconcile_duration_seconds", map[string]string{"controller": "mcpserver"})
	logf("N=%d: children in %.2fs, statuses in %.2fs", r.N, r.createSeconds, r.statusSeconds)
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
		_, err := e.dyn.Resource(serversGVR).Namespace(benchNS).Patch(ctx, fmt.Sprintf("mcp-%04d", i),
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
	deps, err := e.kube.AppsV1().Deployments(benchNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, d := range deps.Items {
		i, _ := strconv.Atoi(strings.TrimPrefix(d.Name, "mcp-"))
		if i%c.configs == 0 {
			old[d.Name] = d.Spec.Template.Annotations[workload.AnnotationRunConfigChecksum]
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
	if _, err := e.dyn.Resource(configsGVR).Namespace(benchNS).Patch(ctx, "idp-0", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	if err := poll(5*time.Minute, func() bool {
		deps, err := e.kube.AppsV1().Deployments(benchNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false
		}
		rolled := 0
		for _, d := range deps.Items {
			if sum, ok := old[d.Name]; ok && d.Spec.Template.Annotations[workload.AnnotationRunConfigChecksum] != sum {
				rolled++
			}
		}
		return rolled == len(old)
	}); err != nil {
		return fmt.Errorf("referrers never rolled: %w", err)
	}
	r.configSeconds = time.Since(start).Seconds()
	after, err := e.quiesce(time.Second)
	if err != nil {
		return err
	}
	r.configWrites = after.sum("hivekeeper_writes_total", nil) - before.sum("hivekeeper_writes_total", nil)
	return nil
}

func (e *env) deleteAll(ctx context.Context, r *result) error {
	logf("N=%d: deleting every MCPServer", r.N)
	start := time.Now()
	// One delete per object: a single DeleteCollection of thousands of
	// objects outlives the API server's request timeout.
	if err := parallel(r.N, 16, func(i int) error {
		return e.dyn.Resource(serversGVR).Namespace(benchNS).Delete(ctx, fmt.Sprintf("mcp-%04d", i), metav1.DeleteOptions{})
	}); err != nil {
		return err
	}
	if err := poll(10*time.Minute, func() bool {
		l, err := e.dyn.Resource(serversGVR).Namespace(benchNS).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	}); err != nil {
		return fmt.Errorf("finalizers did not complete: %w", err)
	}
	r.deleteSeconds = time.Since(start).Seconds()
	return nil
}

// cpu reads the CPU seconds used so far by the controller, kube-apiserver
// and etcd, to show where the time of a phase went.
func (e *env) cpu() map[string]float64 {
	return map[string]float64{
		"hivekeeper":     cpuSeconds(e.proc.Process.Pid),
		"kube-apiserver": cpuSeconds(e.srv.APIServerPID()),
		"etcd":           cpuSeconds(e.srv.EtcdPID()),
	}
}

// cpuSeconds is utime+stime of a process from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return math.NaN()
	}
	// The command name may contain spaces; fields start after its ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return math.NaN()
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// peakRSS reads the process's high-water resident set size.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return math.NaN()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb * 1024
			}
		}
	}
	return math.NaN()
}
