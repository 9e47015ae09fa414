package wiring

import (
	"errors"
	"strings"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
)

// An upstream, so only the check under test can refuse the config.
const checksUpstream = `"upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp","clientId":"c"}}]`

// authServerCheckCases are configs ToolHive v0.66.0's operator refuses
// (MCPExternalAuthConfig Valid=False, and a workload using them is not
// deployed), each with its message.
var authServerCheckCases = []struct{ name, raw, want string }{
	{"duplicate issuer url", `"trustedIssuers":[{"issuerUrl":"https://corp","expectedAudience":"a","allowedDelegateClients":["*"]},` +
		`{"issuerUrl":"https://corp","expectedAudience":"b","allowedDelegateClients":["*"]}]`,
		"trustedIssuers[1].issuerUrl duplicates trustedIssuers[0].issuerUrl"},
	{"duplicate issuer name", `"trustedIssuers":[{"name":"c","issuerUrl":"https://corp"},{"name":"c","issuerUrl":"https://other"}]`,
		`trustedIssuers[1].name duplicates trustedIssuers[0].name "c"`},
	{"token exchange with legacy delegate clients", `"delegateClients":[{"clientId":"a","clientSecretRef":{"name":"s","key":"k"},"scopes":["openid"],"audiences":["https://mcp"]}],` +
		`"inboundGrants":{"tokenExchange":{}}`,
		"inboundGrants.tokenExchange conflicts with legacy delegateClients or RFC 8693 policy in trustedIssuers"},
	{"jwt bearer with legacy jwtBearerGrant", `"trustedIssuers":[{"name":"c","issuerUrl":"https://corp","jwtBearerGrant":{"maxAssertionAge":"1m",` +
		`"subjectBindings":[{"subject":"s","allowedResources":["https://mcp"]}]}}],"inboundGrants":{"jwtBearer":{}}`,
		"inboundGrants.jwtBearer conflicts with legacy trustedIssuers[*].jwtBearerGrant"},
	{"issuer policy without issuerRef", `"inboundGrants":{"tokenExchange":{"issuerPolicies":[{"issuerRef":"","expectedAudience":"a","allowedDelegateClients":["*"]}]}}`,
		"inboundGrants.tokenExchange.issuerPolicies[0].issuerRef is required"},
	{"issuer policy of an unknown issuer", `"inboundGrants":{"tokenExchange":{"issuerPolicies":[{"issuerRef":"nope","expectedAudience":"a","allowedDelegateClients":["*"]}]}}`,
		`inboundGrants.tokenExchange.issuerPolicies[0].issuerRef references unknown or unnamed trusted issuer "nope"`},
	{"two policies of one issuer", `"trustedIssuers":[{"name":"c","issuerUrl":"https://corp"}],"inboundGrants":{"jwtBearer":{"issuerPolicies":[` +
		`{"issuerRef":"c","maxAssertionAge":"1m","subjectBindings":[{"subject":"s","allowedResources":["https://mcp"]}]},` +
		`{"issuerRef":"c","maxAssertionAge":"1m","subjectBindings":[{"subject":"s","allowedResources":["https://mcp"]}]}]}}`,
		`inboundGrants.jwtBearer.issuerPolicies[1].issuerRef duplicates issuer policy [0] for "c"`},
	{"jwt bearer policy without maxAssertionAge", `"inboundGrants":{"jwtBearer":{"issuerPolicies":[{"issuerRef":"c","subjectBindings":[]}]}}`,
		"inboundGrants.jwtBearer.issuerPolicies[0].maxAssertionAge is required"},
	{"confidential clients with insecureAllowHTTP", `"insecureAllowHTTP":true,"allowConfidentialClientRegistration":true`,
		"confidential clients (allow_confidential_client_registration or delegate clients) cannot be combined with insecure_allow_http: " +
			"client credentials, authorization codes and tokens would cross cleartext HTTP"},
	{"trusted issuer without expected audience", `"trustedIssuers":[{"issuerUrl":"https://corp"}]`,
		`trustedIssuers: issuer_url "https://corp": expected_audience is required when JWT-bearer grant is disabled`},
	{"trusted issuer over http", `"trustedIssuers":[{"issuerUrl":"http://corp","expectedAudience":"a","allowedDelegateClients":["*"]}]`,
		"trustedIssuers: scheme must be https (or http with insecure_allow_http)"},
	{"trusted issuer is the server", `"trustedIssuers":[{"issuerUrl":"https://auth","expectedAudience":"a","allowedDelegateClients":["*"]}]`,
		`trustedIssuers: issuer_url "https://auth": must not equal the authorization server's own issuer; self-issued tokens are already handled separately`},
	{"trusted issuer without allowed delegate clients", `"trustedIssuers":[{"issuerUrl":"https://corp","expectedAudience":"a"}]`,
		`trustedIssuers: issuer_url "https://corp": allowed_delegate_clients is required`},
	{"allowMayAct with the wildcard", `"trustedIssuers":[{"issuerUrl":"https://corp","expectedAudience":"a","allowedDelegateClients":["*"],"allowMayAct":true}]`,
		`trustedIssuers: issuer_url "https://corp": allow_may_act must not be enabled when allowed_delegate_clients contains the wildcard "*"`},
	{"jwt bearer grant without subject bindings", `"trustedIssuers":[{"issuerUrl":"https://corp","jwtBearerGrant":{"maxAssertionAge":"1m","subjectBindings":[]}}]`,
		`trustedIssuers: issuer_url "https://corp": jwt_bearer_grant.subject_bindings is required`},
	{"actor claim the server reads itself", `"trustedIssuers":[{"issuerUrl":"https://corp","expectedAudience":"a","allowedDelegateClients":["*"],"actorClaim":"sub"}]`,
		`trustedIssuers: issuer_url "https://corp": actor_claim "sub" is not supported`},
}

