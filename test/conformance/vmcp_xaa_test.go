package conformance_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// xaaProbeToken is what the test's target authorization server issues.
const xaaProbeToken = "xaa-probe-access-token"

// TestVMCPCrossAppAccess starts ToolHive's vmcp on what hivekeeper wrote
// for a default outgoing strategy of type xaa: config.yaml's xaa strategy
// names the variables of the MCPExternalAuthConfig's client secrets, and
// the vmcp container gets them from their secretKeyRefs. vmcp starts, and
// its health checks of the backend, which have no caller to exchange an
// ID token for, authenticate at the target authorization server with the
// client credentials grant: the test's token endpoint sees the target
// client and the secret from the Secret, and the backend the token it
// issued.
func TestVMCPCrossAppAccess(t *testing.T) {
	env, ns := runtimeSetUp(t)
	backend := startRemoteMCP(t, "/mcp")
	var (
		mu     sync.Mutex
		grants []string
	)
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := req.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id, secret, ok := req.BasicAuth()
		if !ok {
			id, secret = req.PostForm.Get("client_id"), req.PostForm.Get("client_secret")
		}
		mu.Lock()
		grants = append(grants, fmt.Sprintf("%s %s %s:%s audience=%s scope=%s", req.URL.Path, req.PostForm.Get("grant_type"),
			id, secret, req.PostForm.Get("audience"), req.PostForm.Get("scope")))
		mu.Unlock()
		writeJSON(w, map[string]any{"access_token": xaaProbeToken, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(tokens.Close)
	applyTemplate(t, env, ns, "testdata/runtime/vmcp-xaa.yaml", map[string]string{"TOKEN_URL": tokens.URL + "/token"})
	const name = "xaa-vmcp"

	cm := waitConfigMap(t, env, ns, naming.VMCPConfigMapName(name))
	for _, want := range []string{"type: xaa", "idpClientSecretEnv: TOOLHIVE_XAA_IDP_CLIENT_SECRET_XAA_PARTNER",
		"targetClientSecretEnv: TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XAA_PARTNER"} {
		if !strings.Contains(cm.Data[naming.VMCPConfigKey], want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cm.Data[naming.VMCPConfigKey])
		}
	}
	if strings.Contains(cm.Data[naming.VMCPConfigKey], "not-a-real-") {
		t.Error("a secret value reached config.yaml")
	}
	backendURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:8080/mcp", naming.MCPServerServiceName("xaa-backend"), ns)
	port, out := startVMCPOutput(t, env, ns, name, backendURL, backend.URL)
	waitServing(t, port)

	want := "/token client_credentials vmcp-partner:not-a-real-target-secret audience=https://partner.example.com scope=mcp"
	seen := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(grants, want) && slices.ContainsFunc(backend.requests(), func(q remoteRequest) bool {
			return q.Authorization == "Bearer "+xaaProbeToken
		})
	}
	for deadline := time.Now().Add(60 * time.Second); !seen(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("no health check authenticated by the xaa strategy's target client (want grant %q): grants %q\nvmcp:\n%s",
				want, grants, out.String())
		}
	}
}
