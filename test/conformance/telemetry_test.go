package conformance_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestRunnerExportsTelemetry starts ToolHive's runner on an MCPServer
// whose MCPTelemetryConfig names an OTLP collector the test runs on
// loopback and Prometheus metrics. The runner must serve the metrics under
// the reference's service name and the server's namespace (the RunConfig
// and the proxy container's OTEL_RESOURCE_ATTRIBUTES), and send the trace
// of an MCP request to the collector with the config's header.
func TestRunnerExportsTelemetry(t *testing.T) {
	env, ns := runtimeSetUp(t)
	collector := &otlpCollector{}
	srv := httptest.NewServer(collector)
	t.Cleanup(srv.Close)
	applyTemplate(t, env, ns, "testdata/runtime/telemetry.yaml", map[string]string{"COLLECTOR": srv.URL})
	const name = "traced"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8091)
	waitStatefulSet(t, env, ns, name)
	markStatefulSetReady(t, env, ns, name)
	waitServing(t, port)

	// Prometheus: the runner also serves /metrics on its proxy port while
	// metricsOnTransportPort is left unset.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`service_name="traced-fetch"`, `service_namespace="` + ns + `"`} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("/metrics: %s, want %s in:\n%s", resp.Status, want, body)
		}
	}

	// An MCP request makes a span whatever the (absent) backend answers.
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"conformance","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	framework.Eventually(t, 60*time.Second, func() (bool, error) {
		return collector.received("/v1/traces") != nil, nil
	}, "a trace export at the loopback collector")
	if h := collector.received("/v1/traces"); h.Get("X-Tenant") != "team-a" {
		t.Errorf("trace export headers %v, want X-Tenant: team-a", h)
	}
}

// otlpCollector records the OTLP/HTTP exports it receives.
type otlpCollector struct {
	mu      sync.Mutex
	headers map[string]http.Header // by path
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	c.mu.Lock()
	if c.headers == nil {
		c.headers = map[string]http.Header{}
	}
	c.headers[r.URL.Path] = r.Header.Clone()
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *otlpCollector) received(path string) http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.headers[path]
}