// The config-level checks: each case is refused by the
// MCPExternalAuthConfig's validation with ToolHive's message, and a valid
// config with the same features is not.
func TestValidateEmbeddedAuthServerGrants(t *testing.T) {
	for _, tc := range authServerCheckCases {
		c := embeddedConfig(t, `{"issuer":"https://auth",`+checksUpstream+`,`+tc.raw+`}`).Spec.EmbeddedAuthServer
		errs := ValidateEmbeddedAuthServer(c)
		if len(errs) != 1 || !strings.Contains(errs[0], "spec.embeddedAuthServer: "+tc.want) {
			t.Errorf("%s: %q, want one with %q", tc.name, errs, tc.want)
		}
	}
	valid := `{"issuer":"https://auth",` + checksUpstream + `,"allowConfidentialClientRegistration":true,` +
		`"forceConfidentialRedirectUris":["https://app.example.com/cb"],` +
		`"trustedIssuers":[{"name":"c","issuerUrl":"https://corp"},{"name":"d","issuerUrl":"http://in.cluster","insecureAllowHTTP":true}],` +
		`"inboundGrants":{"tokenExchange":{"delegateClients":[{"clientId":"a","clientSecretRef":{"name":"s","key":"k"},"scopes":["openid"],"audiences":["https://mcp"]}],` +
		`"issuerPolicies":[{"issuerRef":"c","expectedAudience":"https://auth","allowedDelegateClients":["a"]}]},` +
		`"jwtBearer":{"issuerPolicies":[{"issuerRef":"d","maxAssertionAge":"5m","subjectBindings":[{"subject":"svc","allowedResources":["https://mcp"]}]}]}}}`
	if errs := ValidateEmbeddedAuthServer(embeddedConfig(t, valid).Spec.EmbeddedAuthServer); len(errs) != 0 {
		t.Errorf("valid config: %q", errs)
	}
}

