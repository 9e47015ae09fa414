package conformance_test

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// TestRunnerAuthenticates proves that the OIDC block hivekeeper writes
// into a RunConfig makes ToolHive's runner authenticate for real: the
// runner discovers the test issuer's JWKS from the issuer URL alone,
// verifies signatures with it and checks the audience the MCPServer's
// reference names. Through the runner's port:
//
//   - no token, a wrong audience, a wrong issuer, an expired token and a
//     token signed with a key the issuer never published are each refused
//     with 401, a Bearer challenge, and ToolHive's reason for that case;
//   - a token the issuer signed for the right audience is not refused:
//     no 401 and no challenge, and the issuer's JWKS was fetched. The
//     request then goes on to the MCP server, which does not exist here
//     (no kubelet), so what comes back is the proxy's answer for an
//     unreachable backend; the test asserts only that authentication let
//     it through.
func TestRunnerAuthenticates(t *testing.T) {
	env, ns := runtimeSetUp(t)
	iss := startIssuer(t)
	applyTemplate(t, env, ns, "testdata/runtime/auth-server.yaml", map[string]string{"ISSUER": iss.URL})
	const name, audience = "guarded", "guarded-api"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8080)
	waitStatefulSet(t, env, ns, name)
	markStatefulSetReady(t, env, ns, name)
	waitServing(t, port)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)

	resp, body := mcpCall(t, endpoint, iss.token(t, iss.claims(audience)), "", initializeRequest)
	if resp.StatusCode == http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("a valid token for %q was refused: %s %q: %s", audience, resp.Status, resp.Header.Get("WWW-Authenticate"), body)
	}
	if iss.jwks.Load() == 0 {
		t.Errorf("the runner never fetched the issuer's JWKS")
	}
	t.Logf("valid token: %s (the MCP server itself does not run here)", resp.Status)

	expectRefused(t, endpoint, iss, refusals(t, iss, audience))
}

// refusal is a token ToolHive's validator must refuse, and a word of the
// reason it gives, so a 401 for another cause (a failed discovery) does
// not pass.
type refusal struct {
	name, token, reason string
}

// refusals are the tokens every authenticated endpoint must refuse.
func refusals(t *testing.T, iss *issuer, audience string) []refusal {
	t.Helper()
	with := func(k string, v any) map[string]any {
		c := iss.claims(audience)
		c[k] = v
		return c
	}
	expired := iss.claims(audience)
	expired["iat"], expired["nbf"], expired["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return []refusal{
		{"no token", "", "authorization"},
		{"wrong audience", iss.token(t, with("aud", "another-api")), "audience"},
		{"wrong issuer", iss.token(t, with("iss", "http://127.0.0.1:1/elsewhere")), "issuer"},
		{"expired", iss.token(t, expired), "expired"},
		// Same key id, another key: only the signature gives it away.
		{"unpublished key", signJWT(t, stranger, iss.kid, iss.claims(audience)), "signature"},
	}
}

// expectRefused sends initialize with each refusal's token to endpoint and
// requires 401 with a Bearer challenge naming the issuer as realm.
func expectRefused(t *testing.T, endpoint string, iss *issuer, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		resp, body := mcpCall(t, endpoint, c.token, "", initializeRequest)
		challenge := resp.Header.Get("WWW-Authenticate")
		switch {
		case resp.StatusCode != http.StatusUnauthorized:
			t.Errorf("%s: %s, want 401: %s", c.name, resp.Status, body)
		case !strings.HasPrefix(challenge, "Bearer ") || !strings.Contains(challenge, `realm="`+iss.URL+`"`):
			t.Errorf("%s: challenge %q, want Bearer with realm %q", c.name, challenge, iss.URL)
		case !strings.Contains(strings.ToLower(string(body)), c.reason):
			t.Errorf("%s: 401 for another reason than %q: %s", c.name, c.reason, body)
		}
	}
}
