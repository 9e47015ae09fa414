package conformance_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestRemoteProxyAuthServerTLSListener starts ToolHive's runner on what
// hivekeeper wrote for an embedded authorization server with a TLS
// listener: the certificate and key reach it as the files of the
// Deployment's projected volume, and it serves the authorization server's
// metadata over TLS, with that certificate, on the port the Deployment
// declares as https-auth. ToolHive fixes the port (8443), so the test
// binds 127.0.0.1:8443 and fails at once if something else holds it.
func TestRemoteProxyAuthServerTLSListener(t *testing.T) {
	p := newAuthServerProxy(t, nil)
	env, ns := p.env, p.ns
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", wiring.AuthServerTLSPort)); err != nil {
		t.Fatalf("the TLS listener's port is ToolHive's constant, and it is taken here: %v", err)
	} else {
		l.Close()
	}
	pool := createTLSSecret(t, env, ns, "as-tls")
	p.apply(t, "testdata/runtime/embedded-auth-server.yaml", nil)
	patch := `{"spec":{"embeddedAuthServer":{"tlsListener":{"certificateSecretRef":{"name":"as-tls","key":"tls.crt"},"privateKeySecretRef":{"name":"as-tls","key":"tls.key"}}}}}`
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(ns).Patch(context.Background(), "embedded", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	const name = "with-auth-server"

	framework.Eventually(t, time.Minute, func() (bool, error) {
		c, _ := deploymentContainer(t, env, ns, name, naming.ProxyContainerName)
		return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
			return p.Name == wiring.AuthServerTLSPortName && p.ContainerPort == wiring.AuthServerTLSPort
		}), nil
	}, "the Deployment's https-auth port")
	root, files, _ := p.files(t, name)
	if files != 4 {
		t.Fatalf("%d Secret files mounted, want the signing key, the HMAC secret, the certificate and the key", files)
	}
	p.run(t, name, root, `"host": "0.0.0.0"`, `"host": "127.0.0.1"`)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
	var meta struct {
		Issuer string `json:"issuer"`
	}
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/.well-known/oauth-authorization-server", wiring.AuthServerTLSPort))
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&meta) == nil, nil
	}, "the authorization server's metadata over its TLS listener")
	if meta.Issuer != "https://auth.example.com" {
		t.Errorf("metadata over TLS: issuer %q", meta.Issuer)
	}
}

// createTLSSecret creates a Secret holding a self-signed certificate for
// 127.0.0.1 and its key as tls.crt and tls.key, and returns a pool that
// trusts it.
func createTLSSecret(t *testing.T, env *framework.Env, ns, name string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}}
	if _, err := env.Kube.CoreV1().Secrets(ns).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// projectedSecretFiles writes, under root, the files of a projected
// volume's Secret sources at mount (a directory), and returns how many.
func projectedSecretFiles(t *testing.T, env *framework.Env, ns, root, mount string, p *corev1.ProjectedVolumeSource) int {
	t.Helper()
	n := 0
	for _, src := range p.Sources {
		if src.Secret == nil {
			continue
		}
		s, err := env.Kube.CoreV1().Secrets(ns).Get(context.Background(), src.Secret.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range src.Secret.Items {
			file := filepath.Join(root, mount, item.Path)
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, s.Data[item.Key], 0o400); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}