// Confidential clients over plain HTTP: only on a loopback issuer, and
// only with the loopback opt-in.
func TestConfidentialClientTransport(t *testing.T) {
	const who = "confidential clients (allow_confidential_client_registration or delegate clients) "
	for _, tc := range []struct {
		issuer                 string
		confidential, insecure bool
		loopbackOptIn          bool
		want                   string
	}{
		{"http://auth", false, true, false, ""},
		{"https://auth", true, false, false, ""},
		{"http://localhost:8080", true, false, true, ""},
		{"http://[::1]:8080", true, false, true, ""},
		{"http://auth", true, true, false, who + "cannot be combined with insecure_allow_http"},
		{"http://auth", true, false, false, who + "cannot use a plain-HTTP non-loopback issuer"},
		{"http://auth", true, false, true, who + "cannot use the loopback HTTP opt-in with a non-loopback issuer"},
		{"http://127.0.0.1:8080", true, false, false, who + "cannot be combined with a plain-HTTP loopback issuer unless insecure_allow_confidential_over_loopback_http is set"},
		{"http://localhost/?x=1", true, false, true, "confidential clients require a valid issuer URL"},
	} {
		err := confidentialClientTransport(tc.confidential, tc.insecure, tc.issuer, tc.loopbackOptIn)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}

// forceConfidentialRedirectUris: only with confidential registration, and
// never a loopback or plain-HTTP URI.
func TestForceConfidentialRedirectURIs(t *testing.T) {
	const base = `{"issuer":"https://auth",` + checksUpstream
	for raw, want := range map[string]string{
		`,"forceConfidentialRedirectUris":["https://app/cb"]}`: "spec.embeddedAuthServer: force_confidential_redirect_uris requires allow_confidential_client_registration to be true",
		`,"allowConfidentialClientRegistration":true,"forceConfidentialRedirectUris":["http://localhost:3000/cb"]}`: `spec.embeddedAuthServer: force_confidential_redirect_uris: "http://localhost:3000/cb" must not be a loopback redirect URI; ` +
			"a loopback client is a public client by construction and must not be issued a secret",
		`,"allowConfidentialClientRegistration":true,"forceConfidentialRedirectUris":["http://app/cb"]}`:    `spec.embeddedAuthServer: force_confidential_redirect_uris: "http://app/cb": redirect_uri must use http (for loopback) or https scheme`,
		`,"allowConfidentialClientRegistration":true,"forceConfidentialRedirectUris":["https://app/cb#x"]}`: `spec.embeddedAuthServer: force_confidential_redirect_uris: "https://app/cb#x": redirect_uri must be an absolute URI without a fragment`,
		`,"allowConfidentialClientRegistration":true,"forceConfidentialRedirectUris":["/cb"]}`:              `spec.embeddedAuthServer: force_confidential_redirect_uris: "/cb": redirect_uri must be an absolute URI without a fragment`,
	} {
		errs := ValidateEmbeddedAuthServer(embeddedConfig(t, base+raw).Spec.EmbeddedAuthServer)
		if len(errs) != 1 || errs[0] != want {
			t.Errorf("%s: %q, want %q", raw, errs, want)
		}
	}
}

// A workload that uses one of these configs is refused with ToolHive's
// message: an MCPServer's or MCPRemoteProxy's through its reference, a
// vMCP's spec.authServerConfig with AuthServerConfigValidated.
func TestAuthServerGrantChecksRefuseWorkloads(t *testing.T) {
	oidc := &ResolvedOIDC{Issuer: "https://auth", Audience: "https://mcp", ResourceURL: "https://mcp", Scopes: []string{"openid"}}
	for _, tc := range authServerCheckCases {
		raw := `{"issuer":"https://auth",` + checksUpstream + `,` + tc.raw + `}`
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, embeddedConfig(t, raw), nil, oidc, 8080, release.Releases[0])
		var invalid *InvalidSpecError
		want := "Failed to build configuration: failed to build embedded auth server config: " + tc.want
		if !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionAuthServerRefValidated ||
			invalid.Reason != thv1.ReasonAuthServerRefInvalidConfig || !strings.HasPrefix(invalid.Message, want) {
			t.Errorf("%s: MCPServer: %v, want %q", tc.name, err, want)
		}
		_, err = InlineAuthServer(testOwner, embeddedConfig(t, raw).Spec.EmbeddedAuthServer, nil, oidc, release.Releases[0])
		want = "spec.authServerConfig: " + tc.want
		if !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionAuthServerConfigValidated ||
			invalid.Reason != thv1.ReasonAuthServerConfigInvalid || !strings.HasPrefix(invalid.Message, want) {
			t.Errorf("%s: vMCP: %v, want %q", tc.name, err, want)
		}
	}
}

