package framework

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
)

// Env is a test package's API server with ready clients, all admin.
type Env struct {
	// Config is the admin (system:masters) config, unthrottled.
	Config *rest.Config
	// Kube is a core clientset built from Config.
	Kube kubernetes.Interface
	// Toolhive is the generated clientset for toolhive.stacklok.dev.
	Toolhive versioned.Interface
	// Dynamic writes arbitrary objects, e.g. a spec with fields the Go
	// types do not know.
	Dynamic dynamic.Interface
	// Kubeconfig is the path of an admin kubeconfig file.
	Kubeconfig string
	// Server is the underlying server, for tests that restart or kill
	// kube-apiserver, or need its URL, PIDs or folder.
	Server *Server
}

// The package's environment, set once by Main before any test runs.
var (
	pkgEnv      *Env
	unavailable string
	mainCalled  bool
)

// LogVerbosityEnv sets the klog verbosity of controllers started by
// StartControllers (default 2). Their logs appear through t.Log, so only for
// failing tests or with -v.
const LogVerbosityEnv = "HIVEKEEPER_TEST_LOG_V"

// Main runs a test package against one etcd and kube-apiserver shared by all
// its tests, with the CRDs of config/crd Established. Call it from TestMain.
// Under -short, or when the binaries are missing, tests calling Get skip
// with the reason; missing binaries fail them instead when $BinariesEnv is
// set or CI is true (Missing). It exits the process with the tests' exit code.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit: it returns the tests' exit code, for a
// TestMain with work left after the tests (the fault suite writes its
// report, the conformance suite removes its build).
func Run(m *testing.M) int {
	return run(m, false)
}

// MainCluster is Main on a fuller cluster (Options.Cluster): the tests of
// the package see Deployments roll out into pods that become Ready,
// garbage collection and namespace deletion.
func MainCluster(m *testing.M) {
	os.Exit(run(m, true))
}

func run(m *testing.M, cluster bool) int {
	mainCalled = true
	flag.Parse()
	if testing.Short() {
		unavailable = "integration test: needs a real API server, skipped with -short"
		return m.Run()
	}
	bins, err := FindBinaries()
	if err != nil {
		unavailable = "integration test: no test API server binaries: " + err.Error()
		fmt.Fprintln(os.Stderr, "framework: "+unavailable)
		return m.Run()
	}
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "framework:", err)
		return 1
	}
	began := time.Now()
	srv, err := Start(Options{BinDir: bins, CRDDir: filepath.Join(root, "config", "crd"), Cluster: cluster})
	if err != nil {
		// The binaries exist, so a server that does not start is a real
		// failure, not a reason to skip.
		fmt.Fprintln(os.Stderr, "framework: starting the test API server:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "framework: API server %s ready with CRDs in %v\n", srv.URL, time.Since(began).Round(time.Millisecond))

	// An interrupted `go test` still removes the folder; Pdeathsig alone
	// would only kill the servers.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		_ = srv.Stop()
		fmt.Fprintf(os.Stderr, "framework: %v: test API server stopped\n", sig)
		os.Exit(1)
	}()

	env, err := NewEnv(srv)
	if err != nil {
		_ = srv.Stop()
		fmt.Fprintln(os.Stderr, "framework:", err)
		return 1
	}
	pkgEnv = env
	code := m.Run()
	signal.Stop(sigs)
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "framework: stopping the test API server:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// NewEnv builds admin clients for a server started with Start.
func NewEnv(srv *Server) (*Env, error) {
	kube, th, err := app.NewClients(srv.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		return nil, err
	}
	return &Env{Config: srv.Config, Kube: kube, Toolhive: th, Dynamic: dyn, Kubeconfig: srv.Kubeconfig, Server: srv}, nil
}

// Get returns the package's Env, or skips the test when there is none.
func Get(t testing.TB) *Env {
	t.Helper()
	if pkgEnv != nil {
		return pkgEnv
	}
	if !mainCalled {
		t.Fatal("framework.Get: the package's TestMain must call framework.Main(m)")
	}
	if testing.Short() {
		t.Skip(unavailable)
	}
	// The binaries are missing or broken: a skip, unless the run said
	// they are there.
	Missing(t, unavailable, BinariesEnv)
	return nil
}

// Namespace creates a uniquely named namespace for the test and deletes it
// on cleanup. Without a namespace controller (all but Options.Cluster) the
// deletion leaves it Terminating with its objects; nothing waits for it,
// and the unique name keeps tests apart.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// namespacePrefix turns a test name into a DNS label prefix, so a namespace
// left behind tells which test made it.
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	if s == "" {
		s = "test"
	}
	return s + "-"
}

// ConfigForUser returns a config authenticated as user in groups by a client
// certificate, so RBAC is evaluated for that identity. See
// Server.ConfigForUser.
func (e *Env) ConfigForUser(user string, groups ...string) *rest.Config {
	return e.Server.ConfigForUser(user, groups...)
}

// StartControllers runs every registered controller through app.Start, as
// the binary does, with admin clients and a logger that writes through t.
// It returns once the caches synced and stops the controllers on cleanup,
// waiting for app.Start to return so no goroutine outlives the test.
func (e *Env) StartControllers(t testing.TB, opts app.Options) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(logVerbosity())))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	ready := make(chan struct{})
	exited := make(chan struct{})
	var runErr error
	go func() {
		defer close(exited)
		runErr = app.Start(ctx, e.Kube, e.Toolhive, opts, ready)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
			if runErr != nil && !errors.Is(runErr, context.Canceled) {
				t.Errorf("controllers returned an error: %v", runErr)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("controllers still running 30s after their context was cancelled")
		}
	})
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("controllers returned before their caches synced: %v", runErr)
	case <-time.After(60 * time.Second):
		t.Fatalf("controllers' caches not synced after 60s")
	}
}

func logVerbosity() int {
	if v, err := strconv.Atoi(os.Getenv(LogVerbosityEnv)); err == nil {
		return v
	}
	return 2
}

// Eventually polls cond about every 20ms until it returns true, and fails
// the test if that does not happen within timeout. An error from cond does
// not end the wait (an object may simply not exist yet); the last one is
// reported on timeout. msgAndArgs, when given, is a format string and its
// arguments describing what was awaited. Call it from the test goroutine.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, error), msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		if time.Now().After(deadline) {
			what := describe(msgAndArgs)
			if lastErr != nil {
				t.Fatalf("timed out after %v waiting for %s; last error: %v", timeout, what, lastErr)
			}
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe renders Eventually's msgAndArgs. It does not hand the slice to a
// fmt print function as a whole, so vet does not take Eventually for a Print
// wrapper and flag the format strings its callers pass.
func describe(msgAndArgs []any) string {
	if len(msgAndArgs) == 0 {
		return "condition"
	}
	if format, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(format, msgAndArgs[1:]...)
	}
	parts := make([]string, len(msgAndArgs))
	for i, a := range msgAndArgs {
		parts[i] = fmt.Sprint(a)
	}
	return strings.Join(parts, " ")
}
