package virtualmcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

func TestAuthServerConfigRendersAndMountsSecrets(t *testing.T) {
	v := newVMCP("agg", withAuthServer(authServerJSON), func(v *thv1.VirtualMCPServer) {
		v.Spec.IncomingAuth.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline,
			Inline: &thv1.InlineCedar{Policies: []string{"permit(principal, action, resource);"}}}
		// Inline, where ToolHive's operator names the subject provider
		// (in discovered mode vmcp does).
		v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Source: thv1.OutgoingAuthSourceInline,
			Default:  &thv1.BackendAuth{Type: thv1.BackendAuthTypeExternalAuthConfigRef, ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "exchange"}},
			Backends: map[string]thv1.BackendAuth{"a": {Type: thv1.BackendAuthTypeExternalAuthConfigRef, ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "own-subject"}}},
		}
	})
	f := newFixture(t, v, newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup),
		newExtAuth("exchange", tokenExchange), newExtAuth("own-subject", func(s *thv1.MCPExternalAuthConfigSpec) {
			tokenExchange(s)
			s.TokenExchange.SubjectProviderName = "github"
		}))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create secrets", "create serviceaccounts", "create rolebindings", "create configmaps", "create services",
		"create deployments", "patch virtualmcpservers/status")
	ctx := context.Background()
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// authserver-config.yaml, beside config.yaml, is ToolHive's authserver
	// RunConfig for the spec; it names files and variables, never secrets.
	var as schema.EmbeddedAuthServerConfig
	if err := yaml.UnmarshalStrict([]byte(cm.Data[naming.VMCPAuthServerConfigKey]), &as); err != nil {
		t.Fatalf("authserver-config.yaml: %v\n%s", err, cm.Data[naming.VMCPAuthServerConfigKey])
	}
	if as.Issuer != "https://idp.example.com" || !slices.Equal(as.AllowedAudiences, []string{vmcpResource}) ||
		!slices.Equal(as.ScopesSupported, []string{"openid", "offline_access"}) || as.SchemaVersion != schema.AuthServerSchemaVersion ||
		as.SigningKeyConfig == nil || as.SigningKeyConfig.SigningKeyFile != "key-0.pem" || !slices.Equal(as.SigningKeyConfig.FallbackKeyFiles, []string{"key-1.pem"}) ||
		!slices.Equal(as.HMACSecretFiles, []string{"/etc/toolhive/authserver/hmac/hmac-0"}) || as.TokenLifespans.AccessTokenLifespan != "30m" ||
		len(as.Upstreams) != 2 {
		t.Fatalf("authserver-config.yaml: %+v", as)
	}
	up := as.Upstreams[0].OIDCConfig
	if as.Upstreams[0].Name != "corp-idp" || up.ClientSecretEnvVar != "TOOLHIVE_UPSTREAM_CLIENT_SECRET_CORP_IDP" ||
		up.RedirectURI != vmcpResource+"/oauth/callback" || as.Upstreams[1].OIDCConfig.ClientSecretEnvVar != "" {
		t.Errorf("upstreams: %+v %+v", as.Upstreams[0], as.Upstreams[1].OIDCConfig)
	}

	// config.yaml: token exchange without a subject provider exchanges the
	// first upstream's token, one that names its own keeps it; Cedar reads
	// the first upstream's claims.
	var cfg struct {
		IncomingAuth thv1.VMCPIncomingAuth `json:"incomingAuth"`
		OutgoingAuth struct {
			Default  thv1.VMCPBackendAuthStrategy            `json:"default"`
			Backends map[string]thv1.VMCPBackendAuthStrategy `json:"backends"`
		} `json:"outgoingAuth"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data[naming.VMCPConfigKey]), &cfg); err != nil {
		t.Fatal(err)
	}
	if got := cfg.OutgoingAuth.Default.TokenExchange.SubjectProviderName; got != "corp-idp" {
		t.Errorf("default subjectProviderName %q", got)
	}
	if got := cfg.OutgoingAuth.Backends["a"].TokenExchange.SubjectProviderName; got != "github" {
		t.Errorf("backend a subjectProviderName %q", got)
	}
	if cfg.IncomingAuth.Authz == nil || cfg.IncomingAuth.Authz.PrimaryUpstreamProvider != "corp-idp" {
		t.Errorf("authz %+v", cfg.IncomingAuth.Authz)
	}

	// The pod: one Secret volume per key file, mounted where the config
	// names it, and the client secret from its Secret.
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	secretOf := map[string]string{}
	for _, vol := range pod.Volumes {
		if vol.Secret != nil {
			secretOf[vol.Name] = vol.Secret.SecretName + "/" + vol.Secret.Items[0].Key
		}
	}
	want := map[string]string{"authserver-signing-key-0": "keys/k0", "authserver-signing-key-1": "keys/k1", "authserver-hmac-secret-0": "hmac/h"}
	for name, s := range want {
		if secretOf[name] != s {
			t.Errorf("volume %s: %q, want %q (all: %v)", name, secretOf[name], s, secretOf)
		}
	}
	mounts := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["authserver-signing-key-1"] != "/etc/toolhive/authserver/keys/key-1.pem" || mounts["authserver-hmac-secret-0"] != "/etc/toolhive/authserver/hmac/hmac-0" ||
		mounts[naming.VMCPConfigVolume] != naming.VMCPConfigMountPath {
		t.Errorf("mounts %v", mounts)
	}
	var clientSecret *corev1.EnvVar
	for i, e := range pod.Containers[0].Env {
		if e.Name == "TOOLHIVE_UPSTREAM_CLIENT_SECRET_CORP_IDP" {
			clientSecret = &pod.Containers[0].Env[i]
		}
	}
	if clientSecret == nil || clientSecret.ValueFrom == nil || clientSecret.ValueFrom.SecretKeyRef.Name != "corp" || clientSecret.ValueFrom.SecretKeyRef.Key != "secret" {
		t.Errorf("client secret env %+v", clientSecret)
	}
	for k, data := range cm.Data {
		if strings.Contains(data, "secretKeyRef") || strings.Contains(data, "clientSecretRef") {
			t.Errorf("%s carries a secret reference:\n%s", k, data)
		}
	}

	got := f.get("agg")
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionAuthServerConfigValidated); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != thv1.ReasonAuthServerConfigValid {
		t.Errorf("AuthServerConfigValidated %+v", c)
	}

	// Converged: the next syncs write nothing.
	f.ApplyServerBehaviour()
	f.Refresh()
	for i := range 2 {
		if acts, err := f.sync("agg"); err != nil || len(acts) != 0 {
			t.Fatalf("round %d: %v %s", i, err, wt.Describe(acts))
		}
	}

	// Removing the server drops its key, volumes and variables and the
	// condition, rolling the vMCP once.
	f.update("agg", func(v *thv1.VirtualMCPServer) { v.Spec.AuthServerConfig = nil })
	acts, err = f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments", "patch virtualmcpservers/status")
	cm, _ = f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
	if _, ok := cm.Data[naming.VMCPAuthServerConfigKey]; ok || strings.Contains(cm.Data[naming.VMCPConfigKey], "corp-idp") {
		t.Errorf("the authorization server is still configured:\n%v", cm.Data)
	}
	if c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionAuthServerConfigValidated); c != nil {
		t.Errorf("AuthServerConfigValidated stays: %+v", c)
	}
}

// What ToolHive's operator refuses, and what hivekeeper does not apply,
// refuses the vMCP: AuthServerConfigValidated=False, Ready=False with the
// same reason, one Warning event, nothing written but the status.
func TestAuthServerConfigRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		mut       func(*thv1.VirtualMCPServer)
		inMessage string
	}{
		{"no issuer", `{"upstreamProviders":[{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"https://a","clientId":"c"}}]}`, nil,
			"spec.authServerConfig.issuer is required"},
		{"http issuer", `{"issuer":"http://idp.example.com","upstreamProviders":[{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"https://a","clientId":"c"}}]}`, nil,
			"uses http:// with a non-localhost host"},
		{"no upstream", `{"issuer":"https://idp.example.com"}`, nil, "requires at least one upstream provider"},
		{"unsupported", `{"issuer":"https://idp.example.com","upstreamProviders":[{"name":"a","type":"saml"}]}`, nil,
			"not supported by hivekeeper: spec.authServerConfig.upstreamProviders[0].type=saml"},
		{"reserved parameter", strings.Replace(authServerJSON, `"clientId":"gh"`, `"clientId":"gh","additionalAuthorizationParams":{"state":"x","prompt":"login"}`, 1), nil,
			`spec.authServerConfig.upstreamProviders[1].additionalAuthorizationParams: reserved parameter "state"`},
		{"issuer mismatch", strings.Replace(authServerJSON, "https://idp.example.com", "https://login.example.com", 1), nil,
			`auth server issuer mismatch: auth server issuer "https://login.example.com" != incomingAuth.oidc.issuer "https://idp.example.com"`},
		{"audience", authServerJSON, func(v *thv1.VirtualMCPServer) { v.Spec.IncomingAuth.OIDCConfigRef.Audience = "other" },
			`incomingAuth.oidc.audience "other" not in auth server's allowed audiences`},
		{"anonymous", authServerJSON, func(v *thv1.VirtualMCPServer) {
			v.Spec.IncomingAuth = thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous}
		},
			"requires incomingAuth type oidc"},
		// spec.authServerUpstreamFilter, checked as ToolHive v0.63.0's
		// operator checks it, before the integration checks.
		{"filter naming the first upstream", strings.Replace(authServerJSON, "https://idp.example.com", "https://login.example.com", 1),
			withFilter(thv1.UpstreamFilterGroupRule{Groups: []string{"eng"}, UpstreamProviders: []string{"corp-idp"}}),
			`spec.authServerUpstreamFilter: rules[0].upstreamProviders: must not reference the mandatory first upstream "corp-idp"`},
		{"filter naming an unknown upstream", authServerJSON,
			withFilter(thv1.UpstreamFilterGroupRule{Groups: []string{"eng"}, UpstreamProviders: []string{"gitlab"}}),
			`spec.authServerUpstreamFilter: rules[0].upstreamProviders: "gitlab" is not a configured upstream`},
		{"filter with a duplicate group", authServerJSON,
			withFilter(thv1.UpstreamFilterGroupRule{Groups: []string{"eng", "eng"}, UpstreamProviders: []string{"github"}}),
			"spec.authServerUpstreamFilter: rules[0]: groups must not contain duplicate values"},
		{"filter with an empty default", authServerJSON, func(v *thv1.VirtualMCPServer) {
			withFilter(thv1.UpstreamFilterGroupRule{Groups: []string{"eng"}, UpstreamProviders: []string{"github"}})(v)
			v.Spec.AuthServerUpstreamFilter.DefaultUpstreams = []string{""}
		}, "spec.authServerUpstreamFilter: defaultUpstreams: must not contain empty values"},
		{"filter with one upstream", `{"issuer":"https://idp.example.com","upstreamProviders":[{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"https://a","clientId":"c"}}]}`,
			withFilter(thv1.UpstreamFilterGroupRule{Groups: []string{"eng"}, UpstreamProviders: []string{"a"}}),
			"spec.authServerUpstreamFilter: group-based upstream filter requires at least two configured upstreams, got 1"},
		{"filter without a server", authServerJSON, func(v *thv1.VirtualMCPServer) {
			withFilter(thv1.UpstreamFilterGroupRule{Groups: []string{"eng"}, UpstreamProviders: []string{"github"}})(v)
			v.Spec.AuthServerConfig = nil
		}, "spec.authServerUpstreamFilter requires spec.authServerConfig to be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVMCP("agg", withAuthServer(tc.raw))
			if tc.mut != nil {
				tc.mut(v)
			}
			f := newFixture(t, v, newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
			acts, err := f.sync("agg")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "patch virtualmcpservers/status")
			got := f.get("agg")
			for _, typ := range []string{thv1.ConditionAuthServerConfigValidated, thv1.ConditionReady} {
				c := meta.FindStatusCondition(got.Status.Conditions, typ)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonAuthServerConfigInvalid || !strings.Contains(c.Message, tc.inMessage) {
					t.Errorf("%s: %+v, want a message with %q", typ, c, tc.inMessage)
				}
			}
			if got.Status.Phase != thv1.VirtualMCPServerPhaseFailed {
				t.Errorf("phase %q", got.Status.Phase)
			}
			// One refusal event (the legacy grant advisory may add its own).
			if evs := withoutGrantAdvisory(f.Events()); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonAuthServerConfigInvalid) {
				t.Errorf("events %v", evs)
			}
			f.Refresh()
			if acts, err := f.sync("agg"); err != nil || len(acts) != 0 || len(f.Events()) != 0 {
				t.Errorf("second sync: %v %s", err, wt.Describe(acts))
			}
		})
	}
}

