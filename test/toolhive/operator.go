package toolhive

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/operatorenv"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
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
	// Values is a values file for ToolHive's chart; empty means its
	// defaults (ChartEnv).
	Values string
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

// StartOperator starts thv-operator as the chart of opts.Module runs it
// (ChartEnv, with opts.Values), with leader election off (one replica) and its
// metrics and probe servers on loopback ports picked now, and returns once
// it answers /readyz. It authenticates with opts.Kubeconfig, so it needs no
// RBAC of its own, and registers no admission webhooks at this release, so
// no serving certificates. With WATCH_NAMESPACE unset it watches every
// namespace, like the chart's cluster-wide install. It is stopped when the
// test ends, if Stop was not called before.
func StartOperator(t testing.TB, opts OperatorOptions) *Operator {
	t.Helper()
	bin := filepath.Join(opts.Binaries, "thv-operator")
	chart, err := ChartEnv(opts.Module, opts.Values)
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
	env, err := OperatorEnviron(home)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(append(env, chart...), "KUBECONFIG="+opts.Kubeconfig, "POD_NAMESPACE="+opts.Namespace)
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

// ChartEnv is the environment ToolHive's operator chart (deploy/charts/operator
// of module) gives the operator's container, rendered by `helm template`
// with the chart's default values, or with the values file values when it
// is not empty, as NAME=value: the operator runs as a user's install runs
// it, not with a hand-picked list. POD_NAMESPACE (a field reference) is
// left to the caller; a variable from a Secret or ConfigMap is refused, as
// the suites cannot give it.
func ChartEnv(module, values string) ([]string, error) {
	dep, err := ChartDeployment(module, values)
	if err != nil {
		return nil, err
	}
	var env []string
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.Name == "POD_NAMESPACE":
		default:
			return nil, fmt.Errorf("ToolHive's chart gives the operator %s from a reference the suites cannot resolve", e.Name)
		}
	}
	return env, nil
}

// ChartDeployment is ToolHive's operator's Deployment as its chart
// (deploy/charts/operator of module) renders it in OperatorNamespace,
// with its default values or the values file values: what a cluster
// that installed ToolHive with Helm holds, and what the plugin reads.
func ChartDeployment(module, values string) (*appsv1.Deployment, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		return nil, fmt.Errorf("hack/helm.sh: %w", err)
	}
	args := []string{"template", OperatorName, filepath.Join(module, "deploy", "charts", "operator"), "--namespace", OperatorNamespace}
	if values != "" {
		args = append(args, "-f", values)
	}
	cmd := exec.Command(strings.TrimSpace(string(out)), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	for _, doc := range strings.Split(string(rendered), "\n---") {
		var dep appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &dep); err != nil || dep.Kind != "Deployment" || len(dep.Spec.Template.Spec.Containers) == 0 {
			continue
		}
		dep.Namespace = OperatorNamespace
		// What helm install adds, and helm template does not.
		dep.Annotations = map[string]string{"meta.helm.sh/release-name": OperatorName, "meta.helm.sh/release-namespace": OperatorNamespace}
		return &dep, nil
	}
	return nil, fmt.Errorf("ToolHive's chart (%s) renders no Deployment", module)
}

