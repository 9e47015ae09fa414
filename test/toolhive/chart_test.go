package toolhive

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/operatorenv"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// ChartEnv renders ToolHive's own chart: its defaults give the images and
// proxy host, and a production values file reaches every operator-wide
// setting, each mapped to hivekeeper's flag.
func TestChartEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("renders ToolHive's chart with helm (hack/helm.sh builds it)")
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(filepath.Join(root, "hack", "helm.sh")).Run(); err != nil {
		framework.Missing(t, fmt.Sprintf("no helm: %v", err))
	}
	module, err := ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := ChartFlags(module, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--proxy-host=0.0.0.0", "--toolhive-usage-metrics=true", "--runner-image=ghcr.io/stacklok/toolhive/proxyrunner:"} {
		if !strings.Contains(strings.Join(defaults, " "), want) {
			t.Errorf("chart defaults: no %s in %v", want, defaults)
		}
	}
	prod, err := ChartFlags(module, filepath.Join("testdata", "production-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(prod, " ")
	for _, want := range []string{"--namespaces=team-a,team-b", "--default-image-pull-secrets=org-registry,regcred",
		"--default-redis-addr=redis.cache.svc.cluster.local:6379", "--default-redis-secret-name=redis-auth", "--default-redis-secret-key=password",
		"--default-redis-tls-enabled", "--default-redis-tls-ca-secret-name=redis-ca", "--default-redis-tls-ca-secret-key=ca.crt",
		"--registry-api-image=registry.example.com/mirror/thv-registry-api:v1.5.3"} {
		if !strings.Contains(got, want) {
			t.Errorf("production values: no %s in %s", want, got)
		}
	}
}

// The chart values operatorenv.Values gives for a production install of
// ToolHive's operator make hivekeeper's own chart render every flag that
// environment maps to: what `kubectl hivekeeper preflight` prints is a
// values file that keeps each operator-wide setting.
func TestChartValuesRenderTheFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("renders both charts with helm (hack/helm.sh builds it)")
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm, err := exec.Command(filepath.Join(root, "hack", "helm.sh")).Output()
	if err != nil {
		framework.Missing(t, fmt.Sprintf("no helm: %v", err))
	}
	module, err := ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	flags, err := ChartFlags(module, filepath.Join("testdata", "production-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values, err := operatorenv.Values(flags)
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(strings.TrimSpace(string(helm)), "template", "hivekeeper", filepath.Join(root, "deploy", "charts", "hivekeeper"),
		"--namespace", "hivekeeper-system", "-f", file, "--show-only", "templates/deployment.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(out, &dep); err != nil {
		t.Fatal(err)
	}
	args := dep.Spec.Template.Spec.Containers[0].Args
	for _, f := range flags {
		if !slices.Contains(args, f) {
			t.Errorf("values %s render no %s; the chart's args are %v", b, f, args)
		}
	}
}
