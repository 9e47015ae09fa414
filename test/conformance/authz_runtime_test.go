package conformance_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// TestRemoteProxyCedarDenies: ToolHive's runner, run on the RunConfig
// hivekeeper wrote for an MCPRemoteProxy with an MCPAuthzConfig, lets an
// authenticated caller call the one tool the Cedar policy permits, refuses
// a call of the other with 403 before it reaches the remote server, and
// lists only the permitted tool.
func TestRemoteProxyCedarDenies(t *testing.T) {
	cedarDenies(t, "testdata/runtime/remote-proxy-cedar.yaml")
}

// TestRemoteProxyCedarFromConfigMap: the same, with the policy in a
// runner authorization file of a ConfigMap (authzConfig type configMap),
// as hivekeeper writes it into the RunConfig.
func TestRemoteProxyCedarFromConfigMap(t *testing.T) {
	cedarDenies(t, "testdata/runtime/remote-proxy-cedar-configmap.yaml")
}

func cedarDenies(t *testing.T, manifest string) {
	env, ns := runtimeSetUp(t)
	iss := startIssuer(t)
	remote := startRemoteMCP(t, "/mcp")
	applyTemplate(t, env, ns, manifest, map[string]string{"ISSUER": iss.URL, "REMOTE_URL": remote.StandIn})
	const name = "guarded"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8093, remote.StandIn, remote.URL)
	waitServing(t, port)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	token := iss.token(t, iss.claims("guarded-api"))

	resp, body := mcpCall(t, endpoint, token, "", initializeRequest)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize through the proxy: %s: %s", resp.Status, body)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	if resp, body := mcpCall(t, endpoint, token, session, initializedNotification); resp.StatusCode >= 300 {
		t.Fatalf("initialized notification through the proxy: %s: %s", resp.Status, body)
	}
	call := func(tool string) (*http.Response, []byte) {
		return mcpCall(t, endpoint, token, session,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`)
	}
	calls := func() (n int) {
		for _, r := range remote.requests() {
			if r.Method == "tools/call" {
				n++
			}
		}
		return n
	}

	if resp, body := call(remoteOtherTool); resp.StatusCode != http.StatusForbidden {
		t.Errorf("calling %s, which no policy permits: %s, want 403: %s", remoteOtherTool, resp.Status, body)
	}
	if n := calls(); n != 0 {
		t.Errorf("the denied call reached the remote server (%d tools/call)", n)
	}
	if resp, body := call(remoteToolName); resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized {
		t.Errorf("calling %s, which the policy permits: %s: %s", remoteToolName, resp.Status, body)
	}
	if n := calls(); n != 1 {
		t.Errorf("the permitted call reached the remote server %d times, want once", n)
	}

	resp, body = mcpCall(t, endpoint, token, session, toolsListRequest)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), remoteToolName) {
		t.Fatalf("tools/list through the proxy: %s: %s", resp.Status, body)
	}
	listed := slices.ContainsFunc([]string{remoteOtherTool}, func(tool string) bool { return strings.Contains(string(body), `"`+tool+`"`) })
	if listed {
		t.Errorf("tools/list shows %s, which the caller may not call: %s", remoteOtherTool, body)
	}
}