// What ToolHive's operator checks last, against the scopes and audience
// the workload gives the server: a workload is refused with its message
// (the config itself is valid).
func TestRuntimeGrantChecksRefuseWorkloads(t *testing.T) {
	oidc := &ResolvedOIDC{Issuer: "https://auth", Audience: "https://mcp", ResourceURL: "https://mcp", Scopes: []string{"openid", "offline_access"}}
	const wrap = "invalid embedded auth server delegate clients or trusted issuers: "
	client := func(id, scopes, audiences string) string {
		return `{"clientId":"` + id + `","clientSecretRef":{"name":"s","key":"k"},"scopes":` + scopes + `,"audiences":` + audiences + `}`
	}
	for _, tc := range []struct{ name, raw, want string }{
		{"scope not supported", `"delegateClients":[` + client("a", `["openid","tools"]`, `["https://mcp"]`) + `]`,
			`delegate_clients[a].scopes contains "tools" which is not in scopes_supported`},
		{"audience not allowed", `"delegateClients":[` + client("a", `["openid"]`, `["https://other"]`) + `]`,
			`delegate_clients: client_id "a": audience "https://other" is not in allowed_audiences`},
		{"no scopes", `"delegateClients":[` + client("a", `[]`, `["https://mcp"]`) + `]`,
			`delegate_clients: client_id "a": scopes is required`},
		{"no audiences", `"inboundGrants":{"tokenExchange":{"delegateClients":[` + client("a", `["openid"]`, `[]`) + `]}}`,
			`delegate_clients: client_id "a": audiences is required unless token_exchange.exchange_refresh_tokens is set`},
		{"duplicate client", `"delegateClients":[` + client("a", `["openid"]`, `["https://mcp"]`) + `,` + client("a", `["openid"]`, `["https://mcp"]`) + `]`,
			`delegate_clients: duplicate client_id "a"`},
		{"client id that is a URL", `"delegateClients":[` + client("https://agent.example.com", `["openid"]`, `["https://mcp"]`) + `]`,
			`delegate_clients: client_id "https://agent.example.com" looks like a CIMD client metadata URL`},
		{"accepted audience that is the resource", `"trustedIssuers":[{"issuerUrl":"https://corp","jwtBearerGrant":{"maxAssertionAge":"1m",` +
			`"subjectBindings":[{"subject":"s","allowedResources":["https://mcp"]}],"acceptedAudiences":["https://mcp"]}}]`,
			`issuer_url "https://corp": jwt_bearer_grant.accepted_audiences value "https://mcp" must not also be a configured resource audience`},
	} {
		raw := `{"issuer":"https://auth",` + checksUpstream + `,` + tc.raw + `}`
		if errs := ValidateEmbeddedAuthServer(embeddedConfig(t, raw).Spec.EmbeddedAuthServer); len(errs) != 0 {
			t.Errorf("%s: the config is valid, got %q", tc.name, errs)
		}
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, embeddedConfig(t, raw), nil, oidc, 8080, release.Releases[0])
		var invalid *InvalidSpecError
		want := "Failed to build configuration: failed to build embedded auth server config: " + wrap + tc.want
		if !errors.As(err, &invalid) || invalid.Reason != thv1.ReasonAuthServerRefInvalidConfig || !strings.HasPrefix(invalid.Message, want) {
			t.Errorf("%s: MCPServer: %v, want %q", tc.name, err, want)
		}
		_, err = InlineAuthServer(testOwner, embeddedConfig(t, raw).Spec.EmbeddedAuthServer, nil, oidc, release.Releases[0])
		want = "spec.authServerConfig: " + wrap + tc.want
		if !errors.As(err, &invalid) || invalid.Reason != thv1.ReasonAuthServerConfigInvalid || !strings.HasPrefix(invalid.Message, want) {
			t.Errorf("%s: vMCP: %v, want %q", tc.name, err, want)
		}
	}
	// Without scopes the server supports its defaults.
	raw := `{"issuer":"https://auth",` + checksUpstream + `,"delegateClients":[` + client("a", `["profile"]`, `["https://mcp"]`) + `]}`
	if _, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, embeddedConfig(t, raw), nil,
		&ResolvedOIDC{Issuer: "https://auth", Audience: "https://mcp", ResourceURL: "https://mcp"}, 8080, release.Releases[0]); err != nil {
		t.Errorf("default scopes: %v", err)
	}
}

