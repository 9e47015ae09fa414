// Package process tests the hivekeeper binary as it ships: built with go
// build, run as a process against a real API server, observed only through
// its flags, HTTP endpoints, the objects it writes and its exit code.
package process

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1beta1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// TestBinary builds the binary once and runs every process-level check
// against it as a subtest.
func TestBinary(t *testing.T) {
	bin := buildBinary(t)
	t.Run("help lists the documented flags", func(t *testing.T) { testHelp(t, bin) })
	t.Run("probes, metrics and SIGTERM", func(t *testing.T) { testServing(t, bin) })
	t.Run("leader election acquires the lease", func(t *testing.T) { testLeaderElection(t, bin) })
	t.Run("secure metrics: 401, 403, 200", func(t *testing.T) { testSecureMetrics(t, bin) })
}

func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hivekeeper")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/controller")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/controller: %v\n%s", err, out)
	}
	return bin
}

// The flags the README documents, named as users know them from
// kube-controller-manager and kubebuilder operators.
var documentedFlags = []string{
	"--kubeconfig", "--namespaces", "--leader-elect", "--leader-elect-namespace",
	"--metrics-bind-address", "--health-probe-bind-address", "--kube-api-qps",
	"--kube-api-burst", "--workers", "--runner-image", "--vmcp-image", "--log-format",
	"--metrics-secure", "--metrics-cert-path", "--proxy-runner-cluster-role",
	"--stdio-proxy-runner-cluster-role", "--remote-proxy-runner-cluster-role", "--profiling",
	"--default-redis-addr", "--default-redis-secret-name", "--default-redis-secret-key",
	"--default-redis-tls-enabled", "--default-redis-tls-ca-secret-name", "--default-redis-tls-ca-secret-key",
}

func testHelp(t *testing.T, bin string) {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("hivekeeper --help: %v\n%s", err, out)
	}
	help := string(out)
	for _, f := range documentedFlags {
		if !regexp.MustCompile(regexp.QuoteMeta(f) + `\b[^-]`).MatchString(help) {
			t.Errorf("--help does not mention %s", f)
		}
	}
	if !regexp.MustCompile(`(?m)^\s+-v,? `).MatchString(help) {
		t.Errorf("--help does not mention -v")
	}
	if t.Failed() {
		t.Logf("--help output:\n%s", help)
	}
}

// proc is a running hivekeeper whose output is kept for failure messages.
type proc struct {
	cmd  *exec.Cmd
	out  *framework.SyncBuffer
	done chan struct{}
	err  error
}

func startBinary(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), out: &framework.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("hivekeeper output:\n%s", p.out.String())
		}
	})
	return p
}

// terminate sends SIGTERM and requires a clean exit within the time a
// kubelet would wait before it kills (well under terminationGracePeriod).
func (p *proc) terminate(t *testing.T) {
	t.Helper()
	began := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("hivekeeper still running 10s after SIGTERM")
	}
	if p.err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", p.err)
	}
	if strings.Contains(p.out.String(), "WARNING: DATA RACE") {
		t.Errorf("the race detector reported a data race")
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("shutdown after SIGTERM took %v, want a few seconds at most", d)
	}
}

// get fetches path from one of the process's HTTP servers, failing fast
// when the process is gone.
func (p *proc) get(addr, path string) (int, string, error) {
	if p.exited() {
		return 0, "", fmt.Errorf("hivekeeper exited: %v", p.err)
	}
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func testServing(t *testing.T, bin string) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ports := freePorts(t, 2)
	metricsAddr, healthAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	createServer(t, env, ns)

	p := startBinary(t, bin,
		"--kubeconfig="+env.Kubeconfig,
		"--namespaces="+ns,
		"--metrics-bind-address="+metricsAddr,
		"--health-probe-bind-address="+healthAddr,
	)
	for _, path := range []string{"/healthz", "/readyz"} {
		framework.Eventually(t, 30*time.Second, func() (bool, error) {
			code, body, err := p.get(healthAddr, path)
			if err != nil {
				return false, err
			}
			return code == http.StatusOK, fmt.Errorf("%d %s", code, body)
		}, "%s to answer 200", path)
	}

	wantSeries := []string{"hivekeeper_", "workqueue_", "rest_client_requests_total"}
	var missing []string
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		code, body, err := p.get(metricsAddr, "/metrics")
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("/metrics: %d", code)
		}
		missing = missing[:0]
		for _, s := range wantSeries {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(s)).MatchString(body) {
				missing = append(missing, s)
			}
		}
		return len(missing) == 0, fmt.Errorf("no series starting with %v", missing)
	}, "/metrics to serve %v", wantSeries)
	if code, _, err := p.get(metricsAddr, "/debug/pprof/cmdline"); err != nil || code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without --profiling: %d (%v), want 404", code, err)
	}

	p.terminate(t)
}

func testLeaderElection(t *testing.T, bin string) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ports := freePorts(t, 2)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	createServer(t, env, ns)
	p := startBinary(t, bin,
		"--kubeconfig="+env.Kubeconfig,
		"--namespaces="+ns,
		"--leader-elect",
		"--leader-elect-namespace="+ns,
		"--metrics-bind-address="+metricsAddr,
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
	)
	var holder string
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("hivekeeper exited: %v", p.err)
		}
		lease, err := env.Kube.CoordinationV1().Leases(ns).Get(context.Background(), "hivekeeper-leader", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return holder != "", fmt.Errorf("lease has no holder")
	}, "Lease %s/hivekeeper-leader to be held", ns)
	hostname, _ := os.Hostname()
	if !strings.HasPrefix(holder, hostname) {
		t.Errorf("lease holder %q does not name this host %q", holder, hostname)
	}
	// The leader runs the controllers: a reconcile shows up in the metrics.
	// Waiting for it also keeps SIGTERM out of the startup window, which
	// this test is not about.
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		_, body, err := p.get(metricsAddr, "/metrics")
		return err == nil && strings.Contains(body, "hivekeeper_reconcile_total{"), err
	}, "the leader to reconcile")
	p.terminate(t)
}

