package conformance_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestRemoteProxyEmbeddedAuthServer starts ToolHive's runner on what
// hivekeeper wrote for an authServerRef: the Deployment's Secret volumes
// are materialised under a temporary root (the RunConfig's paths moved
// there, as a pod's mounts would place the files), the upstream client
// secret comes from its secretKeyRef variable. The runner loads the
// signing key and HMAC secret, discovers the upstream issuer, and serves
// the authorization server's metadata with the configured issuer and the
// key it was given.
func TestRemoteProxyEmbeddedAuthServer(t *testing.T) {
	p := newAuthServerProxy(t, nil)
	p.apply(t, "testdata/runtime/embedded-auth-server.yaml", nil)
	const name = "with-auth-server"

	// The files the pod would see, from the Deployment's Secret volumes.
	root, secrets, _ := p.files(t, name)
	if secrets != 2 {
		t.Fatalf("%d Secret files mounted, want the signing key and the HMAC secret", secrets)
	}
	checkAuthServerMetadata(t, p.run(t, name, root), p.key)
}

// secretFiles writes the files a pod would see of the Secret volumes of
// the pod template tmpl (its first container's mounts, each of one item)
// and of its projected volumes' Secret sources under a new root, which it returns with the number of files.
func secretFiles(t *testing.T, env *framework.Env, ns string, tmpl *corev1.PodTemplateSpec) (string, int) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	secrets := 0
	for _, v := range tmpl.Spec.Volumes {
		if v.Projected != nil {
			for _, m := range tmpl.Spec.Containers[0].VolumeMounts {
				if m.Name == v.Name {
					secrets += projectedSecretFiles(t, env, ns, root, m.MountPath, v.Projected)
				}
			}
		}
		if v.Secret == nil {
			continue
		}
		s, err := env.Kube.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tmpl.Spec.Containers[0].VolumeMounts {
			if m.Name != v.Name {
				continue
			}
			for _, item := range v.Secret.Items {
				if item.Path != m.SubPath {
					t.Fatalf("volume %s: item %s is not the mount's subPath %s", v.Name, item.Path, m.SubPath)
				}
				file := filepath.Join(root, m.MountPath)
				if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, s.Data[item.Key], 0o400); err != nil {
					t.Fatal(err)
				}
				secrets++
			}
		}
	}
	return root, secrets
}

// createAuthServerSecret creates the Secret as-secrets of the embedded
// authorization server manifests: a signing key (returned), an HMAC secret,
// an upstream client secret, a delegate client's secret and the Redis
// ACL user's name and password.
func createAuthServerSecret(t *testing.T, env *framework.Env, ns string) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "as-secrets"}, Data: map[string][]byte{
		"signing":  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		"hmac":     []byte("not-a-real-hmac-secret-of-32-bytes-or-more"),
		"upstream": []byte("not-a-real-upstream-client-secret"),
		"delegate": []byte("not-a-real-delegate-client-secret"),
		// The Redis ACL user (startRedis's password, the default user).
		"redis-user":     []byte("default"),
		"redis-password": []byte(authServerRedisPassword),
	}}
	if _, err := env.Kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return key
}

// checkAuthServerMetadata fetches the authorization server's metadata
// from the server on loopback port: its issuer is the configured one, and
// its JWKS is the public half of key, nothing generated.
func checkAuthServerMetadata(t *testing.T, port int, key *ecdsa.PrivateKey) {
	t.Helper()
	var meta struct {
		Issuer   string `json:"issuer"`
		JWKSURI  string `json:"jwks_uri"`
		TokenURL string `json:"token_endpoint"`
	}
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/.well-known/oauth-authorization-server", port))
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&meta) == nil, nil
	}, "the authorization server's metadata")
	if meta.Issuer != "https://auth.example.com" || !strings.HasPrefix(meta.TokenURL, "https://auth.example.com/") {
		t.Errorf("metadata: %+v", meta)
	}
	// The JWKS is the key of the Secret: its public half, nothing generated.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, strings.TrimPrefix(meta.JWKSURI, "https://auth.example.com")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var jwks struct {
		Keys []struct {
			Crv string `json:"crv"`
			X   string `json:"x"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jwks); err != nil {
		t.Fatal(err)
	}
	t.Logf("metadata %+v; JWKS %+v", meta, jwks)
	if len(jwks.Keys) != 1 || jwks.Keys[0].X != b64(key.X.FillBytes(make([]byte, 32))) {
		t.Errorf("JWKS %+v is not the Secret's signing key", jwks)
	}
}