// SPIFFE client associations: each pattern a SPIFFE ID with a path or a
// terminal wildcard, resources absolute http(s) URIs, and no two patterns
// one SPIFFE ID could match.
func TestSPIFFEPrincipalChecks(t *testing.T) {
	assoc := func(pattern, resources string) string {
		return `{"trustDomainRef":"td","principalPattern":"` + pattern + `","clientId":"c-` + strings.NewReplacer("/", "", ":", "", "*", "x").Replace(pattern) +
			`","methods":["spiffe_jwt"],"resources":` + resources + `}`
	}
	const at = "spec.embeddedAuthServer: inboundGrants.spiffeClientAuth"
	for _, tc := range []struct{ assocs, want string }{
		{assoc("spiffe://example.org/agent/*", `[]`) + "," + assoc("spiffe://example.org/agent/one", `[]`),
			at + `[0].principalPattern "spiffe://example.org/agent/*" overlaps spiffeClientAuth[1].principalPattern "spiffe://example.org/agent/one"`},
		{assoc("spiffe://example.org/a/*", `[]`) + "," + assoc("spiffe://example.org/*", `[]`),
			at + `[0].principalPattern "spiffe://example.org/a/*" overlaps spiffeClientAuth[1].principalPattern "spiffe://example.org/*"`},
		{assoc("spiffe://example.org/a", `[]`) + "," + assoc("spiffe://example.org/a", `[]`),
			at + `[0].principalPattern "spiffe://example.org/a" overlaps spiffeClientAuth[1].principalPattern "spiffe://example.org/a"`},
		{assoc("spiffe://example.org/a/*", `[]`) + "," + assoc("spiffe://example.org/ab", `[]`), ""},
		{assoc("spiffe://example.org/a", `[]`) + "," + assoc("spiffe://example.org/b/*", `[]`), ""},
		{assoc("spiffe://example.org", `[]`), at + "[0].principalPattern: must include a path or terminal /* wildcard"},
		{assoc("spiffe://example.org/*", `[]`), ""},
		{assoc("spiffe://example.org/a*", `[]`), at + "[0].principalPattern: must use only a terminal /* wildcard"},
		{assoc("https://example.org/a", `[]`), at + "[0].principalPattern: must be a SPIFFE ID: scheme is missing or invalid"},
		{assoc("spiffe://Example.org/a", `[]`), at + "[0].principalPattern: must be a SPIFFE ID: trust domain characters are limited to lowercase letters, numbers, dots, dashes, and underscores"},
		{assoc("spiffe:///a", `[]`), at + "[0].principalPattern: must be a SPIFFE ID: trust domain is missing"},
		{assoc("spiffe://example.org/a//b", `[]`), at + "[0].principalPattern: must be a SPIFFE ID: path cannot contain empty segments"},
		{assoc("spiffe://example.org/a/", `[]`), at + "[0].principalPattern: must be a SPIFFE ID: path cannot have a trailing slash"},
		{assoc("spiffe://example.org/a/../b", `[]`), at + "[0].principalPattern: must be a SPIFFE ID: path cannot contain dot segments"},
		{assoc("spiffe://example.org/a b", `[]`), at + "[0].principalPattern: must be a SPIFFE ID: path segment characters are limited to letters, numbers, dots, dashes, and underscores"},
		{assoc("spiffe://example.org/a", `["https://mcp","https://mcp"]`), at + `[0].resources: duplicate value "https://mcp"`},
		{assoc("spiffe://example.org/a", `["https://mcp#x"]`), at + `[0].resources: resource indicator "https://mcp#x" must be an absolute HTTP(S) URI without a fragment`},
		{assoc("spiffe://example.org/a", `["mcp"]`), at + `[0].resources: resource indicator "mcp" must be an absolute HTTP(S) URI without a fragment`},
	} {
		raw := `{"issuer":"https://auth",` + checksUpstream + `,"inboundGrants":{"spiffeClientAuth":[` + tc.assocs + `]}}`
		errs := ValidateEmbeddedAuthServer(embeddedConfig(t, raw).Spec.EmbeddedAuthServer)
		if tc.want == "" && len(errs) != 0 || tc.want != "" && (len(errs) != 1 || errs[0] != tc.want) {
			t.Errorf("%s: %q, want %q", tc.assocs, errs, tc.want)
		}
	}
}

