// Package faults runs the shipped hivekeeper binary through the faults of
// GitHub issues 8 and 13: an API server that dies mid-convergence, leader
// failover, a second writer racing on the same objects, hand edits of
// children, invalid input, a Service CIDR that runs out of addresses, a
// ResourceQuota whose refusals change on every attempt, and deletions
// among objects that share the runner's names.
//
// Each scenario runs the binary as a process, so its metrics are its own:
// counts of writes, drift and churn are exact, not deltas of a registry
// shared with other tests. Each records its figures; a passing run of the
// whole suite with HIVEKEEPER_WRITE_RELIABILITY=1 (make reliability)
// writes them to docs/reliability.md.
package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// The binary is built once per package run, into the package server's
// folder, which framework.Main removes at the end.
// binary returns the path of a freshly built hivekeeper, skipping the test
// when the package has no API server (-short, or no test binaries).
var binary = framework.BuildOnce("./cmd/controller", "hivekeeper")

// privateServer starts an API server of the test's own, for faults that
// must not reach the package's shared server (killing it, a tiny Service
// CIDR). It is stopped when the test ends.
func privateServer(t *testing.T, extraArgs ...string) *framework.Env {
	t.Helper()
	framework.Get(t) // skips like every other test when there is no server
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := framework.Start(framework.Options{CRDDir: filepath.Join(root, "config", "crd"), ExtraAPIServerArgs: extraArgs})
	if err != nil {
		t.Fatalf("starting a private API server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping the private API server: %v", err)
		}
	})
	env, err := framework.NewEnv(srv)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// hivekeeper is one running binary.
type hivekeeper struct {
	name    string
	cmd     *exec.Cmd
	out     *framework.SyncBuffer
	done    chan struct{}
	err     error
	metrics string // host:port of /metrics
	health  string // host:port of /healthz and /readyz
}

// startHivekeeper runs the binary against kubeconfig, watching ns, with
// metrics and health on free loopback ports. It is killed when the test
// ends, and its output is logged when the test failed.
func startHivekeeper(t *testing.T, name, kubeconfig, ns string, extra ...string) *hivekeeper {
	t.Helper()
	ports := freePorts(t, 2)
	p := &hivekeeper{
		name:    name,
		out:     &framework.SyncBuffer{},
		done:    make(chan struct{}),
		metrics: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		health:  fmt.Sprintf("127.0.0.1:%d", ports[1]),
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--namespaces=" + ns,
		"--metrics-bind-address=" + p.metrics,
		"--health-probe-bind-address=" + p.health,
	}, extra...)
	p.cmd = exec.Command(binary(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// The kernel kills the binary if the test process dies first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			// A stopped process ignores SIGKILL until it is continued.
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", p.name, tail(p.out.String(), 60))
		}
	})
	return p
}

func (p *hivekeeper) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *hivekeeper) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: sending %v: %v", p.name, sig, err)
	}
}

// waitReady waits until /readyz answers 200.
func (p *hivekeeper) waitReady(t *testing.T) {
	t.Helper()
	framework.Eventually(t, 60*time.Second, func() (bool, error) {
		code, body, err := p.get(p.health, "/readyz")
		if err != nil {
			return false, err
		}
		return code == http.StatusOK, fmt.Errorf("%d %s", code, body)
	}, "%s /readyz to answer 200", p.name)
}

