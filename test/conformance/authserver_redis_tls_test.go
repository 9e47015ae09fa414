package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// TestRemoteProxyEmbeddedAuthServerRedisTLS starts ToolHive's runner on
// what hivekeeper wrote for an authorization server whose Redis speaks
// TLS only: the Redis CA reaches the runner as the file of the Secret
// volume hivekeeper mounts, and the runner, which reaches Redis before it
// serves, trusts the test's Redis by it and serves the authorization
// server's metadata. Without the CA file, or with the connection in
// plain text, the runner does not start.
func TestRemoteProxyEmbeddedAuthServerRedisTLS(t *testing.T) {
	env, ns := runtimeSetUp(t)
	remote := startRemoteMCP(t, "/mcp")
	upstream := startIssuer(t)
	key := createAuthServerSecret(t, env, ns)
	createTLSSecret(t, env, ns, "redis-tls")
	tlsSecret, err := env.Kube.CoreV1().Secrets(ns).Get(context.Background(), "redis-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, certKey := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for file, k := range map[string]string{cert: "tls.crt", certKey: "tls.key"} {
		if err := os.WriteFile(file, tlsSecret.Data[k], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	redis := startRedis(t, authServerRedisPassword, cert, certKey)
	applyTemplate(t, env, ns, "testdata/runtime/embedded-auth-server-redis-tls.yaml",
		map[string]string{"UPSTREAM": upstreamStandIn, "REMOTE_URL": remote.StandIn, "REDIS_ADDR": redis})
	const name = "redis-tls-proxy"

	_, tmpl := deploymentContainer(t, env, ns, name, naming.ProxyContainerName)
	root, _ := secretFiles(t, env, ns, &tmpl)
	ca := filepath.Join(root, wiring.AuthServerRedisCAMountPath, "ca.crt")
	if _, err := os.Stat(ca); err != nil {
		t.Fatalf("the Redis CA is not mounted at %s: %v", wiring.AuthServerRedisCAMountPath, err)
	}
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8096, remote.StandIn, remote.URL, upstreamStandIn, upstream.URL,
		wiring.AuthServerKeysMountPath, root+wiring.AuthServerKeysMountPath,
		wiring.AuthServerHMACMountPath, root+wiring.AuthServerHMACMountPath,
		wiring.AuthServerRedisCAMountPath, root+wiring.AuthServerRedisCAMountPath)
	waitServing(t, port)
	checkAuthServerMetadata(t, port, key)
}