// The replaced sections of spec.config are reported, once, and the vMCP
// still runs; the condition goes with the fields.
func TestVMCPUnsupportedFields(t *testing.T) {
	v := newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](`{"telemetry":{"endpoint":"otel:4317"},"aggregation":{"conflictResolution":"prefix"}}`)
	})
	f := newFixture(t, v, toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "create secrets", "create serviceaccounts", "create rolebindings", "create configmaps",
		"create services", "create deployments", "patch virtualmcpservers/status")
	c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionUnsupportedFields)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != thv1.ReasonFieldsNotSupported ||
		!strings.HasSuffix(c.Message, ": spec.config.telemetry (replaced by spec.telemetryConfigRef)") {
		t.Errorf("UnsupportedFields %+v", c)
	}
	if evs := f.Warnings(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonFieldsNotSupported) {
		t.Errorf("events %v", evs)
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	if acts, err := f.sync("agg"); err != nil || len(acts) != 0 || len(f.Events()) != 0 {
		t.Fatalf("second sync: %v %s", err, wt.Describe(acts))
	}

	f.update("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](`{"aggregation":{"conflictResolution":"prefix"}}`)
	})
	acts, err = f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	if c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionUnsupportedFields); c != nil {
		t.Errorf("UnsupportedFields stays: %+v", c)
	}
	if len(f.Events()) != 0 {
		t.Errorf("an event for removing the field")
	}
}

