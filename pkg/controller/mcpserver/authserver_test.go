package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

const authServerJSON = `{"issuer":"https://auth.example.com","signingKeySecretRefs":[{"name":"keys","key":"current"},{"name":"keys","key":"old"}],` +
	`"hmacSecretRefs":[{"name":"hmac","key":"secret"}],"upstreamProviders":[{"name":"corp-idp","type":"oidc",` +
	`"oidcConfig":{"issuerUrl":"https://idp.example.com","clientId":"mcp","clientSecretRef":{"name":"idp","key":"secret"}}}]}`

func authServerConfig(name, raw string) *thv1.MCPExternalAuthConfig {
	return extAuthConfig(name, thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer,
		EmbeddedAuthServer: toolhivetest.Decode[thv1.EmbeddedAuthServerConfig](raw)})
}

func withAuthServer(s *thv1.MCPServer) {
	s.Spec.AuthServerRef = &thv1.AuthServerRef{Kind: thv1.KindMCPExternalAuthConfig, Name: "as"}
	s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "https://mcp.example.com", ResourceURL: "https://mcp.example.com"}
}

// An authServerRef is the RunConfig's embedded_auth_server_config, with
// the signing keys and HMAC secret as Secret files and the upstream
// client secret as a secretKeyRef variable where ToolHive's runner reads
// them; no secret is in the ConfigMap. A second sync writes nothing; a
// change of the config rolls the proxy once.
func TestAuthServerRef(t *testing.T) {
	f := newFixture(t, newServer("fetch", withAuthServer), authServerConfig("as", authServerJSON), newOIDCConfig("auth", true, true))
	f.converge("fetch")
	ctx := context.Background()
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(ctx, naming.RunConfigName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		AS json.RawMessage `json:"embedded_auth_server_config"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	want := `{"schema_version":"v0.1.0","issuer":"https://auth.example.com","signing_key_config":{"key_dir":"/etc/toolhive/authserver/keys",` +
		`"signing_key_file":"key-0.pem","fallback_key_files":["key-1.pem"]},"hmac_secret_files":["/etc/toolhive/authserver/hmac/hmac-0"],` +
		`"upstreams":[{"name":"corp-idp","type":"oidc","oidc_config":{"issuer_url":"https://idp.example.com","client_id":"mcp",` +
		`"client_secret_env_var":"TOOLHIVE_UPSTREAM_CLIENT_SECRET_CORP_IDP","redirect_uri":"https://mcp.example.com/oauth/callback"}}],` +
		`"allowed_audiences":["https://mcp.example.com"]}`
	var compact bytes.Buffer
	_ = json.Compact(&compact, rc.AS)
	if compact.String() != want {
		t.Errorf("embedded_auth_server_config = %s\nwant %s", rc.AS, want)
	}
	dep, _ := f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	pod := dep.Spec.Template.Spec
	env := pod.Containers[0].Env
	var found bool
	for _, e := range env {
		found = found || (e.Name == "TOOLHIVE_UPSTREAM_CLIENT_SECRET_CORP_IDP" && e.ValueFrom.SecretKeyRef.Name == "idp" && e.ValueFrom.SecretKeyRef.Key == "secret")
	}
	if !found {
		t.Errorf("env: %+v", env)
	}
	mounts := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath + ":" + m.SubPath
	}
	for name, want := range map[string]string{
		"authserver-signing-key-0": "/etc/toolhive/authserver/keys/key-0.pem:key-0.pem",
		"authserver-signing-key-1": "/etc/toolhive/authserver/keys/key-1.pem:key-1.pem",
		"authserver-hmac-secret-0": "/etc/toolhive/authserver/hmac/hmac-0:hmac-0",
	} {
		if mounts[name] != want {
			t.Errorf("mount %s = %q, want %q", name, mounts[name], want)
		}
	}
	for _, v := range pod.Volumes {
		if v.Name == "authserver-signing-key-1" && (v.Secret == nil || v.Secret.SecretName != "keys" || v.Secret.Items[0].Key != "old" || *v.Secret.DefaultMode != 0o400) {
			t.Errorf("volume %+v", v)
		}
	}
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if got.Status.AuthServerConfigHash != "h1" || !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionAuthServerRefValidated) ||
		meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionUnsupportedFields) != nil {
		t.Errorf("status %+v", got.Status)
	}
	if acts, err := f.sync("fetch"); err != nil || len(acts) != 0 {
		t.Fatalf("steady state: %v %s", err, describe(acts))
	}

	cfg, _ := f.th.ToolhiveV1beta1().MCPExternalAuthConfigs(testNS).Get(ctx, "as", metav1.GetOptions{})
	cfg.Spec.EmbeddedAuthServer = toolhivetest.Decode[thv1.EmbeddedAuthServerConfig](strings.Replace(authServerJSON, "auth.example.com", "login.example.com", 1))
	cfg.Status.ConfigHash = "h2"
	if _, err := f.th.ToolhiveV1beta1().MCPExternalAuthConfigs(testNS).Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch configmaps", "patch deployments", "patch mcpservers/status")
	f.refresh()
	if acts, err := f.sync("fetch"); err != nil || len(acts) != 0 {
		t.Fatalf("steady state after the change: %v %s", err, describe(acts))
	}
}

// The legacy path: an externalAuthConfigRef of type embeddedAuthServer
// wires the same server.
func TestAuthServerThroughExternalAuthConfigRef(t *testing.T) {
	f := newFixture(t, newServer("fetch", withAuthServer, func(s *thv1.MCPServer) {
		s.Spec.AuthServerRef = nil
		s.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "as"}
	}), authServerConfig("as", authServerJSON), newOIDCConfig("auth", true, true))
	f.converge("fetch")
	cm, _ := f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil || rc.EmbeddedAuthServerConfig == nil ||
		rc.EmbeddedAuthServerConfig.Issuer != "https://auth.example.com" ||
		// The reference names no scopes: the authorization server's defaults,
		// as ToolHive's RunConfig builder sets them.
		!slices.Equal(rc.OIDCConfig.Scopes, []string{"openid", "profile", "email", "offline_access"}) {
		t.Errorf("RunConfig: %v %s", err, cm.Data[schema.Key])
	}
}

// Every refusal is a condition with ToolHive's type and reason, Ready
// False, one Warning event, and no children; a second sync writes
// nothing.
func TestAuthServerRefRefusals(t *testing.T) {
	twoUpstreams := `{"issuer":"https://a.example.com","upstreamProviders":[{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"https://a","clientId":"x"}},` +
		`{"name":"b","type":"oidc","oidcConfig":{"issuerUrl":"https://b","clientId":"y"}}]}`
	for _, tc := range []struct {
		name          string
		mut           func(*thv1.MCPServer)
		cfg           *thv1.MCPExternalAuthConfig
		cond, reason  string
		wantInMessage string
	}{
		{"kind", func(s *thv1.MCPServer) { s.Spec.AuthServerRef.Kind = "MCPAuthServer" }, authServerConfig("as", authServerJSON),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidKind, `"MCPAuthServer"`},
		{"not found", nil, authServerConfig("other", authServerJSON),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefNotFound, `"as" not found`},
		{"type", nil, extAuthConfig("as", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidType, `type "unauthenticated"`},
		{"multi-upstream", nil, authServerConfig("as", twoUpstreams),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefMultiUpstream, "found 2"},
		{"unsupported", nil, authServerConfig("as", `{"issuer":"https://a.example.com","upstreamProviders":[{"name":"c","type":"saml"}]}`),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig, "spec.embeddedAuthServer.upstreamProviders[0].type=saml"},
		{"no OIDC", func(s *thv1.MCPServer) { s.Spec.OIDCConfigRef = nil }, authServerConfig("as", authServerJSON),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig, "needs spec.oidcConfigRef"},
		{"audience", func(s *thv1.MCPServer) { s.Spec.OIDCConfigRef.Audience = "mcp" }, authServerConfig("as", authServerJSON),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig, "must equal its resourceUrl"},
		{"conflict", func(s *thv1.MCPServer) { s.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "as"} }, authServerConfig("as", authServerJSON),
			thv1.ConditionReady, thv1.ReasonNotReady, "conflicts with spec.externalAuthConfigRef"},
		// ToolHive v0.63.0: the TLS listener's port is 8443.
		{"tls listener port", func(s *thv1.MCPServer) { s.Spec.ProxyPort = 8443 }, authServerConfig("as", strings.TrimSuffix(authServerJSON, "}")+
			`,"tlsListener":{"certificateSecretRef":{"name":"tls","key":"tls.crt"},"privateKeySecretRef":{"name":"tls","key":"tls.key"}}}`),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig, "proxyPort 8443 conflicts with the embedded auth server TLS listener port"},
		// ToolHive's operator runs the server's own check of its delegate
		// clients against the server's scopes and audience before deploying.
		{"delegate client audience", nil, authServerConfig("as", strings.TrimSuffix(authServerJSON, "}")+`,"delegateClients":[{"clientId":"agent",`+
			`"clientSecretRef":{"name":"dc","key":"s"},"scopes":["openid"],"audiences":["https://elsewhere"]}]}`),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig,
			`invalid embedded auth server delegate clients or trusted issuers: delegate_clients: client_id "agent": audience "https://elsewhere" is not in allowed_audiences`},
		{"spiffe", nil, authServerConfig("as", strings.TrimSuffix(authServerJSON, "}")+`,"spiffeTrustDomains":[{"name":"td","trustDomain":"example.org",`+
			`"methods":["spiffe_jwt"],"bundleSource":{"type":"file","file":{"configMapName":"b","configMapKey":"bundle.json"}}}]}`),
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig, "SPIFFE client authentication is not yet enforced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			muts := []func(*thv1.MCPServer){withAuthServer}
			if tc.mut != nil {
				muts = append(muts, tc.mut)
			}
			f := newFixture(t, newServer("fetch", muts...), tc.cfg, newOIDCConfig("auth", true, true))
			acts, err := f.sync("fetch")
			if err != nil {
				t.Fatal(err)
			}
			assertActions(t, acts, "patch mcpservers/status")
			got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			c := meta.FindStatusCondition(got.Status.Conditions, tc.cond)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.wantInMessage) {
				t.Errorf("%s: %+v", tc.cond, c)
			}
			if meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionReady) {
				t.Errorf("Ready: %+v", got.Status.Conditions)
			}
			if evs := f.Events(); len(evs) == 0 || !strings.HasPrefix(evs[0], "Warning ") {
				t.Errorf("events: %q", evs)
			}
			f.refresh()
			if acts, err := f.sync("fetch"); err != nil || len(acts) != 0 {
				t.Fatalf("second sync: %v %s", err, describe(acts))
			}
		})
	}
}
