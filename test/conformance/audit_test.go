package conformance_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// auditEvent is the part of an audit log line of ToolHive's runner the
// test reads: a JSON object at level AUDIT (toolhive-core's audit logger).
type auditEvent struct {
	Level   string `json:"level"`
	Type    string `json:"type"`
	Outcome string `json:"outcome"`
	AuditID string `json:"audit_id"`
}

// auditEvents parses the audit lines out of a runner's output.
func auditEvents(out string) []auditEvent {
	var evs []auditEvent
	for _, line := range strings.Split(out, "\n") {
		var ev auditEvent
		if json.Unmarshal([]byte(strings.TrimSpace(line)), &ev) == nil && ev.Level == "AUDIT" {
			evs = append(evs, ev)
		}
	}
	return evs
}

// TestAuditThroughTheRunner runs ToolHive's runner as the Deployments of
// two MCPRemoteProxies run it (args, env and RunConfig as hivekeeper wrote
// them), in front of the test's MCP server (see remoteMCP for its
// address): the one with audit.enabled
// logs an audit event for each MCP request it carries, tools/list
// included, with the outcome; the one without logs none for the same
// requests.
func TestAuditThroughTheRunner(t *testing.T) {
	env, ns := runtimeSetUp(t)
	remote := startRemoteMCP(t, "/audited/mcp")
	applyTemplate(t, env, ns, "testdata/runtime/audit.yaml", map[string]string{"REMOTE_URL": remote.StandIn})

	calls := func(port int) {
		t.Helper()
		endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		resp, body := mcpCall(t, endpoint, "", "", initializeRequest)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), remoteServerName) {
			t.Fatalf("initialize through the proxy: %s: %s", resp.Status, body)
		}
		session := resp.Header.Get("Mcp-Session-Id")
		if resp, body := mcpCall(t, endpoint, "", session, initializedNotification); resp.StatusCode >= 300 {
			t.Fatalf("initialized notification through the proxy: %s: %s", resp.Status, body)
		}
		resp, body = mcpCall(t, endpoint, "", session, toolsListRequest)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), remoteToolName) {
			t.Fatalf("tools/list through the proxy: %s: %s", resp.Status, body)
		}
	}

	port, out := startRunnerOutput(t, env, ns, "audited", naming.RunConfigName("audited"), 8091, remote.StandIn, remote.URL)
	waitServing(t, port)
	calls(port)
	var evs []auditEvent
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		evs = auditEvents(out.String())
		for _, ev := range evs {
			if ev.Type == "mcp_tools_list" && ev.Outcome == "success" && ev.AuditID != "" {
				return true, nil
			}
		}
		return false, nil
	}, "an audit event for tools/list in the runner's output")
	types := map[string]bool{}
	for _, ev := range evs {
		types[ev.Type] = true
	}
	if !types["mcp_initialize"] {
		t.Errorf("no audit event for initialize: %+v", evs)
	}
	t.Logf("the audited runner logged %d audit events: %+v", len(evs), evs)

	port, out = startRunnerOutput(t, env, ns, "unaudited", naming.RunConfigName("unaudited"), 8092, remote.StandIn, remote.URL)
	waitServing(t, port)
	calls(port)
	time.Sleep(time.Second)
	if evs := auditEvents(out.String()); len(evs) != 0 {
		t.Errorf("the runner without audit logged audit events: %+v", evs)
	}
}