// withFilter sets spec.authServerUpstreamFilter with the rules.
func withFilter(rules ...thv1.UpstreamFilterGroupRule) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) {
		v.Spec.AuthServerUpstreamFilter = &thv1.AuthServerUpstreamFilterConfig{Rules: rules}
	}
}

// spec.authServerUpstreamFilter reaches authserver-config.yaml as ToolHive
// v0.63.0's operator writes it, under upstream_filter after the
// upstreams, with the spec's keys; config.yaml does not change. Removing
// it rewrites the file and rolls the vMCP once.
func TestAuthServerUpstreamFilterRendered(t *testing.T) {
	v := newVMCP("agg", withAuthServer(authServerJSON), func(v *thv1.VirtualMCPServer) {
		withFilter(thv1.UpstreamFilterGroupRule{Groups: []string{"eng", "ops"}, UpstreamProviders: []string{"github"}})(v)
		v.Spec.AuthServerUpstreamFilter.Claim = "roles"
		v.Spec.AuthServerUpstreamFilter.DefaultUpstreams = []string{"github"}
	})
	f := newFixture(t, v, newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	data := func() map[string]string {
		cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), "agg-vmcp-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	before := data()
	as := before[naming.VMCPAuthServerConfigKey]
	want := "upstream_filter:\n    claim: roles\n    rules:\n        - groups:\n            - eng\n            - ops\n          upstreamProviders:\n            - github\n    defaultUpstreams:\n        - github\n"
	if !strings.Contains(as, want) || strings.Index(as, "upstreams:") > strings.Index(as, "upstream_filter:") {
		t.Fatalf("authserver-config.yaml:\n%s", as)
	}
	if c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionAuthServerConfigValidated); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("AuthServerConfigValidated: %+v", c)
	}
	f.update("agg", func(v *thv1.VirtualMCPServer) { v.Spec.AuthServerUpstreamFilter = nil })
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments", "patch virtualmcpservers/status")
	after := data()
	if after[naming.VMCPConfigKey] != before[naming.VMCPConfigKey] || strings.Contains(after[naming.VMCPAuthServerConfigKey], "upstream_filter") {
		t.Errorf("after removing the filter:\n%s", after[naming.VMCPAuthServerConfigKey])
	}
}

