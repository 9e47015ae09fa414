package conformance_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestRunnerCallsValidatingWebhook starts ToolHive's runner on an
// MCPServer whose MCPWebhookConfig names a validating webhook the test
// serves on loopback. The HMAC key reaches the runner only as the file of
// the Secret volume hivekeeper mounts (materialised here from the
// Deployment's volumes and mounts, as the kubelet would), at the path the
// RunConfig names. The runner must sign every call with that key, and
// refuse a tools/call the webhook denies with 403 while letting an
// initialize it allows through.
func TestRunnerCallsValidatingWebhook(t *testing.T) {
	env, ns := runtimeSetUp(t)
	hook := &policyWebhook{deny: "tools/call"}
	srv := httptest.NewServer(hook)
	t.Cleanup(srv.Close)
	applyTemplate(t, env, ns, "testdata/runtime/webhooks.yaml", map[string]string{"WEBHOOK": srv.URL + "/validate"})
	const name = "guarded-server"
	files := materialiseSecretMounts(t, env, ns, name, wiring.WebhookMountRoot)
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8095, wiring.WebhookMountRoot, files)
	waitStatefulSet(t, env, ns, name)
	markStatefulSetReady(t, env, ns, name)
	waitServing(t, port)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)

	resp, body := mcpCall(t, endpoint, "", "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fetch","arguments":{}}}`)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a tools/call the webhook denies: %s, want 403: %s", resp.Status, body)
	}
	if resp, body := mcpCall(t, endpoint, "", "", initializeRequest); resp.StatusCode == http.StatusForbidden {
		t.Errorf("an initialize the webhook allows: %s: %s", resp.Status, body)
	}
	calls := hook.received()
	methods := map[string]bool{}
	for _, c := range calls {
		methods[c.method] = true
		if !c.signed {
			t.Errorf("a %s call without a valid %s for the Secret's key", c.method, "X-ToolHive-Signature")
		}
	}
	if !methods["tools/call"] || !methods["initialize"] {
		t.Errorf("the webhook saw %v, want tools/call and initialize", methods)
	}
}

// materialiseSecretMounts writes, under a temporary directory, every
// Secret key the proxy container of Deployment name mounts below root, at
// its mount path with root replaced by that directory, and returns the
// directory.
func materialiseSecretMounts(t *testing.T, env *framework.Env, ns, name, root string) string {
	t.Helper()
	c, tmpl := deploymentContainer(t, env, ns, name, naming.ProxyContainerName)
	dir := t.TempDir()
	n := 0
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(m.MountPath, root+"/") {
			continue
		}
		for _, v := range tmpl.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			s, err := env.Kube.CoreV1().Secrets(ns).Get(context.Background(), v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range v.Secret.Items {
				if item.Path != m.SubPath {
					continue
				}
				file := filepath.Join(dir, strings.TrimPrefix(m.MountPath, root))
				if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, s.Data[item.Key], 0o600); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatalf("Deployment %s mounts no Secret key below %s", name, root)
	}
	return dir
}

// policyWebhook is a validating webhook: it denies the one MCP method
// deny, allows the rest, and records each call and whether its signature
// is the HMAC-SHA256 of "<timestamp>.<body>" with the Secret's key.
type policyWebhook struct {
	deny  string
	mu    sync.Mutex
	calls []webhookCall
}

type webhookCall struct {
	method string
	signed bool
}

func (h *policyWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		UID        string `json:"uid"`
		MCPRequest struct {
			Method string `json:"method"`
		} `json:"mcp_request"`
	}
	_ = json.Unmarshal(body, &req)
	mac := hmac.New(sha256.New, []byte("not-a-real-hmac-key"))
	mac.Write([]byte(r.Header.Get("X-ToolHive-Timestamp") + "."))
	mac.Write(body)
	signed := r.Header.Get("X-ToolHive-Signature") == "sha256="+hex.EncodeToString(mac.Sum(nil))
	h.mu.Lock()
	h.calls = append(h.calls, webhookCall{method: req.MCPRequest.Method, signed: signed})
	h.mu.Unlock()
	allowed := req.MCPRequest.Method != h.deny
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"version": "v0.1.0", "uid": req.UID, "allowed": allowed, "message": "conformance policy"})
}

func (h *policyWebhook) received() []webhookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]webhookCall(nil), h.calls...)
}
