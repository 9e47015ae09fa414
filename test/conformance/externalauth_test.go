package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// TestRemoteProxyBearerToken: an MCPRemoteProxy referencing an
// MCPExternalAuthConfig of type bearerToken. ToolHive's runner, started on
// the ConfigMap and the Deployment's container as hivekeeper wrote them,
// resolves the secret parameter of remote_auth_config from the
// container's secretKeyRef variable and sends the token to the remote
// server with every request; the token is never in the RunConfig.
func TestRemoteProxyBearerToken(t *testing.T) {
	env, ns := runtimeSetUp(t)
	remote := startRemoteMCP(t, "/mcp")
	applyTemplate(t, env, ns, "testdata/runtime/remote-proxy-bearer.yaml", map[string]string{"REMOTE_URL": remote.StandIn})
	const name, token = "with-bearer", "not-a-real-bearer-token-91c2"
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8094, remote.StandIn, remote.URL)
	waitServing(t, port)

	listToolsThroughProxy(t, fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
	seen := remote.requests()
	if len(seen) < 2 {
		t.Fatalf("the remote server saw %d requests, want initialize and tools/list at least", len(seen))
	}
	for _, r := range seen {
		if got := r.Header.Get("Authorization"); got != "Bearer "+token {
			t.Errorf("%s reached the remote server with Authorization %q, want the Secret's bearer token", r.Method, got)
		}
	}
	cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), naming.RunConfigName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data[schema.Key], token) {
		t.Errorf("the bearer token reached the RunConfig ConfigMap:\n%s", cm.Data[schema.Key])
	}
}
