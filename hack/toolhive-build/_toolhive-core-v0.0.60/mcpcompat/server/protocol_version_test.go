// hivekeeper's test of its overlay (protocol_version.go): the version a
// session reports is the one the server answered its initialize with, and it
// is unknown where no initialize was seen on this instance.

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	mcp "github.com/stacklok/toolhive-core/mcpcompat/mcp"
	"github.com/stacklok/toolhive-core/mcpcompat/server"
)

// hkVersionSeen is what the probe tool read from its session.
type hkVersionSeen struct {
	implements bool
	version    string
	known      bool
}

// hkVersionServer serves an MCP server with a "version" tool that records
// NegotiatedProtocolVersion of the calling session.
func hkVersionServer(t *testing.T, opts ...server.StreamableHTTPOption) (string, func() hkVersionSeen) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen *hkVersionSeen
	)
	s := server.NewMCPServer("hk", "1.0.0")
	s.AddTool(mcp.NewTool("version", mcp.WithDescription("reports the negotiated version")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			obs := &hkVersionSeen{}
			if v, ok := server.ClientSessionFromContext(ctx).(server.SessionWithProtocolVersion); ok {
				obs.implements = true
				obs.version, obs.known = v.NegotiatedProtocolVersion()
			}
			mu.Lock()
			seen = obs
			mu.Unlock()
			return mcp.NewToolResultText("ok"), nil
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s, opts...))
	t.Cleanup(ts.Close)
	return ts.URL, func() hkVersionSeen {
		mu.Lock()
		defer mu.Unlock()
		if seen == nil {
			t.Fatal("the version tool did not run")
		}
		return *seen
	}
}

// hkRPC posts one JSON-RPC message, with the MCP-Protocol-Version header
// when version is not empty, and returns the response's session ID and
// the result of the first message that carries one (nil for a notification).
func hkRPC(t *testing.T, url, sessionID, version, body string) (string, json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s: HTTP %d", body, resp.StatusCode)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
			return sid, nil
		}
	} else {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if ok && json.Unmarshal([]byte(strings.TrimSpace(data)), &msg) == nil && (msg.Result != nil || msg.Error != nil) {
				break
			}
		}
	}
	if msg.Error != nil {
		t.Fatalf("%s: JSON-RPC error %q", body, msg.Error.Message)
	}
	return sid, msg.Result
}

const hkCallVersion = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"version","arguments":{}}}`

func TestNegotiatedProtocolVersion_IsTheInitializeAnswer(t *testing.T) {
	t.Parallel()
	for _, requested := range []string{
		"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
		// Not supported: the server answers with a version of its own.
		"2024-01-01", "2099-01-01",
		// No initialize in this revision: go-sdk answers an older one.
		"2026-07-28",
	} {
		t.Run(requested, func(t *testing.T) {
			t.Parallel()
			url, seen := hkVersionServer(t)
			sid, res := hkRPC(t, url, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+
				`{"protocolVersion":"`+requested+`","capabilities":{},"clientInfo":{"name":"hk","version":"1"}}}`)
			var init struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if err := json.Unmarshal(res, &init); err != nil || init.ProtocolVersion == "" || sid == "" {
				t.Fatalf("initialize answered %s (session %q)", res, sid)
			}
			hkRPC(t, url, sid, init.ProtocolVersion, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			hkRPC(t, url, sid, init.ProtocolVersion, hkCallVersion)

			got := seen()
			if !got.implements || !got.known || got.version != init.ProtocolVersion {
				t.Fatalf("asked %s, answered %s; the session reports %+v", requested, init.ProtocolVersion, got)
			}
		})
	}
}

func TestNegotiatedProtocolVersion_UnknownWithoutInitialize(t *testing.T) {
	t.Parallel()
	url, seen := hkVersionServer(t, server.WithStateless(true))
	hkRPC(t, url, "", "2025-06-18", hkCallVersion)
	if got := seen(); !got.implements || got.known || got.version != "" {
		t.Fatalf("a stateless request reports %+v, want implements and unknown", got)
	}
}