// createServer gives the controllers something to reconcile, so the
// per-controller series have samples.
func createServer(t *testing.T, env *framework.Env, ns string) {
	t.Helper()
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(context.Background(), &thv1beta1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "fetch"},
		Spec:       thv1beta1.MCPServerSpec{Image: "docker.io/mcp/fetch:latest"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := framework.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// syncBuffer is a bytes.Buffer safe for the process's two output pipes and

// With --metrics-secure, /metrics is HTTPS and answers only tokens the API
// server authenticates (401 otherwise) for users RBAC lets get /metrics
// (403 otherwise); plain HTTP gets nowhere. --profiling's /debug/pprof/
// sits behind the same check: the metrics reader may not profile.
func testSecureMetrics(t *testing.T, bin string) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	ports := freePorts(t, 2)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	createServer(t, env, ns)

	// Two scrapers: one bound to the metrics reader rules, one not.
	token := func(sa string) string {
		t.Helper()
		if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, nobody := token("prometheus"), token("nobody")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"}, Rules: rbac.MetricsReaderRules()}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}},
	}
	if _, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})

	p := startBinary(t, bin,
		"--kubeconfig="+env.Kubeconfig,
		"--namespaces="+ns,
		"--metrics-secure",
		"--profiling",
		"--metrics-bind-address="+metricsAddr,
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
	)
	// The certificate is self-signed: nothing to verify it against.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
	}}
	defer client.CloseIdleConnections()
	get := func(scheme, path, token string) (int, string, error) {
		if p.exited() {
			return 0, "", fmt.Errorf("hivekeeper exited: %v", p.err)
		}
		req, _ := http.NewRequest(http.MethodGet, scheme+"://"+metricsAddr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	scrape := func(scheme, token string) (int, string, error) { return get(scheme, "/metrics", token) }

	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		code, body, err := scrape("https", reader)
		if err != nil {
			return false, err
		}
		return code == http.StatusOK && strings.Contains(body, "hivekeeper_"), fmt.Errorf("%d %.200s", code, body)
	}, "the reader's token to get the metrics")
	for _, tc := range []struct {
		what, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server does not know", "not-a-token", http.StatusUnauthorized},
		{"a token without get on /metrics", nobody, http.StatusForbidden},
		{"the reader's token", reader, http.StatusOK},
	} {
		if code, body, err := scrape("https", tc.token); err != nil || code != tc.want {
			t.Errorf("%s: %d %.200s (%v), want %d", tc.what, code, body, err, tc.want)
		}
	}
	if code, _, err := scrape("http", reader); err == nil && code == http.StatusOK {
		t.Errorf("plain HTTP served the metrics")
	}
	if code, _, err := get("https", "/debug/pprof/cmdline", reader); err != nil || code != http.StatusForbidden {
		t.Errorf("the reader's token on /debug/pprof/cmdline: %d (%v), want 403", code, err)
	}
	if code, _, err := get("https", "/debug/pprof/cmdline", env.Config.BearerToken); err != nil || code != http.StatusOK {
		t.Errorf("the admin's token on /debug/pprof/cmdline: %d (%v), want 200", code, err)
	}

	// A flood of random tokens, on /metrics and on paths not served,
	// costs a bounded number of TokenReviews, counted by the API server;
	// the reader, whose grant is cached, is served throughout.
	before := tokenReviews(t, env)
	start := time.Now()
	codes := map[int]int{}
	for i := range 2000 {
		path := "/metrics"
		if i%2 == 1 {
			path = fmt.Sprintf("/x%d", i)
		}
		code, _, err := get("https", path, fmt.Sprintf("random-%d-%d", i, time.Now().UnixNano()))
		if err != nil {
			t.Fatal(err)
		}
		codes[code]++
		if i%400 == 0 {
			if code, _, err := scrape("https", reader); err != nil || code != http.StatusOK {
				t.Errorf("the reader during the flood: %d (%v)", code, err)
			}
		}
	}
	elapsed := time.Since(start)
	reviews := tokenReviews(t, env) - before
	// The limit: a burst of 10, then 5 a second (the reader's reviews
	// when its grant expires included).
	if limit := 10 + 5*int(elapsed.Seconds()+1) + 2; reviews > limit {
		t.Errorf("2000 random tokens in %v cost %d TokenReviews, want at most %d", elapsed, reviews, limit)
	}
	if codes[http.StatusNotFound] != 1000 || codes[http.StatusTooManyRequests] == 0 || codes[http.StatusOK] != 0 {
		t.Errorf("answers to the flood: %v", codes)
	}
	t.Logf("2000 random tokens in %v: %d TokenReviews, answers %v", elapsed, reviews, codes)
	p.terminate(t)
}

// tokenReviews is how many TokenReviews the API server has answered.
func tokenReviews(t *testing.T, env *framework.Env) int {
	t.Helper()
	raw, err := env.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="tokenreviews"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		n += int(v)
	}
	return n
}
