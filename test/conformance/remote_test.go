package conformance_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// TestRemoteProxyEndToEnd runs ToolHive's runner as an MCPRemoteProxy's
// Deployment would (its args, env and RunConfig exactly as hivekeeper
// wrote them) in front of a remote MCP server the test serves (see
// remoteMCP for its address), with OIDC from the test's issuer:
//
//   - an authenticated initialize and tools/list reach the remote server
//     at the remote URL's own path, and the remote server's answers (its
//     server name, its tool) come back through ToolHive's proxy;
//   - every token of refusals is refused with 401 and none of those
//     requests reaches the remote server.
func TestRemoteProxyEndToEnd(t *testing.T) {
	env, ns := runtimeSetUp(t)
	iss := startIssuer(t)
	remote := startRemoteMCP(t, "/team/mcp")
	applyTemplate(t, env, ns, "testdata/runtime/remote-proxy.yaml", map[string]string{"ISSUER": iss.URL, "REMOTE_URL": remote.StandIn})
	const name, audience = "upstream", "upstream-api"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8090, remote.StandIn, remote.URL)
	waitServing(t, port)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	token := iss.token(t, iss.claims(audience))

	resp, body := mcpCall(t, endpoint, token, "", initializeRequest)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), remoteServerName) {
		t.Fatalf("initialize through the proxy: %s, want 200 with the remote server's name: %s", resp.Status, body)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize through the proxy: no Mcp-Session-Id in the answer: %v", resp.Header)
	}
	if resp, body := mcpCall(t, endpoint, token, session, initializedNotification); resp.StatusCode >= 300 {
		t.Fatalf("initialized notification through the proxy: %s: %s", resp.Status, body)
	}
	resp, body = mcpCall(t, endpoint, token, session, toolsListRequest)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), remoteToolName) {
		t.Fatalf("tools/list through the proxy: %s, want 200 with the remote tool: %s", resp.Status, body)
	}

	seen := remote.requests()
	methods := map[string]remoteRequest{}
	for _, r := range seen {
		methods[r.Method] = r
		if r.Path != "/team/mcp" {
			t.Errorf("the remote server was reached at %q, want the remote URL's path /team/mcp", r.Path)
		}
	}
	if _, ok := methods["initialize"]; !ok {
		t.Errorf("initialize never reached the remote server: %+v", seen)
	}
	if r, ok := methods["tools/list"]; !ok || r.Session != remoteSession {
		t.Errorf("tools/list did not reach the remote server in its session %q: %+v", remoteSession, seen)
	}
	// Not hivekeeper's to decide, but worth seeing: without token exchange
	// configured, ToolHive passes the client's own token on.
	t.Logf("the remote server saw %d requests; the client's bearer token was passed on to it: %t",
		len(seen), methods["initialize"].Authorization == "Bearer "+token)

	expectRefused(t, endpoint, iss, refusals(t, iss, audience))
	if n := len(remote.requests()); n != len(seen) {
		t.Errorf("%d refused requests reached the remote server", n-len(seen))
	}
}