// A SPIFFE client may obtain only what the workload's server offers:
// resources among its allowed audiences, scopes among those it supports.
func TestSPIFFEPermissionChecksRefuseWorkloads(t *testing.T) {
	r, err := release.Lookup("v0.66.0")
	if err != nil {
		t.Fatal(err)
	}
	oidc := &ResolvedOIDC{Issuer: "https://auth", Audience: "https://mcp", ResourceURL: "https://mcp", Scopes: []string{"openid"}}
	const wrap = "Failed to build configuration: failed to build embedded auth server config: " +
		"invalid embedded auth server delegate clients or trusted issuers: "
	domain := `"spiffeTrustDomains":[{"name":"td","trustDomain":"example.org","methods":["spiffe_jwt"],` +
		`"bundleSource":{"type":"file","file":{"configMapName":"b","configMapKey":"bundle.json"}}}]`
	for assoc, want := range map[string]string{
		`"resources":["https://mcp"],"audiences":["https://mcp"],"scopes":["openid"]`: "",
		`"resources":["https://other"],"audiences":["https://mcp"],"scopes":["openid"]`: wrap +
			`inbound_grants.spiffe_client_auth[0].resources: resource "https://other" is not allowed by allowed_audiences`,
		`"audiences":["https://mcp"],"scopes":["openid","tools"]`:  wrap + `inbound_grants.spiffe_client_auth[0].scopes contains "tools" which is not in scopes_supported`,
		`"audiences":[],"scopes":["openid"]`:                       wrap + "inbound_grants.spiffe_client_auth[0].audiences is required",
		`"audiences":["https://mcp"],"scopes":["openid","openid"]`: wrap + `inbound_grants.spiffe_client_auth[0].scopes: duplicate value "openid"`,
	} {
		raw := `{"issuer":"https://auth",` + checksUpstream + `,` + domain + `,"inboundGrants":{"spiffeClientAuth":[{"trustDomainRef":"td",` +
			`"principalPattern":"spiffe://example.org/agent","clientId":"agent","methods":["spiffe_jwt"],` + assoc + `}]}}`
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, embeddedConfig(t, raw), nil, oidc, 8080, r)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", assoc, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("%s: %v, want %q", assoc, err, want)
		}
	}
}
