package conformance_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"
)

// JSON-RPC requests of the MCP streamable HTTP transport the tests send.
const (
	initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"hivekeeper-conformance","version":"1.0.0"}}}`
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
