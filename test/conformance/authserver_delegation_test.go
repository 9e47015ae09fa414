package conformance_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	p := newAuthServerProxy(t, nil)
	p.apply(t, "testdata/runtime/embedded-auth-server-delegation.yaml", nil)
	const name = "delegating-proxy"

	root, _, _ := p.files(t, name)
	port := p.run(t, name, root)
	checkAuthServerMetadata(t, port, p.key)
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

// authServerRedisPassword is the password of the test's Redis, which the
// Secret as-secrets carries for the authorization server's ACL user.
const authServerRedisPassword = "not-a-real-auth-server-redis-password"

// TestRemoteProxyEmbeddedAuthServerRedisAndSPIFFE starts ToolHive's runner
// on what hivekeeper wrote for an authorization server that keeps its
// state in Redis and trusts a SPIFFE trust bundle from a ConfigMap: the
// runner reaches the test's Redis, which refuses clients without the
// password, as the ACL user of the secretKeyRef variables; it loads the
// generated bundle from the file of the ConfigMap volume and refuses to
// start unless it holds a JWT authority of the trust domain. It then
// serves the authorization server's metadata.
func TestRemoteProxyEmbeddedAuthServerRedisAndSPIFFE(t *testing.T) {
	p := newAuthServerProxy(t, nil)
	redis := startRedis(t, authServerRedisPassword)
	createSPIFFEBundle(t, p.env, p.ns, "as-spiffe-bundle")
	p.apply(t, "testdata/runtime/embedded-auth-server-redis-spiffe.yaml", map[string]string{"REDIS_ADDR": redis})
	const name = "production-proxy"

	root, _, configMaps := p.files(t, name)
	if configMaps != 1 {
		t.Fatalf("%d ConfigMap files mounted, want the trust bundle", configMaps)
	}
	checkAuthServerMetadata(t, p.run(t, name, root), p.key)
}

// createSPIFFEBundle creates the ConfigMap name whose key bundle.json is
// a SPIFFE trust bundle of example.org holding one generated JWT-SVID
// authority.
func createSPIFFEBundle(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"use": "jwt-svid", "kty": "EC", "crv": "P-256", "kid": "conformance",
		"x": b64(k.X.FillBytes(make([]byte, 32))), "y": b64(k.Y.FillBytes(make([]byte, 32))),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"bundle.json": string(bundle)}}
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// configMapFiles writes the files a pod would see of the ConfigMap
// volumes of the pod template tmpl (its first container's mounts, of a
// directory or of one item as a subPath) under root, and returns how many
// it wrote.
func configMapFiles(t *testing.T, env *framework.Env, ns string, tmpl *corev1.PodTemplateSpec, root string) int {
	t.Helper()
	n := 0
	for _, v := range tmpl.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tmpl.Spec.Containers[0].VolumeMounts {
			if m.Name != v.Name {
				continue
			}
			for _, item := range v.ConfigMap.Items {
				file := filepath.Join(root, m.MountPath, item.Path)
				if m.SubPath != "" {
					if item.Path != m.SubPath {
						continue
					}
					file = filepath.Join(root, m.MountPath)
				}
				if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(cm.Data[item.Key]), 0o444); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	return n
}