func (p *hivekeeper) get(addr, path string) (int, string, error) {
	if p.exited() {
		return 0, "", fmt.Errorf("%s exited: %v", p.name, p.err)
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// scrape reads the process's /metrics.
func (p *hivekeeper) scrape() (samples, error) {
	code, body, err := p.get(p.metrics, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: %d", p.name, code)
	}
	return parseMetrics(body)
}

// mustScrape is scrape for the test goroutine.
func (p *hivekeeper) mustScrape(t *testing.T) samples {
	t.Helper()
	s, err := p.scrape()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

type samples []sample

// sum adds the values of the series called name whose labels include
// match. A series that does not exist counts as 0.
func (s samples) sum(name string, match map[string]string) float64 {
	var total float64
	for _, x := range s {
		if x.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if x.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += x.value
		}
	}
	return total
}

// series lists the matching series with their values, for reports.
func (s samples) series(name string, match map[string]string) string {
	var out []string
	for _, x := range s {
		if x.name != name || x.value == 0 {
			continue
		}
		ok := true
		for k, v := range match {
			if x.labels[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		keys := make([]string, 0, len(x.labels))
		for k := range x.labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var ls []string
		for _, k := range keys {
			ls = append(ls, k+"="+x.labels[k])
		}
		out = append(out, fmt.Sprintf("{%s} %g", strings.Join(ls, ","), x.value))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// parseMetrics reads the Prometheus text exposition format: comments are
// skipped, each other line is name{labels} value [timestamp].
func parseMetrics(body string) (samples, error) {
	var out samples
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, "=\"")
			if eq < 0 {
				return s, fmt.Errorf("bad label")
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var val strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[j])
					}
					continue
				}
				if c == '"' {
					rest = rest[j+1:]
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return s, fmt.Errorf("unterminated label value")
			}
			s.labels[key] = val.String()
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

// Metric names and label sets the scenarios read.
const (
	writesTotal = "hivekeeper_writes_total"
	driftTotal  = "hivekeeper_drift_detections_total"
	churnTotal  = "hivekeeper_churn_writes_total"
	leaderGauge = "leader_election_master_status"
)

var all = map[string]string{}

// newServer is a minimal MCPServer.
func newServer(ns, name string) *thv1.MCPServer {
	return &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: thv1.MCPServerSpec{
			Image:     "ghcr.io/example/fetch:1.0",
			Transport: thv1.TransportStreamableHTTP,
		},
	}
}

// createServers creates n MCPServers named prefix-<i> with a few parallel
// clients, so a burst reaches the controller at once.
func createServers(t *testing.T, env *framework.Env, ns, prefix string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	errs := make(chan error, n)
	work := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for name := range work {
				_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(context.Background(), newServer(ns, name), metav1.CreateOptions{})
				if err != nil {
					errs <- fmt.Errorf("creating MCPServer %s: %w", name, err)
				}
			}
		})
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return names
}

// convergence is what a list of the namespace says about each server.
type convergence struct {
	servers     map[string]*thv1.MCPServer // by name
	deployments map[types.UID][]string     // controller owner UID → names
	configMaps  map[types.UID][]string
	services    map[types.UID][]string
}

// observe lists the servers and their children in ns (three lists, not
// three gets per server).
func observe(env *framework.Env, ns string) (*convergence, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := &convergence{
		servers:     map[string]*thv1.MCPServer{},
		deployments: map[types.UID][]string{},
		configMaps:  map[types.UID][]string{},
		services:    map[types.UID][]string{},
	}
	servers, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range servers.Items {
		c.servers[servers.Items[i].Name] = &servers.Items[i]
	}
	sel := metav1.ListOptions{LabelSelector: app.ChildLabelSelector}
	deps, err := env.Kube.AppsV1().Deployments(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for i := range deps.Items {
		group(c.deployments, &deps.Items[i].ObjectMeta)
	}
	// The RunConfig ConfigMap carries ToolHive's labels, not toolhive=true:
	// every ConfigMap with a controller is a child.
	cms, err := env.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range cms.Items {
		if metav1.GetControllerOf(&cms.Items[i]) != nil {
			group(c.configMaps, &cms.Items[i].ObjectMeta)
		}
	}
	svcs, err := env.Kube.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for i := range svcs.Items {
		group(c.services, &svcs.Items[i].ObjectMeta)
	}
	return c, nil
}

func group(m map[types.UID][]string, obj *metav1.ObjectMeta) {
	var uid types.UID
	if ref := metav1.GetControllerOf(obj); ref != nil {
		uid = ref.UID
	}
	m[uid] = append(m[uid], obj.Name)
}

// converged reports whether server name has its Deployment and ConfigMap,
// its finalizer, and a status for its current generation.
func (c *convergence) converged(name string) bool {
	s := c.servers[name]
	if s == nil || s.Generation == 0 || s.Status.ObservedGeneration != s.Generation {
		return false
	}
	hasFinalizer := false
	for _, f := range s.Finalizers {
		hasFinalizer = hasFinalizer || f == thv1.MCPServerFinalizer
	}
	return hasFinalizer && len(c.deployments[s.UID]) > 0 && len(c.configMaps[s.UID]) > 0
}

func (c *convergence) countConverged(names []string) int {
	n := 0
	for _, name := range names {
		if c.converged(name) {
			n++
		}
	}
	return n
}

// duplicates returns every violation of "exactly one Deployment, ConfigMap
// and Service per server, and no child owned by a server that does not
// exist".
func (c *convergence) duplicates() []string {
	var out []string
	uids := map[types.UID]string{}
	for name, s := range c.servers {
		uids[s.UID] = name
	}
	for kind, m := range map[string]map[types.UID][]string{"Deployment": c.deployments, "ConfigMap": c.configMaps, "Service": c.services} {
		for uid, names := range m {
			owner, ok := uids[uid]
			if !ok {
				out = append(out, fmt.Sprintf("%s %v owned by %q, which is no MCPServer of the namespace", kind, names, uid))
				continue
			}
			if len(names) != 1 {
				out = append(out, fmt.Sprintf("MCPServer %s has %d %ss: %v", owner, len(names), kind, names))
			}
		}
		for uid, name := range uids {
			if len(m[uid]) == 0 {
				out = append(out, fmt.Sprintf("MCPServer %s has no %s", name, kind))
			}
		}
	}
	sort.Strings(out)
	return out
}

// slowly throttles a condition polled by framework.Eventually (every
// 20ms) to one evaluation per interval, for conditions that list objects.
func slowly(interval time.Duration, cond func() (bool, error)) func() (bool, error) {
	var last time.Time
	return func() (bool, error) {
		if wait := interval - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		last = time.Now()
		return cond()
	}
}

// getDeployment reads a Deployment, nil when it does not exist.
func getDeployment(t *testing.T, env *framework.Env, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func getService(env *framework.Env, ns, name string) (*corev1.Service, error) {
	return env.Kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := framework.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
