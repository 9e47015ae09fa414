package conformance_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// authServerProxy is where a conformance case of an MCPRemoteProxy running
// ToolHive's embedded authorization server starts: hivekeeper's
// controllers on the package's API server and a namespace of the case's
// own, a remote MCP server and an upstream OIDC issuer of the test's own,
// and the Secret as-secrets with the server's signing key (key).
type authServerProxy struct {
	env      *framework.Env
	ns       string
	remote   *remoteMCP
	upstream *issuer
	key      *ecdsa.PrivateKey
}

// newAuthServerProxy sets a case up; upstream is the upstream issuer, a
// plain HTTP one of startIssuer's when nil.
func newAuthServerProxy(t *testing.T, upstream *issuer) *authServerProxy {
	t.Helper()
	env, ns := runtimeSetUp(t)
	p := &authServerProxy{env: env, ns: ns, remote: startRemoteMCP(t, "/mcp"), upstream: upstream}
	if p.upstream == nil {
		p.upstream = startIssuer(t)
	}
	p.key = createAuthServerSecret(t, env, ns)
	return p
}

// apply applies the manifests of template, with ${UPSTREAM} and
// ${REMOTE_URL} the stand-ins of the upstream issuer and the remote
// server, and vars.
func (p *authServerProxy) apply(t *testing.T, template string, vars map[string]string) {
	t.Helper()
	all := map[string]string{"UPSTREAM": upstreamStandIn, "REMOTE_URL": p.remote.StandIn}
	maps.Copy(all, vars)
	applyTemplate(t, p.env, p.ns, template, all)
}

// files writes the files the pod of the proxy name would see, from its
// Deployment's Secret and ConfigMap volumes, under a new root, which it
// returns with the number of Secret and ConfigMap files.
func (p *authServerProxy) files(t *testing.T, name string) (root string, secrets, configMaps int) {
	t.Helper()
	_, tmpl := deploymentContainer(t, p.env, p.ns, name, naming.ProxyContainerName)
	root, secrets = secretFiles(t, p.env, p.ns, &tmpl)
	return root, secrets, configMapFiles(t, p.env, p.ns, &tmpl, root)
}

// authServerMounts are the folders where the proxy pod mounts the
// authorization server's files, which run moves under the case's root.
var authServerMounts = []string{wiring.AuthServerKeysMountPath, wiring.AuthServerHMACMountPath, wiring.AuthServerTLSMountPath,
	wiring.AuthServerSPIFFEBundleMountPath, wiring.AuthServerUpstreamCAMountPath, wiring.AuthServerIssuerCAMountPath,
	wiring.AuthServerRedisCAMountPath}

// run starts ToolHive's runner as the proxy name's Deployment would run
// it (startRunner, on proxy port 8095) with the files under root (files),
// the stand-ins of the remote server and the upstream issuer replaced by
// their loopback URLs and the extra old, new pairs applied to the
// RunConfig first; it returns the port once the runner serves.
func (p *authServerProxy) run(t *testing.T, name, root string, extra ...string) int {
	t.Helper()
	replace := append(extra, p.remote.StandIn, p.remote.URL, upstreamStandIn, p.upstream.URL)
	for _, m := range authServerMounts {
		replace = append(replace, m, root+m)
	}
	port := startRunner(t, p.env, p.ns, name, naming.RunConfigName(name), 8095, replace...)
	waitServing(t, port)
	return port
}

// testCA is a CA the test generates, and a serving certificate it signed
// for 127.0.0.1: a server only a client given the CA trusts.
type testCA struct {
	PEM  string
	Cert tls.Certificate
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hivekeeper conformance CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{PEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}
}

// createConfigMap creates ConfigMap name in ns with data.
func createConfigMap(t *testing.T, env *framework.Env, ns, name string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
