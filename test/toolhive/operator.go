package toolhive

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// OperatorOptions say where and how thv-operator runs.
type OperatorOptions struct {
	// Binaries is the folder holding thv-operator ($BinariesEnv).
	Binaries string
	// Module is the pinned module's folder: the chart's values are read
	// from there.
	Module string
	// Kubeconfig is the identity the operator uses. Give it a user of
	// its own to tell its requests apart in an audit log.
	Kubeconfig string
	// Namespace is the operator's own namespace (POD_NAMESPACE); it must
	// exist.
	Namespace string
	// Dir holds the operator's log and its HOME.
	Dir string
}

// Operator is a running thv-operator.
type Operator struct {
	// Log is the file holding its combined output.
	Log string
	// MetricsURL is its controller-runtime /metrics, plain HTTP.
	MetricsURL string

	cmd    *exec.Cmd
	exited chan error
	done   bool
}

// StartOperator starts thv-operator as the chart at the pinned release
// runs it (ChartEnv), with leader election off (one replica) and its
// metrics and probe servers on loopback ports picked now, and returns once
// it answers /readyz. It authenticates with opts.Kubeconfig, so it needs no
// RBAC of its own, and registers no admission webhooks at this release, so
// no serving certificates. With WATCH_NAMESPACE unset it watches every
// namespace, like the chart's cluster-wide install. It is stopped when the
// test ends, if Stop was not called before.
func StartOperator(t testing.TB, opts OperatorOptions) *Operator {
	t.Helper()
	bin := filepath.Join(opts.Binaries, "thv-operator")
	chart, err := ChartEnv(opts.Module)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := framework.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.CreateTemp(opts.Dir, "thv-operator-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	home, err := os.MkdirTemp(opts.Dir, "thv-operator-home-")
	if err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf("127.0.0.1:%d", ports[1])
	cmd := exec.Command(bin,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		"--health-probe-bind-address="+probe,
		"--leader-elect=false",
	)
	cmd.Env = append(append(Environ(home), chart...), "KUBECONFIG="+opts.Kubeconfig, "POD_NAMESPACE="+opts.Namespace)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The operator dies with the test binary, even when that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	op := &Operator{Log: logFile.Name(), MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]), cmd: cmd, exited: make(chan error, 1)}
	go func() { op.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if !op.done {
			op.Stop(t)
		}
		if t.Failed() {
			t.Logf("ToolHive's operator log (tail):\n%s", op.Tail(60))
		}
	})

	WaitReady(t, "ToolHive's operator", probe, op.Exited)
	if err := op.Exited(); err != nil {
		t.Fatal(err)
	}
	return op
}

// WaitReady waits until a controller process answers 200 on
// http://<addr>/readyz (its caches synced), failing the test when exited
// reports it gone.
func WaitReady(t testing.TB, who, addr string, exited func() error) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		if err := exited(); err != nil {
			return false, err
		}
		resp, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, "%s to answer /readyz", who)
}

// Exited returns an error when the operator is no longer running, with
// the tail of its log.
func (o *Operator) Exited() error {
	select {
	case err := <-o.exited:
		o.exited <- err
		return fmt.Errorf("thv-operator exited: %v\n%s", err, o.Tail(40))
	default:
		return nil
	}
}

// Stop sends SIGTERM, as a Deployment scaled to zero would, and waits for
// the exit; after 15 seconds it kills the operator and fails the test.
func (o *Operator) Stop(t testing.TB) {
	t.Helper()
	o.done = true
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-o.exited:
		o.exited <- err
	case <-time.After(15 * time.Second):
		_ = o.cmd.Process.Kill()
		o.exited <- <-o.exited
		t.Errorf("ToolHive's operator still running 15s after SIGTERM; killed")
	}
}

// Tail returns the last n lines of the operator's output.
func (o *Operator) Tail(n int) string { return Tail(o.Log, n) }

