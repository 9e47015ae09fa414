package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	embeddedAuthServer(t, "testdata/runtime/vmcp-auth-server.yaml", "")
}

// TestVMCPPrimaryUpstream: the same with two upstreams and Cedar
// authorization reading the second's claims, named in the deprecated
// inline primaryUpstreamProvider: vmcp starts with the primary upstream
// hivekeeper resolved into config.yaml, and serves the same metadata.
func TestVMCPPrimaryUpstream(t *testing.T) {
	embeddedAuthServer(t, "testdata/runtime/vmcp-auth-server-primary.yaml", "partner-idp")
}

// embeddedAuthServer runs the case of manifest; primary, when set, is the
// upstream config.yaml must name for Cedar.
func embeddedAuthServer(t *testing.T, manifest, primary string) {
	env, ns := runtimeSetUp(t)
	backend := startRemoteMCP(t, "/mcp")
	upstream := startIssuer(t)
	key := createAuthServerSecret(t, env, ns)
	applyTemplate(t, env, ns, manifest, map[string]string{"UPSTREAM": upstreamStandIn})
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
	if primary != "" {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), naming.VMCPConfigMapName(name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := "primaryUpstreamProvider: " + primary; !strings.Contains(cm.Data[naming.VMCPConfigKey], want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cm.Data[naming.VMCPConfigKey])
		}
	}
}