// A VirtualMCPServer with its own authorization server carries ToolHive's
// two advisories: DeprecatedInboundGrantConfiguration (with one Warning
// event when it turns True) and IdentitySynthesized (an OAuth2 upstream
// without userInfo); both go with the server.
func TestAuthServerAdvisories(t *testing.T) {
	const legacy = `{"issuer":"https://idp.example.com","upstreamProviders":[` +
		`{"name":"gh","type":"oauth2","oauth2Config":{"authorizationEndpoint":"https://gh/authorize","tokenEndpoint":"https://gh/token","clientId":"c"}}],` +
		`"trustedIssuers":[{"name":"corp","issuerUrl":"https://corp.example.com","expectedAudience":"https://mcp.example.com"}]}`
	f := newFixture(t, newVMCP("agg", withAuthServer(legacy)), newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	if _, err := f.sync("agg"); err != nil {
		t.Fatal(err)
	}
	st := f.get("agg").Status
	want := map[string]string{
		wiring.ConditionDeprecatedInboundGrantConfig: "True " + wiring.ReasonLegacyInboundGrantFields +
			" Deprecated inbound grant fields are configured: spec.authServerConfig.trustedIssuers[0].expectedAudience -> " +
			"spec.authServerConfig.inboundGrants.tokenExchange.issuerPolicies",
		wiring.ConditionIdentitySynthesized: "True " + wiring.ReasonIdentitySynthesizedActive +
			" OAuth2 upstream(s) [gh] have no userInfo configured; the embedded auth server will synthesize a non-PII subject " +
			"from the access token (no Name/Email claims). If a userInfo endpoint exists for these upstreams, configure it to resolve real identity.",
	}
	for typ, w := range want {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil || string(c.Status)+" "+c.Reason+" "+c.Message != w {
			t.Errorf("%s: %+v\nwant %s", typ, c, w)
		}
	}
	if n := len(slices.DeleteFunc(f.Events(), func(e string) bool {
		return !strings.HasPrefix(e, "Warning "+wiring.ReasonInboundGrantsLegacyFieldsDeprecated)
	})); n != 1 {
		t.Errorf("%d deprecation events, want 1", n)
	}
	f.Refresh()
	if _, err := f.sync("agg"); err != nil {
		t.Fatal(err)
	}
	if evs := f.Events(); len(evs) != 0 {
		t.Errorf("second sync: events %v, want none (the advisory was True already)", evs)
	}

	f.update("agg", func(v *thv1.VirtualMCPServer) { v.Spec.AuthServerConfig = nil })
	if _, err := f.sync("agg"); err != nil {
		t.Fatal(err)
	}
	for typ := range want {
		if c := meta.FindStatusCondition(f.get("agg").Status.Conditions, typ); c != nil {
			t.Errorf("%s kept without a server: %+v", typ, c)
		}
	}
}

// withoutGrantAdvisory drops the legacy inbound grant advisory's event
// from evs, for tests about the events of a refusal.
func withoutGrantAdvisory(evs []string) []string {
	return slices.DeleteFunc(evs, func(e string) bool {
		return strings.HasPrefix(e, "Warning "+wiring.ReasonInboundGrantsLegacyFieldsDeprecated)
	})
}
