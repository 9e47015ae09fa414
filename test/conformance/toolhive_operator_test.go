package conformance_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// toolhiveOperator is ToolHive's own operator (thv-operator at the pinned
// release) running as a plain process against an API server of its own
// that serves ToolHive's CRDs, read from the module cache.
type toolhiveOperator struct {
	env *framework.Env
	log string // the operator's combined output
}

// toolhiveCRDDir is where the pinned module keeps its CRDs as plain YAML
// (the chart's templates/ folder holds the same CRDs wrapped for Helm).
func toolhiveCRDDir() string {
	return filepath.Join(toolhiveModule, "deploy", "charts", "operator-crds", "files", "crds")
}

// startToolHiveOperator starts a second etcd and kube-apiserver with
// ToolHive's CRDs, then ToolHive's operator against it, and stops both when
// the test ends. The operator authenticates with the server's admin
// kubeconfig, so it needs no RBAC of its own; it registers no admission
// webhooks at this release (so no serving certificates), leader election
// is off (its default) and its metrics and probe servers listen on
// loopback ports picked now. With WATCH_NAMESPACE unset it watches every
// namespace, like the chart's cluster-wide install; POD_NAMESPACE names the
// namespace it considers its own. Its environment is toolhiveEnv's.
func startToolHiveOperator(t *testing.T, namespaces []string) *toolhiveOperator {
	t.Helper()
	bin := filepath.Join(toolhiveBin, "thv-operator")
	began := time.Now()
	srv, err := framework.Start(framework.Options{CRDDir: toolhiveCRDDir()})
	if err != nil {
		t.Fatalf("starting the API server for ToolHive's operator: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping ToolHive's API server: %v", err)
		}
	})
	env, err := framework.NewEnv(srv)
	if err != nil {
		t.Fatal(err)
	}
	const ownNamespace = "toolhive-system"
	for _, ns := range append([]string{ownNamespace}, namespaces...) {
		if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s on ToolHive's server: %v", ns, err)
		}
	}
	t.Logf("ToolHive's API server %s ready with ToolHive's CRDs in %v", srv.URL, time.Since(began).Round(time.Millisecond))

	ports, err := framework.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "thv-operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	probe := fmt.Sprintf("127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		"--health-probe-bind-address="+probe,
		"--leader-elect=false",
	)
	cmd.Env = append(toolhiveEnv(t.TempDir()), "KUBECONFIG="+srv.Kubeconfig, "POD_NAMESPACE="+ownNamespace)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The operator dies with the test binary, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	op := &toolhiveOperator{env: env, log: logPath}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("ToolHive's operator still running 15s after SIGTERM; killed")
		}
		if t.Failed() {
			t.Logf("ToolHive's operator log (tail):\n%s", op.tail(60))
		}
	})

	client := &http.Client{Timeout: time.Second}
	framework.Eventually(t, 60*time.Second, func() (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, fmt.Errorf("thv-operator exited: %v\n%s", err, op.tail(40))
		default:
		}
		resp, err := client.Get("http://" + probe + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, "ToolHive's operator to answer /readyz")
	select {
	case err := <-exited:
		t.Fatalf("thv-operator exited: %v\n%s", err, op.tail(40))
	default:
	}
	t.Logf("ToolHive's operator ready in %v", time.Since(began).Round(time.Millisecond))
	return op
}

// tail returns the last n lines of the operator's output.
func (o *toolhiveOperator) tail(n int) string {
	b, err := os.ReadFile(o.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// toolhiveEnv is the environment of ToolHive code run by the differential
// test, the operator and thvcheck alike, so both derive what depends on
// the environment the same way: the test's environment without ToolHive's
// settings (TOOLHIVE_PROXY_HOST, a default Redis address, ...), without
// what says where to connect, with home as HOME and XDG_CONFIG_HOME (no
// ToolHive config file of the user's is read), and with
// TOOLHIVE_SKIP_UPDATE_CHECK=true. That keeps the operator off the
// network (its telemetry would ask for the latest release) and, as in CI,
// leaves the usage-metrics middleware out: ToolHive's operator decides
// that from its own environment, the runner from its pod's.
func toolhiveEnv(home string) []string {
	return append(environWithout("TOOLHIVE_", "WATCH_NAMESPACE=", "POD_NAMESPACE=", "KUBECONFIG=", "HOME=", "XDG_"),
		"HOME="+home, "XDG_CONFIG_HOME="+home, "TOOLHIVE_SKIP_UPDATE_CHECK=true")
}

// environWithout is the test's environment minus the variables whose
// "NAME=value" starts with one of prefixes.
func environWithout(prefixes ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
