package conformance_test

import (
	"bufio"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// startRedis runs an in-memory Redis (thvcheck redis) that requires
// password, until the test ends, and returns its address. With tlsFiles
// (a PEM certificate and key) it speaks TLS only.
func startRedis(t *testing.T, password string, tlsFiles ...string) string {
	t.Helper()
	cmd := exec.Command(thvcheck, append([]string{"redis", password}, tlsFiles...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("thvcheck redis: %v", err)
	}
	return strings.TrimSpace(addr)
}

const toolsCallRequest = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"https://example.com"}}}`

// TestRateLimitThroughTheRunner runs ToolHive's runner as the Deployment
// of an MCPServer with Redis session storage and a shared bucket of one
// tools/call per hour: the runner reaches Redis with the password from
// the Secret (the Redis refuses clients without it), lets the first
// tools/call through to the server and answers the second with 429
// itself. Other methods are not limited. The same runner gives the
// server's StatefulSet spec.backendReplicas.
func TestRateLimitThroughTheRunner(t *testing.T) {
	env, ns := runtimeSetUp(t)
	const password = "not-a-real-redis-password"
	addr := startRedis(t, password)
	applyTemplate(t, env, ns, "testdata/runtime/rate-limit.yaml", map[string]string{"REDIS_ADDR": addr, "REDIS_PASSWORD": password})
	const name = "limited"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8093)
	if sts := waitStatefulSet(t, env, ns, name); sts.Spec.Replicas == nil || *sts.Spec.Replicas != 2 {
		t.Errorf("the runner's StatefulSet has replicas %v, want spec.backendReplicas 2", sts.Spec.Replicas)
	}
	markStatefulSetReady(t, env, ns, name)
	waitServing(t, port)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)

	// No MCP server runs (no kubelet): what passes the limit fails
	// further in, but not with 429.
	resp, body := mcpCall(t, endpoint, "", "", toolsCallRequest)
	if resp.StatusCode == http.StatusTooManyRequests {
		t.Fatalf("the first tools/call was limited: %s: %s", resp.Status, body)
	}
	t.Logf("first tools/call, past the limit: %s", resp.Status)
	resp, body = mcpCall(t, endpoint, "", "", toolsCallRequest)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "Rate limit exceeded") {
		t.Fatalf("second tools/call: %s: %s, want 429 Rate limit exceeded from the runner", resp.Status, body)
	}
	resp, body = mcpCall(t, endpoint, "", "", toolsListRequest)
	if resp.StatusCode == http.StatusTooManyRequests {
		t.Errorf("tools/list was limited: %s: %s", resp.Status, body)
	}
}
