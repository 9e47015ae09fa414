package conformance_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestVMCPAggregatesEntry runs ToolHive's `vmcp serve` on the config
// hivekeeper generated for a group of one MCPServer and one
// MCPServerEntry: the entry is a backend at its remote URL (a stand-in,
// since an entry may not name loopback, replaced by the test's server),
// aggregated with the MCPServer under prefix conflict resolution, and
// every request vmcp sends it carries the entry's forwarded headers (a
// literal and one from a Secret, from ToolHive's variables) and the API
// key of the entry's own MCPExternalAuthConfig.
func TestVMCPAggregatesEntry(t *testing.T) {
	env, ns := runtimeSetUp(t)
	local, near := startRemoteMCP(t, "/mcp"), startRemoteMCP(t, "/entry")
	applyTemplate(t, env, ns, "testdata/runtime/vmcp-entry.yaml", map[string]string{"ENTRY_URL": near.StandIn})
	const name = "entry-vmcp"
	localURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:8080/mcp", naming.MCPServerServiceName("local"), ns)
	// The entry joins once its checks pass (its group Ready); the pod's
	// env must be the one of that config.
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(name))
		c, _ := deploymentContainer(t, env, ns, name, naming.VMCPContainerName)
		return strings.Contains(cm.Data[naming.VMCPConfigKey], near.StandIn) &&
			slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "TOOLHIVE_HEADER_FORWARD_NEAR" }), nil
	}, "the entry in config.yaml and its headers in the pod")
	port := startVMCP(t, env, ns, name, localURL, local.URL, near.StandIn, near.URL)
	waitServing(t, port)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)

	_, names := vmcpToolNames(t, endpoint)
	want := []string{"local_" + remoteOtherTool, "local_" + remoteToolName, "near_" + remoteOtherTool, "near_" + remoteToolName}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools/list through vmcp: %v, want %v", names, want)
	}
	seen := near.requests()
	if !slices.ContainsFunc(seen, func(q remoteRequest) bool { return q.Method == "tools/list" }) {
		t.Fatalf("the entry's server was never asked for its tools: %+v", seen)
	}
	for _, q := range seen {
		for header, value := range map[string]string{"X-Tenant": "team-a", "X-Trace": "conformance-trace", "X-Api-Key": "conformance-api-key"} {
			if got := q.Header.Get(header); got != value {
				t.Errorf("%s request to the entry: %s = %q, want %q", q.Method, header, got, value)
			}
		}
	}

	// A change of the entry's own MCPExternalAuthConfig is no change of
	// the entry or the vMCP: it reaches config.yaml through the entry.
	cfg, err := env.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(ns).Get(context.Background(), "entry-key", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Spec.HeaderInjection.HeaderName = "X-Other-Key"
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(ns).Update(context.Background(), cfg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(name))
		return strings.Contains(cm.Data[naming.VMCPConfigKey], "headerName: X-Other-Key"), nil
	}, "the entry's changed MCPExternalAuthConfig in config.yaml")
}
