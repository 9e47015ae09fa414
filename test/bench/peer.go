package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// peerResult is ToolHive's own operator (thv-operator at the pinned
// release) doing the hot create, the label and the config change of the
// same N, on a cluster of its own started the same way, in the same run.
type peerResult struct {
	createSeconds float64
	// ready is how many MCPServers were Ready once every status was
	// written; readySeconds the time until all were, 0 if they never
	// were within the wait.
	ready         int
	readySeconds  float64
	statusSeconds float64
	requests      float64 // API requests per MCPServer during the create
	rssPeakBytes  float64
	labelWrites   float64
	configWrites  float64
	configSeconds float64
}

// peerReadyWait bounds the wait for the peer's MCPServers to be Ready once
// each has a status, so that an operator that never calls them Ready ends
// the phase rather than the run.
const peerReadyWait = 10 * time.Minute

// runPeer measures ToolHive's operator at N: its own etcd, API server and
// the rest of the control plane with ToolHive's CRDs, the operator
// watching the bench namespace (WATCH_NAMESPACE, as hivekeeper is given
// --namespaces), the same configs and MCPServers created the same way.
func runPeer(ctx context.Context, c config, n int) (*peerResult, error) {
	logf("N=%d: peer: starting a cluster with ToolHive %s's CRDs", n, c.toolhive)
	srv, err := framework.Start(framework.Options{CRDDir: toolhive.CRDDir(c.module), Cluster: true})
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	e, err := newEnv(srv)
	if err != nil {
		return nil, err
	}
	const ownNamespace = "toolhive-system"
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ownNamespace}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if err := e.useNamespace(ctx, benchNS); err != nil {
		return nil, err
	}
	defer func() { e.track.stop() }()

	ports, err := framework.FreePorts(2)
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp(srv.Dir, "thv-home-")
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(srv.Dir, "thv-operator.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(c.peer,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		"--leader-elect=false")
	// As ToolHive's chart runs it (its usage metrics and update check on),
	// with no user's ToolHive config and no CI variable; its update check
	// goes to a closed loopback port instead of leaving this machine. It
	// watches the bench namespace alone (WATCH_NAMESPACE last, so it wins
	// over the chart's).
	environ, err := toolhive.OperatorEnviron(home)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(append(environ, c.chartEnv...), "KUBECONFIG="+srv.Kubeconfig, "POD_NAMESPACE="+ownNamespace, "WATCH_NAMESPACE="+benchNS)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e.proc = cmd
	defer e.stopController()
	e.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])
	if err := poll(2*time.Minute, func() bool {
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])) && httpOK(e.metrics)
	}); err != nil {
		return nil, fmt.Errorf("ToolHive's operator not ready: %w", err)
	}

	p := &peerResult{}
	if err := e.storeConfigs(ctx, c); err != nil {
		return nil, err
	}
	if err := e.storeRunnerStatefulSets(ctx, c, n); err != nil {
		return nil, err
	}
	before, err := scrapeMetrics(e.metrics)
	if err != nil {
		return nil, err
	}
	logf("N=%d: peer: creating %d MCPServers", n, n)
	start := time.Now()
	if err := e.storeServers(ctx, c, n); err != nil {
		return nil, err
	}
	if err := e.waitChildren(n); err != nil {
		return nil, err
	}
	p.createSeconds = time.Since(start).Seconds()
	if err := e.waitStatuses(n); err != nil {
		return nil, err
	}
	p.statusSeconds = time.Since(start).Seconds()
	if err := poll(peerReadyWait, func() bool { _, _, ready := e.track.servers(); return ready == n }); err == nil {
		p.readySeconds = time.Since(start).Seconds()
	}
	_, _, p.ready = e.track.servers()
	after, err := e.peerQuiesce()
	if err != nil {
		return nil, err
	}
	p.requests = (after.sum("rest_client_requests_total", nil) - before.sum("rest_client_requests_total", nil)) / float64(n)
	logf("N=%d: peer: children in %.2fs, statuses in %.2fs, %d Ready", n, p.createSeconds, p.statusSeconds, p.ready)

	// A label on every MCPServer.
	before = after
	if err := parallel(n, c.concurrency, func(i int) error {
		_, err := e.dyn.Resource(serversGVR).Namespace(benchNS).Patch(ctx, fmt.Sprintf("mcp-%04d", i),
			types.MergePatchType, []byte(`{"metadata":{"labels":{"cost-center":"bench"}}}`), metav1.PatchOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	if after, err = e.peerQuiesce(); err != nil {
		return nil, err
	}
	p.labelWrites = peerWrites(after) - peerWrites(before)

	// A change of the config idp-0.
	old := map[string]string{}
	for name, sum := range e.track.checksums() {
		i, _ := strconv.Atoi(strings.TrimPrefix(name, "mcp-"))
		if i%c.configs == 0 {
			old[name] = sum
		}
	}
	before = after
	start = time.Now()
	if _, err := e.dyn.Resource(configsGVR).Namespace(benchNS).Patch(ctx, "idp-0", types.MergePatchType,
		[]byte(`{"spec":{"inline":{"issuer":"https://idp2.example.com"}}}`), metav1.PatchOptions{}); err != nil {
		return nil, err
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
		return nil, fmt.Errorf("peer: referrers never rolled: %w", err)
	}
	p.configSeconds = time.Since(start).Seconds()
	if after, err = e.peerQuiesce(); err != nil {
		return nil, err
	}
	p.configWrites = peerWrites(after) - peerWrites(before)
	p.rssPeakBytes = peakRSS(cmd.Process.Pid)
	logf("N=%d: peer: label %.0f writes; config change rolled in %.2fs, %.0f writes", n, p.labelWrites, p.configSeconds, p.configWrites)
	return p, nil
}

// storeRunnerStatefulSets stores, untimed, in the current namespace, a
// stand-in for the StatefulSet the proxy runner would create for each
// MCPServer. hivekeeper, like ToolHive's operator, reads a ready proxy
// without it as Pending. ToolHive's operator at
// v0.63.0 still calls an MCPServer Ready only once that StatefulSet exists
// (its #6343): while it is missing, the status stays Pending ("recreating
// missing workload StatefulSet"), the MCPServer is queued again every 10
// seconds, and once the proxy Deployment is available the operator bounces
// it (a template annotation) every 2 minutes, so without it the operator
// would neither be Ready nor ever quiet. It adopts the stand-in (a
// controller owner reference), as it adopts the runner's own. No runner
// runs here; the stand-in has no replicas, so it adds no pods.
func (e *env) storeRunnerStatefulSets(ctx context.Context, c config, n int) error {
	return parallel(n, c.concurrency, func(i int) error {
		name := fmt.Sprintf("mcp-%04d", i)
		sts := framework.RunnerStatefulSet(e.ns, name, framework.RunnerLabels(name))
		sts.Spec.Replicas = ptr.To[int32](0)
		_, err := e.kube.AppsV1().StatefulSets(e.ns).Create(ctx, sts, metav1.CreateOptions{})
		return err
	})
}

// peerWrites sums the operator's write requests (controller-runtime counts
// every request client-go sends, by method).
func peerWrites(m scrape) float64 {
	var sum float64
	for method, v := range m.byLabel("rest_client_requests_total", "method", nil) {
		if method != "GET" && method != "LIST" && method != "WATCH" {
			sum += v
		}
	}
	return sum
}

// peerQuiesce waits until the operator sent no request for 3 seconds.
func (e *env) peerQuiesce() (scrape, error) {
	var last float64 = -1
	since := time.Now()
	var m scrape
	err := poll(10*time.Minute, func() bool {
		var err error
		if m, err = scrapeMetrics(e.metrics); err != nil {
			return false
		}
		if cur := m.sum("rest_client_requests_total", nil); cur != last {
			last, since = cur, time.Now()
			return false
		}
		return time.Since(since) >= 3*time.Second
	})
	return m, err
}