// chartSetting returns a variable of ChartEnv's output.
func chartSetting(module, values, name string) (string, error) {
	env, err := ChartEnv(module, values)
	if err != nil {
		return "", err
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("ToolHive's chart at %s sets no %s", module, name)
}

// Images returns the runner and vMCP images the chart gives the operator,
// the ones hivekeeper must be given to write the same Deployments.
func Images(module string) (runner, vmcp string, err error) {
	if runner, err = chartSetting(module, "", "TOOLHIVE_RUNNER_IMAGE"); err != nil {
		return "", "", err
	}
	vmcp, err = chartSetting(module, "", "VMCP_IMAGE")
	return runner, vmcp, err
}

// RegistryAPIImage returns the registry API image the chart gives the
// operator (TOOLHIVE_REGISTRY_API_IMAGE), the one hivekeeper must be given
// to write the same MCPRegistry Deployments.
func RegistryAPIImage(module string) (string, error) {
	return chartSetting(module, "", "TOOLHIVE_REGISTRY_API_IMAGE")
}

// Environ is the environment of ToolHive code the suites run as plain
// processes (the runner, vmcp, thvcheck): the test's environment without
// ToolHive's settings (TOOLHIVE_PROXY_HOST, a default Redis address, ...),
// without what says where to connect, with home as HOME and
// XDG_CONFIG_HOME (no ToolHive config file of the user's is read), and
// with TOOLHIVE_SKIP_UPDATE_CHECK=true, which keeps a runner's usage
// metrics from leaving this machine.
func Environ(home string) []string {
	return append(baseEnviron(home), "TOOLHIVE_SKIP_UPDATE_CHECK=true")
}

// OperatorEnviron is what ToolHive's operator runs with before its
// chart's settings: baseEnviron without any CI variable (a pod has none,
// and one would turn the operator's usage metrics off, unlike an
// install), and with every HTTP(S) request to anything but the loopback
// sent to a closed loopback port: its update check, on by default as
// installed, fails at once instead of leaving this machine.
func OperatorEnviron(home string) ([]string, error) {
	ports, err := framework.FreePorts(1)
	if err != nil {
		return nil, err
	}
	blackhole := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	var out []string
	for _, kv := range baseEnviron(home) {
		name, _, _ := strings.Cut(kv, "=")
		if _, known := operatorenv.Lookup(name); known && name != "GOMEMLIMIT" && name != "GOGC" && name != "HOME" {
			continue
		}
		if strings.EqualFold(name, "HTTP_PROXY") || strings.EqualFold(name, "HTTPS_PROXY") || strings.EqualFold(name, "NO_PROXY") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HTTP_PROXY="+blackhole, "HTTPS_PROXY="+blackhole, "NO_PROXY=127.0.0.1,localhost"), nil
}

func baseEnviron(home string) []string {
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
	return append(out, "HOME="+home, "XDG_CONFIG_HOME="+home)
}

// ChartFlags are the hivekeeper flags that keep the operator-wide settings
// ToolHive's chart gives its operator (ChartEnv with values, mapped by
// operatorenv.Flags), with the release written for the module's and the
// operator's namespace (OperatorNamespace) for its instance id, as
// preflight gives them.
func ChartFlags(module, values string) ([]string, error) {
	env, err := ChartEnv(module, values)
	if err != nil {
		return nil, err
	}
	flags, _, err := operatorenv.Flags(env)
	if err != nil {
		return nil, err
	}
	flags = append(flags, "--toolhive-release="+release.Target(ModuleVersion(module)).Version,
		"--toolhive-instance-id-namespace="+OperatorNamespace)
	slices.Sort(flags)
	return flags, nil
}

// ModuleVersion is the release of a module folder of the Go module cache
// (.../toolhive@v0.66.0), "" when the folder names none.
func ModuleVersion(module string) string {
	_, v, _ := strings.Cut(filepath.Base(module), "@")
	return v
}

// Options are the app.Options hivekeeper's flags (ChartFlags) set that the
// suites run it with: images, listen address, release and usage metrics,
// with the installation's instance id resolved on kube as the controller
// resolves it at start (app.ResolveUsageMetrics).
func Options(ctx context.Context, kube kubernetes.Interface, flags []string) (app.Options, error) {
	r, err := release.Lookup(FlagValue(flags, "--toolhive-release"))
	if err != nil {
		return app.Options{}, err
	}
	usage, err := app.ResolveUsageMetrics(ctx, kube, r, wiring.UsageMetrics{
		Disabled:        FlagValue(flags, "--toolhive-usage-metrics") == "false",
		SkipUpdateCheck: FlagValue(flags, "--toolhive-skip-update-check") == "true",
	}, cmp.Or(FlagValue(flags, "--toolhive-instance-id-namespace"), app.DefaultInstanceIDNamespace))
	if err != nil {
		return app.Options{}, err
	}
	return app.Options{
		RunnerImage: FlagValue(flags, "--runner-image"), VMCPImage: FlagValue(flags, "--vmcp-image"),
		RegistryAPIImage: FlagValue(flags, "--registry-api-image"), ProxyHost: FlagValue(flags, "--proxy-host"),
		Release: r, UsageMetrics: usage,
	}, nil
}

// InstanceID is the installation id the suites store where ToolHive's
// operator runs (SeedInstanceID) on every API server they compare, so
// that operators on different servers give their workloads the same one.
const InstanceID = "00000000-0000-4000-8000-0000000000ad"

// SeedInstanceID stores InstanceID as ToolHive's operator stores an
// installation's id, in OperatorNamespace (created if missing). Seeding a
// server that holds it already is a no-op; one holding another id is an
// error.
func SeedInstanceID(ctx context.Context, kube kubernetes.Interface) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	cms := kube.CoreV1().ConfigMaps(OperatorNamespace)
	_, err = cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: app.InstanceIDConfigMap, Namespace: OperatorNamespace},
		Data:       map[string]string{app.InstanceIDKey: `{"instance_id":"` + InstanceID + `","last_update_check":"0001-01-01T00:00:00Z","latest_version":""}`},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cm, err := cms.Get(ctx, app.InstanceIDConfigMap, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if id := app.StoredInstanceID(cm); id != InstanceID {
		return fmt.Errorf("%s/%s holds the instance id %q, not the suites' %q", OperatorNamespace, app.InstanceIDConfigMap, id, InstanceID)
	}
	return nil
}

// FlagValue returns the value of --name=value in flags, "" when absent.
func FlagValue(flags []string, name string) string {
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}

// CRDChart renders ToolHive's CRD chart at module (its templates, with
// the chart's defaults) into dir/crds.yaml, the CRDs as a `helm install`
// or `helm upgrade` of that chart applies them, and returns dir.
func CRDChart(module, dir string) (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		return "", fmt.Errorf("hack/helm.sh: %w", err)
	}
	args := []string{"template", "toolhive-operator-crds", filepath.Join(module, "deploy", "charts", "operator-crds")}
	cmd := exec.Command(strings.TrimSpace(string(out)), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "crds.yaml"), rendered, 0o644)
}
