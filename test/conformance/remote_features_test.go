package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// TestRemoteProxyToolFilter: an MCPToolConfig referenced by an
// MCPRemoteProxy keeps one of the remote server's two tools, and
// ToolHive's runner, run on what hivekeeper wrote, lists only that one
// although the remote server answered tools/list with both.
func TestRemoteProxyToolFilter(t *testing.T) {
	env, ns := runtimeSetUp(t)
	remote := startRemoteMCP(t, "/mcp")
	applyTemplate(t, env, ns, "testdata/runtime/remote-proxy-tools.yaml", map[string]string{"REMOTE_URL": remote.StandIn})
	const name = "filtered"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8091, remote.StandIn, remote.URL)
	waitServing(t, port)

	tools := listToolsThroughProxy(t, fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
	if !slices.Equal(tools, []string{remoteToolName}) {
		t.Errorf("tools/list through the proxy: %v, want only %s (the filter hides %s)", tools, remoteToolName, remoteOtherTool)
	}
	if !slices.ContainsFunc(remote.requests(), func(r remoteRequest) bool { return r.Method == "tools/list" }) {
		t.Errorf("tools/list never reached the remote server, so nothing was filtered: %+v", remote.requests())
	}
}

// TestRemoteProxyForwardsHeaders: every request ToolHive's runner sends
// to the remote server carries the literal header and the header whose
// value is a key of the test's Secret, which the runner got only through
// the secretKeyRef variable of the Deployment's container (resolved from
// the Secret as the kubelet would). The value is nowhere in the RunConfig.
func TestRemoteProxyForwardsHeaders(t *testing.T) {
	env, ns := runtimeSetUp(t)
	remote := startRemoteMCP(t, "/mcp")
	applyTemplate(t, env, ns, "testdata/runtime/remote-proxy-headers.yaml", map[string]string{"REMOTE_URL": remote.StandIn})
	const name, secretValue = "with-headers", "not-a-real-api-key-7f3a"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8092, remote.StandIn, remote.URL)
	waitServing(t, port)

	listToolsThroughProxy(t, fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
	seen := remote.requests()
	if len(seen) < 2 {
		t.Fatalf("the remote server saw %d requests, want initialize and tools/list at least", len(seen))
	}
	for _, r := range seen {
		if got := r.Header.Get("X-Tenant-ID"); got != "team-a" {
			t.Errorf("%s reached the remote server with X-Tenant-ID %q, want the literal header team-a", r.Method, got)
		}
		if got := r.Header.Get("X-API-Key"); got != secretValue {
			t.Errorf("%s reached the remote server with X-API-Key %q, want the Secret's value", r.Method, got)
		}
	}
	cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), naming.RunConfigName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data[schema.Key], secretValue) {
		t.Errorf("the Secret's value reached the RunConfig ConfigMap:\n%s", cm.Data[schema.Key])
	}
}

// listToolsThroughProxy initializes an MCP session through the proxy at
// endpoint, without a token, and returns the names tools/list answers.
func listToolsThroughProxy(t *testing.T, endpoint string) []string {
	t.Helper()
	resp, body := mcpCall(t, endpoint, "", "", initializeRequest)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), remoteServerName) {
		t.Fatalf("initialize through the proxy: %s, want 200 with the remote server's name: %s", resp.Status, body)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	if resp, body := mcpCall(t, endpoint, "", session, initializedNotification); resp.StatusCode >= 300 {
		t.Fatalf("initialized notification through the proxy: %s: %s", resp.Status, body)
	}
	resp, body = mcpCall(t, endpoint, "", session, toolsListRequest)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list through the proxy: %s: %s", resp.Status, body)
	}
	var answer struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(jsonRPCBody(body), &answer); err != nil {
		t.Fatalf("tools/list through the proxy: %v: %s", err, body)
	}
	var names []string
	for _, tool := range answer.Result.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// jsonRPCBody returns the JSON-RPC message of an answer, which is either
// JSON or a server-sent event stream whose data line carries it.
func jsonRPCBody(body []byte) []byte {
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '{' {
		return b
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
			return bytes.TrimSpace(data)
		}
	}
	return body
}
