package conformance_test

import (
	"fmt"
	"testing"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// TestRemoteProxyAuthServerUpstreamCA starts ToolHive's runner on what
// hivekeeper wrote for an embedded authorization server whose upstream
// serves HTTPS with a certificate of a CA the test generates, given as the
// upstream's caBundleRef: the bundle reaches the runner only as the file of
// the Deployment's ConfigMap volume the RunConfig's ca_file_path names,
// and with it the runner discovers the upstream over TLS, which it could
// not trust otherwise, and serves the authorization server's metadata.
func TestRemoteProxyAuthServerUpstreamCA(t *testing.T) {
	ca := newTestCA(t)
	p := newAuthServerProxy(t, startIssuerWith(t, &ca.Cert))
	createConfigMap(t, p.env, p.ns, "as-upstream-ca", map[string]string{"ca.crt": ca.PEM})
	p.apply(t, "testdata/runtime/embedded-auth-server-upstream-ca.yaml", nil)
	const name = "upstream-ca-proxy"

	root, _, configMaps := p.files(t, name)
	if configMaps != 1 {
		t.Fatalf("%d ConfigMap files mounted, want the upstream's CA bundle", configMaps)
	}
	port := p.run(t, name, root)
	checkAuthServerMetadata(t, port, p.key)
	if n := p.upstream.discovery.Load(); n == 0 {
		t.Error("the runner never read the upstream's discovery document over TLS")
	}
}

// TestRemoteProxyAuthServerTrustedIssuerCA starts ToolHive's runner on
// what hivekeeper wrote for an embedded authorization server trusting an
// issuer's JWT bearer assertions, with the CA bundle of that issuer (key
// bundle.pem of a ConfigMap): the runner loads the bundle from the file of
// the Deployment's ConfigMap volume the trusted issuer's ca_file_path
// names (it refuses to start without it) and serves the JWT bearer grant
// (beside token exchange, which a trusted issuer enables).
func TestRemoteProxyAuthServerTrustedIssuerCA(t *testing.T) {
	ca := newTestCA(t)
	trusted := startIssuerWith(t, &ca.Cert)
	p := newAuthServerProxy(t, nil)
	createConfigMap(t, p.env, p.ns, "as-issuer-ca", map[string]string{"bundle.pem": ca.PEM})
	const trustedStandIn = "https://trusted-issuer.conformance.test"
	p.apply(t, "testdata/runtime/embedded-auth-server-issuer-ca.yaml", map[string]string{"TRUSTED": trustedStandIn})
	const name = "issuer-ca-proxy"

	root, _, configMaps := p.files(t, name)
	if configMaps != 1 {
		t.Fatalf("%d ConfigMap files mounted, want the trusted issuer's CA bundle", configMaps)
	}
	port := p.run(t, name, root, trustedStandIn, trusted.URL)
	checkAuthServerMetadata(t, port, p.key)
	checkDelegationMetadata(t, port, []string{grantTokenExchange, grantJWTBearer}, false)
}

// TestVMCPAuthServerCABundles starts ToolHive's vmcp on what hivekeeper
// wrote for a spec.authServerConfig whose upstream, and a trusted issuer,
// serve HTTPS with a certificate of a CA the test generates, given as
// their caBundleRef: the bundles reach vmcp only as the files of the
// Deployment's ConfigMap volumes authserver-config.yaml names, and with
// them vmcp discovers the upstream over TLS and serves the authorization
// server's metadata.
func TestVMCPAuthServerCABundles(t *testing.T) {
	env, ns := runtimeSetUp(t)
	backend := startRemoteMCP(t, "/mcp")
	ca := newTestCA(t)
	upstream := startIssuerWith(t, &ca.Cert)
	key := createAuthServerSecret(t, env, ns)
	createConfigMap(t, env, ns, "as-upstream-ca", map[string]string{"ca.crt": ca.PEM})
	applyTemplate(t, env, ns, "testdata/runtime/vmcp-auth-server-upstream-ca.yaml", map[string]string{"UPSTREAM": upstreamStandIn})
	const name = "ca-vmcp"

	_, tmpl := deploymentContainer(t, env, ns, name, naming.VMCPContainerName)
	root, _ := secretFiles(t, env, ns, &tmpl)
	if n := configMapFiles(t, env, ns, &tmpl, root); n != 2 {
		t.Fatalf("%d ConfigMap files mounted, want the upstream's and the trusted issuer's CA bundles", n)
	}
	backendURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:8080/mcp", naming.MCPServerServiceName("as-backend"), ns)
	port := startVMCP(t, env, ns, name, backendURL, backend.URL, upstreamStandIn, upstream.URL,
		wiring.AuthServerKeysMountPath, root+wiring.AuthServerKeysMountPath,
		wiring.AuthServerHMACMountPath, root+wiring.AuthServerHMACMountPath,
		wiring.AuthServerUpstreamCAMountPath, root+wiring.AuthServerUpstreamCAMountPath,
		wiring.AuthServerIssuerCAMountPath, root+wiring.AuthServerIssuerCAMountPath)
	waitServing(t, port)
	checkAuthServerMetadata(t, port, key)
	if n := upstream.discovery.Load(); n == 0 {
		t.Error("vmcp never read the upstream's discovery document over TLS")
	}
}
