package conformance_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// Grant types the authorization server advertises for its delegation
// settings.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// TestRemoteProxyEmbeddedAuthServerDelegation starts ToolHive's runner on
// what hivekeeper wrote for an embedded authorization server with its
// delegation settings (confidential registration, CIMD, a delegate client,
// a trusted issuer with a JWT bearer grant): the runner validates and
// loads them, and the server's metadata advertises what they enable, the
// token exchange and JWT bearer grants beside the interactive ones and
// client ID metadata documents.
func TestRemoteProxyEmbeddedAuthServerDelegation(t *testing.T) {
	env, ns := runtimeSetUp(t)
	remote := startRemoteMCP(t, "/mcp")
	upstream := startIssuer(t)
	key := createAuthServerSecret(t, env, ns)
	applyTemplate(t, env, ns, "testdata/runtime/embedded-auth-server-delegation.yaml", map[string]string{"UPSTREAM": upstreamStandIn, "REMOTE_URL": remote.StandIn})
	const name = "delegating-proxy"

	_, tmpl := deploymentContainer(t, env, ns, name, naming.ProxyContainerName)
	root, _ := secretFiles(t, env, ns, &tmpl)
	port := startRunner(t, env, ns, name, naming.RunConfigName(name), 8095, remote.StandIn, remote.URL, upstreamStandIn, upstream.URL,
		wiring.AuthServerKeysMountPath, root+wiring.AuthServerKeysMountPath,
		wiring.AuthServerHMACMountPath, root+wiring.AuthServerHMACMountPath)
	waitServing(t, port)
	checkAuthServerMetadata(t, port, key)
	checkDelegationMetadata(t, port, []string{grantTokenExchange, "authorization_code", "refresh_token", grantJWTBearer}, true)
}

// TestVMCPEmbeddedAuthServerGrants starts ToolHive's vmcp on what
// hivekeeper wrote for a spec.authServerConfig without upstreams that
// only grants: a token exchange for its delegate client and JWT bearer
// assertions of a trusted issuer. vmcp loads it, and its server
// advertises exactly those two grants (no interactive login without an
// upstream).
func TestVMCPEmbeddedAuthServerGrants(t *testing.T) {
	env, ns := runtimeSetUp(t)
	backend := startRemoteMCP(t, "/mcp")
	key := createAuthServerSecret(t, env, ns)
	applyTemplate(t, env, ns, "testdata/runtime/vmcp-auth-server-grants.yaml", nil)
	const name = "grants-vmcp"

	_, tmpl := deploymentContainer(t, env, ns, name, naming.VMCPContainerName)
	root, _ := secretFiles(t, env, ns, &tmpl)
	backendURL := fmt.Sprintf("http://%s.%s.svc.cluster.local:8080/mcp", naming.MCPServerServiceName("as-backend"), ns)
	port := startVMCP(t, env, ns, name, backendURL, backend.URL,
		wiring.AuthServerKeysMountPath, root+wiring.AuthServerKeysMountPath,
		wiring.AuthServerHMACMountPath, root+wiring.AuthServerHMACMountPath)
	waitServing(t, port)
	checkAuthServerMetadata(t, port, key)
	checkDelegationMetadata(t, port, []string{grantTokenExchange, grantJWTBearer}, false)
}

// checkDelegationMetadata reads the authorization server's metadata on
// loopback port: its grant types, in the server's order, and whether it
// supports client ID metadata documents.
func checkDelegationMetadata(t *testing.T, port int, grants []string, cimd bool) {
	t.Helper()
	var meta struct {
		GrantTypes []string `json:"grant_types_supported"`
		CIMD       bool     `json:"client_id_metadata_document_supported"`
	}
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/.well-known/oauth-authorization-server", port))
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&meta) == nil, nil
	}, "the authorization server's metadata")
	if !slices.Equal(meta.GrantTypes, grants) || meta.CIMD != cimd {
		t.Errorf("metadata: grant types %q, CIMD %v; want %q, %v", meta.GrantTypes, meta.CIMD, grants, cimd)
	}
}
