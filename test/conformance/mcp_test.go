package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// JSON-RPC requests of the MCP streamable HTTP transport the tests send.
const (
	initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"hivekeeper-conformance","version":"1.0.0"}}}`
	initializedNotification = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	toolsListRequest        = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
)

// mcpCall POSTs one JSON-RPC message to an MCP streamable HTTP endpoint,
// with a bearer token and a session id when they are not empty, and
// returns the response with its body read.
func mcpCall(t *testing.T, endpoint, token, session, message string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewBufferString(message))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", endpoint, err)
	}
	return resp, body
}

// remoteMCP is a small MCP server of the test's own, speaking streamable
// HTTP with JSON answers on one path: initialize, the initialized
// notification and tools/list (two tools), with answers a test can
// recognise. It records what reached it.
//
// It listens on loopback only. An MCPRemoteProxy may never name a
// loopback URL (hivekeeper refuses it, as ToolHive's operator does,
// allowPrivateEndpoint or not), so manifests name StandIn, a public URL
// with the same path, and the test starts the runner with the RunConfig's
// remote_url pointed at URL instead (startRunner's replacements).
type remoteMCP struct {
	URL     string // the endpoint, path included
	StandIn string // what manifests name as the remote URL

	mu   sync.Mutex
	seen []remoteRequest
}

// remoteRequest is one JSON-RPC request as the remote server saw it.
type remoteRequest struct {
	Path, Method, Session string
	// Authorization is the header the proxy sent on, if any.
	Authorization string
	// Header is every header of the request.
	Header http.Header
	// Tool is the tool a tools/call names.
	Tool string
}

const (
	remoteServerName = "hivekeeper-conformance-remote"
	remoteToolName   = "conformance_echo"
	remoteSession    = "remote-session-1"
	// remoteStandIn is the origin of the remote URL manifests name.
	remoteStandIn = "https://mcp.remote.example"
	// remoteOtherTool is the remote server's second tool, the one a
	// tool filter hides.
	remoteOtherTool = "conformance_reverse"
)

func startRemoteMCP(t *testing.T, path string) *remoteMCP {
	t.Helper()
	r := &remoteMCP{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != path {
			// No server-to-client stream, no other paths.
			http.Error(w, "not here", http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if err := json.NewDecoder(req.Body).Decode(&msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.seen = append(r.seen, remoteRequest{
			Path: req.URL.Path, Method: msg.Method, Session: req.Header.Get("Mcp-Session-Id"),
			Authorization: req.Header.Get("Authorization"), Header: req.Header.Clone(), Tool: msg.Params.Name,
		})
		r.mu.Unlock()
		var result any
		switch msg.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", remoteSession)
			result = map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": remoteServerName, "version": "1.0.0"},
			}
		case "tools/list":
			result = map[string]any{"tools": []map[string]any{{
				"name": remoteToolName, "description": "answers what it is given",
				"inputSchema": map[string]any{"type": "object"},
			}, {
				"name": remoteOtherTool, "description": "answers what it is given, backwards",
				"inputSchema": map[string]any{"type": "object"},
			}}}
		case "tools/call":
			// Both tools answer with their name and the arguments they
			// were given.
			result = map[string]any{"content": []map[string]any{{
				"type": "text", "text": msg.Params.Name + " " + string(msg.Params.Arguments),
			}}}
		default:
			if msg.ID == nil { // a notification
				w.WriteHeader(http.StatusAccepted)
				return
			}
			writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": msg.ID,
				"error": map[string]any{"code": -32601, "message": "method not found"}})
			return
		}
		writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	r.URL = srv.URL + path
	r.StandIn = remoteStandIn + path
	return r
}

// requests returns what reached the server so far.
func (r *remoteMCP) requests() []remoteRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]remoteRequest(nil), r.seen...)
}
