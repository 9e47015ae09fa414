package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// TestRemoteProxyEmbeddedAuthServerRedisTLS starts ToolHive's runner on
// what hivekeeper wrote for an authorization server whose Redis speaks
// TLS only: the Redis CA reaches the runner as the file of the Secret
// volume hivekeeper mounts, and the runner, which reaches Redis before it
// serves, trusts the test's Redis by it and serves the authorization
// server's metadata. Without the CA file the runner does not start.
func TestRemoteProxyEmbeddedAuthServerRedisTLS(t *testing.T) {
	p := newAuthServerProxy(t, nil)
	createTLSSecret(t, p.env, p.ns, "redis-tls")
	tlsSecret, err := p.env.Kube.CoreV1().Secrets(p.ns).Get(context.Background(), "redis-tls", metav1.GetOptions{})
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
	p.apply(t, "testdata/runtime/embedded-auth-server-redis-tls.yaml", map[string]string{"REDIS_ADDR": redis})
	const name = "redis-tls-proxy"

	root, _, _ := p.files(t, name)
	if _, err := os.Stat(filepath.Join(root, wiring.AuthServerRedisCAMountPath, "ca.crt")); err != nil {
		t.Fatalf("the Redis CA is not mounted at %s: %v", wiring.AuthServerRedisCAMountPath, err)
	}
	checkAuthServerMetadata(t, p.run(t, name, root), p.key)
}
