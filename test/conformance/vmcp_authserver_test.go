package conformance_test

import (
	"fmt"
	"testing"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// TestVMCPEmbeddedAuthServer starts ToolHive's vmcp on what hivekeeper
// wrote for a spec.authServerConfig: config.yaml and authserver-config.yaml
// as files of the mounted ConfigMap, the Deployment's Secret volumes
// materialised under a temporary root (the configuration's paths moved
// there, as the pod's mounts would place the files), the upstream client
// secret from its secretKeyRef variable. vmcp loads the signing key and
// HMAC secret, discovers the upstream issuer, and serves the
// authorization server's metadata with the configured issuer and, as its
// JWKS, the Secret's signing key.
func TestVMCPEmbeddedAuthServer(t *testing.T) {
	env, ns := runtimeSetUp(t)
	backend := startRemoteMCP(t, "/mcp")
	upstream := startIssuer(t)
	key := createAuthServerSecret(t, env, ns)
	applyTemplate(t, env, ns, "testdata/runtime/vmcp-auth-server.yaml", map[string]string{"UPSTREAM": upstreamStandIn})
	const name = "as-vmcp"

	_, tmpl := deploymentContainer(t, env, ns, name, naming.VMCPContainerName)
	root, secrets := secretFiles(t, env, ns, &tmpl)
	if secrets != 2 {
		t.Fatalf("%d Secret files mounted, want the signing key and the HMAC secret", secrets)
	}
	backendURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:8080/mcp", naming.MCPServerServiceName("as-backend"), ns)
	port := startVMCP(t, env, ns, name, backendURL, backend.URL, upstreamStandIn, upstream.URL,
		wiring.AuthServerKeysMountPath, root+wiring.AuthServerKeysMountPath,
		wiring.AuthServerHMACMountPath, root+wiring.AuthServerHMACMountPath)
	waitServing(t, port)
	checkAuthServerMetadata(t, port, key)
}