// chartValues are the values of the pinned release's operator chart
// (deploy/charts/operator/values.yaml) that its Deployment template turns
// into the operator's environment.
type chartValues struct {
	Operator struct {
		Features struct {
			Experimental           bool `json:"experimental"`
			StorageVersionMigrator bool `json:"storageVersionMigrator"`
		} `json:"features"`
		ToolhiveRunnerImage string `json:"toolhiveRunnerImage"`
		VMCPImage           string `json:"vmcpImage"`
		ProxyHost           string `json:"proxyHost"`
		GC                  struct {
			GOMEMLIMIT string `json:"gomemlimit"`
			GOGC       any    `json:"gogc"`
		} `json:"gc"`
	} `json:"operator"`
	RegistryAPI struct {
		Image string `json:"image"`
	} `json:"registryAPI"`
}

// ChartEnv is the environment the pinned release's chart gives the
// operator with its default values (templates/deployment.yaml), read from
// the chart's values.yaml, but POD_NAMESPACE (the caller's) and the
// settings of values left empty by default (image pull secrets, a default
// Redis, a namespace-scoped install).
func ChartEnv(module string) ([]string, error) {
	file := filepath.Join(module, "deploy", "charts", "operator", "values.yaml")
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var v chartValues
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	op := v.Operator
	if op.ToolhiveRunnerImage == "" || op.VMCPImage == "" || op.ProxyHost == "" {
		return nil, fmt.Errorf("%s: no operator.toolhiveRunnerImage, vmcpImage or proxyHost", file)
	}
	return []string{
		"GOMEMLIMIT=" + op.GC.GOMEMLIMIT,
		fmt.Sprintf("GOGC=%v", op.GC.GOGC),
		"UNSTRUCTURED_LOGS=false",
		"TOOLHIVE_USE_CONFIGMAP=true",
		fmt.Sprintf("ENABLE_EXPERIMENTAL_FEATURES=%t", op.Features.Experimental),
		fmt.Sprintf("TOOLHIVE_ENABLE_STORAGE_VERSION_MIGRATOR=%t", op.Features.StorageVersionMigrator),
		"TOOLHIVE_RUNNER_IMAGE=" + op.ToolhiveRunnerImage,
		"VMCP_IMAGE=" + op.VMCPImage,
		"TOOLHIVE_PROXY_HOST=" + op.ProxyHost,
		"TOOLHIVE_REGISTRY_API_IMAGE=" + v.RegistryAPI.Image,
	}, nil
}

// Images returns the runner and vMCP images the chart gives the operator,
// the ones hivekeeper must be given to write the same Deployments.
func Images(module string) (runner, vmcp string, err error) {
	env, err := ChartEnv(module)
	if err != nil {
		return "", "", err
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TOOLHIVE_RUNNER_IMAGE="); ok {
			runner = v
		}
		if v, ok := strings.CutPrefix(kv, "VMCP_IMAGE="); ok {
			vmcp = v
		}
	}
	return runner, vmcp, nil
}

// RegistryAPIImage returns the registry API image the chart gives the
// operator (TOOLHIVE_REGISTRY_API_IMAGE), the one hivekeeper must be given
// to write the same MCPRegistry Deployments.
func RegistryAPIImage(module string) (string, error) {
	env, err := ChartEnv(module)
	if err != nil {
		return "", err
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TOOLHIVE_REGISTRY_API_IMAGE="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("the chart of %s sets no registry API image", module)
}

// Environ is the environment of ToolHive code run by the suites (the
// operator, thvcheck) before the chart's settings: the test's environment
// without ToolHive's settings (TOOLHIVE_PROXY_HOST, a default Redis
// address, ...), without what says where to connect, with home as HOME and
// XDG_CONFIG_HOME (no ToolHive config file of the user's is read), and
// with TOOLHIVE_SKIP_UPDATE_CHECK=true. That keeps the operator off the
// network (its telemetry would ask for the latest release) and, as in CI,
// leaves the usage-metrics middleware out: ToolHive's operator decides
// that from its own environment, the runner from its pod's.
func Environ(home string) []string {
	var out []string
	for _, kv := range os.Environ() {
		drop := false
		for _, p := range []string{"TOOLHIVE_", "WATCH_NAMESPACE=", "POD_NAMESPACE=", "KUBECONFIG=", "HOME=", "XDG_"} {
			drop = drop || strings.HasPrefix(kv, p)
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return append(out, "HOME="+home, "XDG_CONFIG_HOME="+home, "TOOLHIVE_SKIP_UPDATE_CHECK=true")
}
