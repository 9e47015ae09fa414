package wiring

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
)

// Fields beyond what hivekeeper applies are named by path; zero values
// change nothing and are not. CA bundles, of upstreams and trusted
// issuers, are applied.
func TestUnsupportedAuthServerFields(t *testing.T) {
	got := unsupportedAuthServerFields("spec.embeddedAuthServer", []byte(`{"issuer":"i","allowConfidentialClientRegistration":false,"delegateClients":[],`+
		`"trustedIssuers":[{"issuerUrl":"x"},{"issuerUrl":"y","caBundleRef":{"configMapRef":{"name":"c"}}}],"inboundGrants":{"spiffeClientAuth":[{"clientId":"c"}]},`+
		`"storage":{"type":"memory"},"upstreamProviders":[{"name":"a","type":"oauth2",`+
		`"oauth2Config":{"tokenEndpoint":"t","caBundleRef":{"configMapRef":{"name":"c"}}}},{"name":"b","type":"oidc","oidcConfig":{"issuerUrl":"u",`+
		`"caBundleRef":{"configMapRef":{"name":"c"}}}},{"name":"c","type":"saml"}]}`))
	want := "spec.embeddedAuthServer.upstreamProviders[2].type=saml"
	if strings.Join(got, ", ") != want {
		t.Errorf("got  %q\nwant %q", strings.Join(got, ", "), want)
	}
}

// The legacy externalAuthConfigRef path reports on Ready, and a missing
// block or secret reference is refused.
func TestEmbeddedAuthServerRefusals(t *testing.T) {
	oidc := &ResolvedOIDC{Audience: "https://m", ResourceURL: "https://m"}
	embedded := func(raw string) *thv1.MCPExternalAuthConfig {
		c := extAuthConfig("as", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer})
		if raw != "" {
			c.Spec.EmbeddedAuthServer = &thv1.EmbeddedAuthServerConfig{}
			if err := json.Unmarshal([]byte(raw), c.Spec.EmbeddedAuthServer); err != nil {
				panic(err)
			}
		}
		return c
	}
	for _, tc := range []struct {
		name                    string
		authServer, extAuth     *thv1.MCPExternalAuthConfig
		cond, reason, inMessage string
	}{
		{"no block", embedded(""), nil, thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig, "without spec.embeddedAuthServer"},
		{"secret ref", embedded(`{"issuer":"i","hmacSecretRefs":[{"name":"h"}]}`), nil,
			thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig, "name and key are required"},
		{"legacy unsupported", nil, embedded(`{"issuer":"i","upstreamProviders":[{"name":"c","type":"saml"}]}`),
			thv1.ConditionReady, thv1.ReasonInvalidSpec, "spec.externalAuthConfigRef: MCPExternalAuthConfig as: not supported by hivekeeper: spec.embeddedAuthServer.upstreamProviders[0].type=saml"},
	} {
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, tc.authServer, tc.extAuth, oidc, 8080, release.Releases[0])
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || invalid.Condition != tc.cond || invalid.Reason != tc.reason || !strings.Contains(invalid.Message, tc.inMessage) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if w, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, nil, extAuthConfig("u", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}), nil, 8080, release.Releases[0]); err != nil || w.Config != nil {
		t.Errorf("no embedded server: %+v %v", w, err)
	}
}

// embeddedConfig is an MCPExternalAuthConfig of type embeddedAuthServer
// with the block raw (JSON).
func embeddedConfig(t *testing.T, raw string) *thv1.MCPExternalAuthConfig {
	t.Helper()
	c := extAuthConfig("as", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer,
		EmbeddedAuthServer: &thv1.EmbeddedAuthServerConfig{}})
	if err := json.Unmarshal([]byte(raw), c.Spec.EmbeddedAuthServer); err != nil {
		t.Fatal(err)
	}
	return c
}

// The fields ToolHive v0.63.0 added are written as its operator writes
// them (its cu/authserver.go): the TLS listener's paths and projected
// volume (first of the server's volumes), the registration rate as
// maxTokens/refillPeriod, the client cap of in-memory storage, and an
// OIDC upstream registered at run time with its initial access token's
// variable after the client secret's place.
func TestEmbeddedAuthServerV063Fields(t *testing.T) {
	oidc := &ResolvedOIDC{Audience: "https://mcp", ResourceURL: "https://mcp", Scopes: []string{"openid"}}
	c := embeddedConfig(t, `{"issuer":"https://auth","signingKeySecretRefs":[{"name":"keys","key":"k"}],
		"tlsListener":{"certificateSecretRef":{"name":"tls","key":"tls.crt"},"privateKeySecretRef":{"name":"tls","key":"tls.key"}},
		"registrationRateLimit":{"maxTokens":3,"refillPeriod":"18s"},"storage":{"type":"memory","maxDCRClients":0},
		"upstreamProviders":[{"name":"corp-idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp","omitScopeOnRefresh":true,
		"additionalTokenParams":{"resource":"https://api","audience":"x"},
		"dcrConfig":{"registrationEndpoint":"https://idp/register","rotationKey":"r1","registrationProbe":"tokenEndpoint",
		"registrationProbeInterval":"90s","initialAccessTokenRef":{"name":"iat","key":"token"},"softwareId":"sw"}}}]}`)
	w, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, c, nil, oidc, 8080, release.Releases[0])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(w.Config)
	want := `{"schema_version":"v0.1.0","issuer":"https://auth","signing_key_config":{"key_dir":"/etc/toolhive/authserver/keys","signing_key_file":"key-0.pem"},` +
		`"upstreams":[{"name":"corp-idp","type":"oidc","oidc_config":{"issuer_url":"https://idp","client_id":"","redirect_uri":"https://mcp/oauth/callback",` +
		`"additional_token_params":{"audience":"x","resource":"https://api"},"omit_scope_on_refresh":true,` +
		`"dcr_config":{"registration_endpoint":"https://idp/register","rotation_key":"r1","registration_probe":"tokenEndpoint",` +
		`"registration_probe_interval":"1m30s","initial_access_token_env_var":"TOOLHIVE_UPSTREAM_DCR_INITIAL_ACCESS_TOKEN_CORP_IDP","software_id":"sw"}}}],` +
		`"scopes_supported":["openid"],"allowed_audiences":["https://mcp"],"storage":{"type":"memory","max_dcr_clients":0},` +
		`"tls_listener":{"cert_file":"/etc/toolhive/authserver/tls/tls.crt","key_file":"/etc/toolhive/authserver/tls/tls.key"},` +
		`"registration_rate_limit":{"requests_per_second":0.16666666666666666,"burst":3}}`
	if string(got) != want {
		t.Errorf("config\n got %s\nwant %s", got, want)
	}
	for what, pair := range map[string][2]any{
		"volumes": {w.Volumes, `[{"name":"authserver-tls-listener","projected":{"sources":[{"secret":{"name":"tls","items":[{"key":"tls.crt","path":"tls.crt"},` +
			`{"key":"tls.key","path":"tls.key"}]}}],"defaultMode":256}},{"name":"authserver-signing-key-0","secret":{"secretName":"keys",` +
			`"items":[{"key":"k","path":"key-0.pem"}],"defaultMode":256}}]`},
		"mounts": {w.Mounts, `[{"name":"authserver-tls-listener","readOnly":true,"mountPath":"/etc/toolhive/authserver/tls"},` +
			`{"name":"authserver-signing-key-0","readOnly":true,"mountPath":"/etc/toolhive/authserver/keys/key-0.pem","subPath":"key-0.pem"}]`},
		"env": {w.Env, `[{"name":"TOOLHIVE_UPSTREAM_DCR_INITIAL_ACCESS_TOKEN_CORP_IDP","valueFrom":{"secretKeyRef":{"name":"iat","key":"token"}}}]`},
	} {
		if b, _ := json.Marshal(pair[0]); string(b) != pair[1] {
			t.Errorf("%s\n got %s\nwant %s", what, b, pair[1])
		}
	}

	// Two Secrets: two sources, the certificate's first. Memory storage
	// without a cap, and no rate limit, write nothing.
	c = embeddedConfig(t, `{"issuer":"https://auth","storage":{"type":"memory"},
		"tlsListener":{"certificateSecretRef":{"name":"cert","key":"c"},"privateKeySecretRef":{"name":"key","key":"k"}},
		"upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp","clientId":"c"}}]}`)
	if w, err = EmbeddedAuthServer(thv1.KindMCPServer, testOwner, c, nil, oidc, 8080, release.Releases[0]); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(w.Volumes[0].Projected.Sources); string(b) != `[{"secret":{"name":"cert","items":[{"key":"c","path":"tls.crt"}]}},`+
		`{"secret":{"name":"key","items":[{"key":"k","path":"tls.key"}]}}]` {
		t.Errorf("sources %s", b)
	}
	if w.Config.Storage != nil || w.Config.RegistrationRateLimit != nil {
		t.Errorf("storage %+v, rate limit %+v: want neither", w.Config.Storage, w.Config.RegistrationRateLimit)
	}
}

// What ToolHive v0.63.0's operator refuses when it builds the server for
// a proxy, with its messages: the TLS listener's port taken by the
// proxy, an incomplete listener, SPIFFE X.509 without one, SPIFFE trust
// domains at all (not enforced yet), a client that is not exactly one of
// clientId and dcrConfig, a non-positive registration rate.
func TestEmbeddedAuthServerV063Refusals(t *testing.T) {
	oidc := &ResolvedOIDC{Audience: "https://mcp", ResourceURL: "https://mcp"}
	const up = `"upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp","clientId":"c"}}]`
	const listener = `"tlsListener":{"certificateSecretRef":{"name":"t","key":"c"},"privateKeySecretRef":{"name":"t","key":"k"}}`
	for _, tc := range []struct {
		name, raw string
		port      int32
		want      string
	}{
		{"port", `{"issuer":"i",` + listener + `,` + up + `}`, 8443,
			"spec.authServerRef: MCPExternalAuthConfig as: proxyPort 8443 conflicts with the embedded auth server TLS listener port; choose a different proxyPort"},
		{"listener", `{"issuer":"i","tlsListener":{"certificateSecretRef":{"name":"t"},"privateKeySecretRef":{"name":"t","key":"k"}},` + up + `}`, 8080,
			"failed to build embedded auth server config: tlsListener.certificateSecretRef.name and tlsListener.certificateSecretRef.key are required"},
		{"x509", `{"issuer":"i",` + up + `,"inboundGrants":{"spiffeClientAuth":[{"trustDomainRef":"td","principalPattern":"p","clientId":"c","methods":["spiffe_x509"]}]}}`, 8080,
			"failed to build embedded auth server config: tlsListener is required when SPIFFE X.509 client authentication is configured"},
		{"spiffe", `{"issuer":"i",` + listener + `,` + up + `,"spiffeTrustDomains":[{"name":"td","trustDomain":"example.org","methods":["spiffe_jwt"],` +
			`"bundleSource":{"type":"file","file":{"configMapName":"b","configMapKey":"bundle.json"}}}]}`, 8080,
			"failed to build embedded auth server config: invalid embedded auth server delegate clients or trusted issuers: spiffe_trust_domains: SPIFFE client authentication is not yet enforced"},
		{"dcr-and-client", `{"issuer":"i","upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp","clientId":"c","dcrConfig":{}}}]}`, 8080,
			`failed to build embedded auth server config: upstream "idp": oidcConfig: exactly one of clientId or dcrConfig must be set`},
		{"dcr-secret", `{"issuer":"i","upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp","dcrConfig":{},"clientSecretRef":{"name":"s","key":"k"}}}]}`, 8080,
			`upstream "idp": oidcConfig: clientSecretRef must not be set when dcrConfig is set`},
		{"rate", `{"issuer":"i",` + up + `,"registrationRateLimit":{"maxTokens":1,"refillPeriod":"0s"}}`, 8080,
			"failed to build embedded auth server config: registrationRateLimit.refillPeriod must be positive, got 0s"},
		{"redis", `{"issuer":"i",` + up + `,"storage":{"type":"redis","maxDCRClients":5}}`, 8080,
			"failed to build embedded auth server config: failed to build storage config: redis config is required when storage type is redis"},
	} {
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, embeddedConfig(t, tc.raw), nil, oidc, tc.port, release.Releases[0])
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || invalid.Reason != thv1.ReasonAuthServerRefInvalidConfig || !strings.Contains(invalid.Message, tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.name, err, tc.want)
		}
	}
}

// The config's Valid condition refuses what ToolHive's MCPExternalAuthConfig
// validation refuses of an embedded server, its reserved token parameters
// included.
func TestValidateEmbeddedAuthServer(t *testing.T) {
	for raw, want := range map[string]string{
		`{"issuer":"i"}`: "spec.embeddedAuthServer: at least one upstream provider or inbound grant family is required",
		`{"issuer":"i","upstreamProviders":[{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"u","clientId":"c","additionalTokenParams":{"code_verifier":"x"}}}]}`: "spec.embeddedAuthServer: upstreamProviders[0].additionalTokenParams: " +
			`reserved token parameter "code_verifier" is managed by the framework and cannot be overridden`,
		`{"issuer":"i","upstreamProviders":[{"name":"a","type":"oauth2","oauth2Config":{"authorizationEndpoint":"a","tokenEndpoint":"t","clientId":"c","additionalTokenParams":{"resource":"api#x"}}}]}`: "spec.embeddedAuthServer: upstreamProviders[0].additionalTokenParams: " +
			`token parameter "resource" must be an absolute URI, got "api#x"`,
		`{"issuer":"i","upstreamProviders":[{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"u","clientId":"c","additionalTokenParams":{"resource":"https://api#x"}}}]}`: "spec.embeddedAuthServer: upstreamProviders[0].additionalTokenParams: " +
			`token parameter "resource" must not contain a fragment, got "https://api#x"`,
		`{"issuer":"i","upstreamProviders":[{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"u"}},{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"u","clientId":"c"}}]}`: "spec.embeddedAuthServer: upstreamProviders[0]: oidcConfig: exactly one of clientId or dcrConfig must be set; " +
			`spec.embeddedAuthServer: upstreamProviders[1]: duplicate name "a"`,
		`{"issuer":"i","upstreamProviders":[{"name":"a","type":"oidc","oidcConfig":{"issuerUrl":"u","clientId":"c","additionalTokenParams":{"resource":"https://api","audience":"b"}}}]}`: "",
	} {
		got := strings.Join(ValidateEmbeddedAuthServer(embeddedConfig(t, raw).Spec.EmbeddedAuthServer), "; ")
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", raw, got, want)
		}
	}
}

// An OAuth2 upstream is written as ToolHive v0.63.0's operator writes it
// (its buildOAuth2UpstreamRunConfig): its endpoints, tokenEndpointAuthMethod,
// userinfo, token response mapping, identity from the token, extra
// parameters, the client secret's variable; and refused where its
// checks refuse it.
func TestEmbeddedAuthServerOAuth2Upstream(t *testing.T) {
	oidc := &ResolvedOIDC{Audience: "https://mcp", ResourceURL: "https://mcp"}
	c := embeddedConfig(t, `{"issuer":"https://auth","upstreamProviders":[{"name":"gh","type":"oauth2","oauth2Config":{
		"authorizationEndpoint":"https://github.com/login/oauth/authorize","tokenEndpoint":"https://github.com/login/oauth/access_token",
		"clientId":"c","clientSecretRef":{"name":"gh","key":"secret"},"tokenEndpointAuthMethod":"client_secret_post","scopes":["read:user"],
		"userInfo":{"endpointUrl":"https://api.github.com/user","httpMethod":"GET","additionalHeaders":{"Accept":"application/json"},
		"fieldMapping":{"subjectFields":["id"],"nameFields":["name","login"]}},
		"tokenResponseMapping":{"accessTokenPath":"authed_user.access_token","scopePath":"authed_user.scope"},
		"additionalTokenParams":{"audience":"x"},"omitScopeOnRefresh":true,"allowPrivateIPs":true}}]}`)
	w, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, c, nil, oidc, 8080, release.Releases[0])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(w.Config.Upstreams)
	want := `[{"name":"gh","type":"oauth2","oauth2_config":{"authorization_endpoint":"https://github.com/login/oauth/authorize",` +
		`"token_endpoint":"https://github.com/login/oauth/access_token","client_id":"c","client_secret_env_var":"TOOLHIVE_UPSTREAM_CLIENT_SECRET_GH",` +
		`"token_endpoint_auth_method":"client_secret_post","redirect_uri":"https://mcp/oauth/callback","scopes":["read:user"],` +
		`"userinfo":{"endpoint_url":"https://api.github.com/user","http_method":"GET","additional_headers":{"Accept":"application/json"},` +
		`"field_mapping":{"subject_fields":["id"],"name_fields":["name","login"]}},` +
		`"token_response_mapping":{"access_token_path":"authed_user.access_token","scope_path":"authed_user.scope"},` +
		`"additional_token_params":{"audience":"x"},"omit_scope_on_refresh":true,"allow_private_ips":true}}]`
	if string(got) != want {
		t.Errorf("upstreams\n got %s\nwant %s", got, want)
	}
	if b, _ := json.Marshal(w.Env); string(b) != `[{"name":"TOOLHIVE_UPSTREAM_CLIENT_SECRET_GH","valueFrom":{"secretKeyRef":{"name":"gh","key":"secret"}}}]` {
		t.Errorf("env %s", b)
	}
	for raw, want := range map[string]string{
		`{"authorizationEndpoint":"a","tokenEndpoint":"t","dcrConfig":{}}`:                                        `upstream "gh": oauth2Config.dcrConfig: exactly one of discoveryUrl or registrationEndpoint must be set`,
		`{"authorizationEndpoint":"a","tokenEndpoint":"t","clientId":"c","identityFromToken":{"subjectPath":""}}`: "oauth2Config.identityFromToken.subjectPath must not be empty",
		`{"authorizationEndpoint":"a","tokenEndpoint":"t"}`:                                                       "oauth2Config: exactly one of clientId or dcrConfig must be set",
	} {
		c := embeddedConfig(t, `{"issuer":"https://auth","upstreamProviders":[{"name":"gh","type":"oauth2","oauth2Config":`+raw+`}]}`)
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, c, nil, oidc, 8080, release.Releases[0])
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || !strings.Contains(invalid.Message, want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}

// The delegation settings are written as ToolHive's operator writes them
// (its BuildAuthServerRunConfig and GenerateAuthServerEnvVars): the
// registration flags, CIMD when enabled, trusted issuers with their JWT
// bearer grant (the assertion age as Go prints it), and delegate clients
// whose secrets are variables named by position, after the upstream's.
func TestEmbeddedAuthServerDelegation(t *testing.T) {
	oidc := &ResolvedOIDC{Audience: "https://mcp", ResourceURL: "https://mcp", Scopes: []string{"openid"}}
	c := embeddedConfig(t, `{"issuer":"https://auth","allowConfidentialClientRegistration":true,"allowPrivateKeyJWTRegistration":true,
		"insecureAllowConfidentialOverLoopbackHTTP":true,"forceConfidentialRedirectUris":["https://app/cb"],
		"cimd":{"enabled":true,"cacheMaxSize":50,"cacheFallbackTtl":"10m"},
		"delegateClients":[{"clientId":"agent","clientSecretRef":{"name":"dc","key":"s"},"scopes":["openid"],"audiences":["https://mcp"]}],
		"trustedIssuers":[{"name":"corp","issuerUrl":"https://corp","expectedAudience":"https://auth","allowedDelegateClients":["agent"],
		"jwtBearerGrant":{"maxAssertionAge":"5m","subjectBindings":[{"subject":"svc","allowedResources":["https://mcp"]}]}}],
		"upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp","clientId":"c","clientSecretRef":{"name":"u","key":"k"}}}]}`)
	w, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, c, nil, oidc, 8080, release.Releases[0])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(w.Config)
	want := `{"schema_version":"v0.1.0","issuer":"https://auth","upstreams":[{"name":"idp","type":"oidc","oidc_config":{"issuer_url":"https://idp",` +
		`"client_id":"c","client_secret_env_var":"TOOLHIVE_UPSTREAM_CLIENT_SECRET_IDP","redirect_uri":"https://mcp/oauth/callback"}}],` +
		`"scopes_supported":["openid"],"allowed_audiences":["https://mcp"],"cimd":{"enabled":true,"cache_max_size":50,"cache_fallback_ttl":"10m"},` +
		`"trusted_issuers":[{"name":"corp","issuer_url":"https://corp","expected_audience":"https://auth","allowed_delegate_clients":["agent"],` +
		`"jwt_bearer_grant":{"max_assertion_age":"5m0s","subject_bindings":[{"subject":"svc","allowed_resources":["https://mcp"]}]}}],` +
		`"allow_confidential_client_registration":true,"allow_private_key_jwt_registration":true,"force_confidential_redirect_uris":["https://app/cb"],` +
		`"insecure_allow_confidential_over_loopback_http":true,"delegate_clients":[{"client_id":"agent",` +
		`"client_secret_env_var":"TOOLHIVE_DELEGATE_CLIENT_SECRET_0","scopes":["openid"],"audiences":["https://mcp"]}]}`
	if string(got) != want {
		t.Errorf("config\n got %s\nwant %s", got, want)
	}
	if b, _ := json.Marshal(w.Env); string(b) != `[{"name":"TOOLHIVE_UPSTREAM_CLIENT_SECRET_IDP","valueFrom":{"secretKeyRef":{"name":"u","key":"k"}}},`+
		`{"name":"TOOLHIVE_DELEGATE_CLIENT_SECRET_0","valueFrom":{"secretKeyRef":{"name":"dc","key":"s"}}}]` {
		t.Errorf("env %s", b)
	}

	// The inbound grants' form: a server without upstreams, the token
	// exchange grant's delegate clients the ones with variables, a
	// disabled CIMD not written.
	c = embeddedConfig(t, `{"issuer":"https://auth","cimd":{"enabled":false,"cacheMaxSize":5},"trustedIssuers":[{"name":"corp","issuerUrl":"https://corp"}],
		"inboundGrants":{"tokenExchange":{"delegateClients":[{"clientId":"agent","clientSecretRef":{"name":"dc","key":"s"},"scopes":["openid"],
		"audiences":["https://mcp"]}],"issuerPolicies":[{"issuerRef":"corp","expectedAudience":"https://auth","allowedDelegateClients":["agent"],
		"actorClaim":"act","allowMayAct":true}]},"jwtBearer":{"issuerPolicies":[{"issuerRef":"corp","maxAssertionAge":"90s",
		"subjectBindings":[{"subject":"svc","allowedResources":["https://mcp"]}],"acceptedAudiences":["https://auth/oauth/token"]}]}}}`)
	if w, err = EmbeddedAuthServer(thv1.KindMCPServer, testOwner, c, nil, oidc, 8080, release.Releases[0]); err != nil {
		t.Fatal(err)
	}
	got, _ = json.Marshal(w.Config)
	want = `{"schema_version":"v0.1.0","issuer":"https://auth","upstreams":[],"scopes_supported":["openid"],"allowed_audiences":["https://mcp"],` +
		`"trusted_issuers":[{"name":"corp","issuer_url":"https://corp","expected_audience":""}],"inbound_grants":{"token_exchange":{"delegate_clients":[` +
		`{"client_id":"agent","client_secret_env_var":"TOOLHIVE_DELEGATE_CLIENT_SECRET_0","scopes":["openid"],"audiences":["https://mcp"]}],` +
		`"issuer_policies":[{"issuer_ref":"corp","expected_audience":"https://auth","actor_claim":"act","allowed_delegate_clients":["agent"],` +
		`"allow_may_act":true}]},"jwt_bearer":{"issuer_policies":[{"issuer_ref":"corp","max_assertion_age":"1m30s","subject_bindings":[` +
		`{"subject":"svc","allowed_resources":["https://mcp"]}],"accepted_audiences":["https://auth/oauth/token"]}]}}}`
	if string(got) != want {
		t.Errorf("config\n got %s\nwant %s", got, want)
	}
	if b, _ := json.Marshal(w.Env); string(b) != `[{"name":"TOOLHIVE_DELEGATE_CLIENT_SECRET_0","valueFrom":{"secretKeyRef":{"name":"dc","key":"s"}}}]` {
		t.Errorf("env %s", b)
	}

	// ToolHive's refusals, with its messages.
	for raw, want := range map[string]string{
		`{"issuer":"https://auth","delegateClients":[{"clientId":"a","scopes":["s"],"audiences":["a"]}]}`:                                                                                                         "failed to build embedded auth server config: delegateClients[0].clientSecretRef.name and clientSecretRef.key are required",
		`{"issuer":"https://auth","trustedIssuers":[{"issuerUrl":"https://corp","jwtBearerGrant":{"subjectBindings":[]}}]}`:                                                                                       "trustedIssuers[0].jwtBearerGrant.maxAssertionAge is required",
		`{"issuer":"https://auth","inboundGrants":{"jwtBearer":{"issuerPolicies":[{"issuerRef":"x","subjectBindings":[]}]}}}`:                                                                                     "inboundGrants.jwtBearer.issuerPolicies[0].maxAssertionAge is required",
		`{"issuer":"https://auth","trustedIssuers":[{"name":"x","issuerUrl":"https://corp"}],"inboundGrants":{"jwtBearer":{"issuerPolicies":[{"issuerRef":"x","maxAssertionAge":"soon","subjectBindings":[]}]}}}`: `trustedIssuers: issuer_url "https://corp": jwt_bearer_grant.max_assertion_age must be a positive duration`,
	} {
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, embeddedConfig(t, raw), nil, oidc, 8080, release.Releases[0])
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || !strings.Contains(invalid.Message, want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}

// A vMCP's server may have no upstream when it only delegates, as
// ToolHive's operator allows it; with neither it is refused.
func TestInlineAuthServerWithoutUpstreams(t *testing.T) {
	oidc := &ResolvedOIDC{Issuer: "https://auth", Audience: "https://vmcp", ResourceURL: "https://vmcp"}
	for raw, want := range map[string]string{
		`{"issuer":"https://auth","delegateClients":[{"clientId":"a","clientSecretRef":{"name":"d","key":"s"},"scopes":["openid"],"audiences":["https://vmcp"]}]}`: "",
		`{"issuer":"https://auth","inboundGrants":{}}`: "",
		`{"issuer":"https://auth","trustedIssuers":[{"issuerUrl":"https://corp","jwtBearerGrant":{"maxAssertionAge":"1m","subjectBindings":[{"subject":"svc","allowedResources":["https://vmcp"]}]}}]}`: "",
		`{"issuer":"https://auth","trustedIssuers":[{"issuerUrl":"https://corp","expectedAudience":"https://auth","allowedDelegateClients":["*"]}]}`: "spec.authServerConfig requires at least one upstream provider unless " +
			"delegateClients, inboundGrants, or a trustedIssuer with jwtBearerGrant is configured",
	} {
		w, err := InlineAuthServer(testOwner, embeddedConfig(t, raw).Spec.EmbeddedAuthServer, nil, oidc, release.Releases[0])
		switch {
		case want == "" && (err != nil || w.Config == nil):
			t.Errorf("%s: %v", raw, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}

var testOwner = Owner{Namespace: "ns", Name: "mcp"}

// Redis storage and SPIFFE file bundles are written as ToolHive v0.66.0's
// operator writes them: the Redis block with the workload's key prefix,
// a Sentinel Service's cluster address, the ACL user's variables and the
// CA files of Redis and Sentinel (Secret files, owner-only); each trust
// domain's bundle its ConfigMap key mounted as bundle.json in a directory
// of its own, readable by all.
func TestEmbeddedAuthServerRedisAndSPIFFE(t *testing.T) {
	oidc := &ResolvedOIDC{Audience: "https://mcp", ResourceURL: "https://mcp", Scopes: []string{"openid"}}
	c := embeddedConfig(t, `{"issuer":"https://auth","tlsListener":{"certificateSecretRef":{"name":"t","key":"c"},"privateKeySecretRef":{"name":"t","key":"k"}},
		"spiffeTrustDomains":[{"name":"td","trustDomain":"example.org","methods":["spiffe_jwt","spiffe_x509"],
		"bundleSource":{"type":"file","file":{"configMapName":"b","configMapKey":"bundle.json"}}}],
		"inboundGrants":{"spiffeClientAuth":[{"trustDomainRef":"td","principalPattern":"spiffe://example.org/a","clientId":"agent","methods":["spiffe_jwt"],
		"audiences":["https://mcp"],"scopes":["openid"]}]},
		"storage":{"type":"redis","maxDCRClients":7,"redis":{"sentinelConfig":{"masterName":"m","sentinelService":{"name":"sent"},"db":2},
		"aclUserConfig":{"usernameSecretRef":{"name":"r","key":"u"},"passwordSecretRef":{"name":"r","key":"p"}},"dialTimeout":"5s",
		"tls":{"caCertSecretRef":{"name":"rca","key":"ca"}},"sentinelTls":{"insecureSkipVerify":true,"caCertSecretRef":{"name":"sca","key":"ca"}}}}}`)
	w, err := EmbeddedAuthServer(thv1.KindMCPServer, Owner{Namespace: "ns", Name: "name"}, c, nil, oidc, 8080, release.Releases[len(release.Releases)-1])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(w.Config)
	want := `{"schema_version":"v0.1.0","issuer":"https://auth","upstreams":[],"scopes_supported":["openid"],"allowed_audiences":["https://mcp"],` +
		`"storage":{"type":"redis","redis_config":{"sentinel_config":{"master_name":"m","sentinel_addrs":["sent.ns.svc.cluster.local:26379"],"db":2},` +
		`"auth_type":"aclUser","acl_user_config":{"username_env_var":"TOOLHIVE_AUTH_SERVER_REDIS_USERNAME","password_env_var":"TOOLHIVE_AUTH_SERVER_REDIS_PASSWORD"},` +
		`"key_prefix":"thv:auth:{ns:name}:","dial_timeout":"5s","tls":{"ca_cert_file":"/etc/toolhive/authserver/redis-tls/ca.crt"},` +
		`"sentinel_tls":{"insecure_skip_verify":true,"ca_cert_file":"/etc/toolhive/authserver/redis-tls/sentinel-ca.crt"}},"max_dcr_clients":7},` +
		`"spiffe_trust_domains":[{"name":"td","trust_domain":"example.org","methods":["spiffe_jwt","spiffe_x509"],"bundle_source":{"type":"file",` +
		`"file":{"path":"/etc/toolhive/authserver/spiffe-bundles/0/bundle.json"}}}],"inbound_grants":{"spiffe_client_auth":[{"trust_domain_ref":"td",` +
		`"principal_pattern":"spiffe://example.org/a","client_id":"agent","methods":["spiffe_jwt"],"audiences":["https://mcp"],"scopes":["openid"],` +
		`"grant_types":["urn:ietf:params:oauth:grant-type:token-exchange"]}]},` +
		`"tls_listener":{"cert_file":"/etc/toolhive/authserver/tls/tls.crt","key_file":"/etc/toolhive/authserver/tls/tls.key"}}`
	if string(got) != want {
		t.Errorf("config\n got %s\nwant %s", got, want)
	}
	for what, pair := range map[string][2]any{
		"volumes": {w.Volumes, `[{"name":"authserver-tls-listener","projected":{"sources":[{"secret":{"name":"t","items":[{"key":"c","path":"tls.crt"},` +
			`{"key":"k","path":"tls.key"}]}}],"defaultMode":256}},{"name":"authserver-spiffe-bundle-0","configMap":{"name":"b","items":[{"key":"bundle.json",` +
			`"path":"bundle.json"}],"defaultMode":292}},{"name":"redis-tls-ca-master","secret":{"secretName":"rca","items":[{"key":"ca","path":"ca.crt"}],` +
			`"defaultMode":256}},{"name":"redis-tls-ca-sentinel","secret":{"secretName":"sca","items":[{"key":"ca","path":"sentinel-ca.crt"}],"defaultMode":256}}]`},
		"mounts": {w.Mounts, `[{"name":"authserver-tls-listener","readOnly":true,"mountPath":"/etc/toolhive/authserver/tls"},` +
			`{"name":"authserver-spiffe-bundle-0","readOnly":true,"mountPath":"/etc/toolhive/authserver/spiffe-bundles/0"},` +
			`{"name":"redis-tls-ca-master","readOnly":true,"mountPath":"/etc/toolhive/authserver/redis-tls/ca.crt","subPath":"ca.crt"},` +
			`{"name":"redis-tls-ca-sentinel","readOnly":true,"mountPath":"/etc/toolhive/authserver/redis-tls/sentinel-ca.crt","subPath":"sentinel-ca.crt"}]`},
		"env": {w.Env, `[{"name":"TOOLHIVE_AUTH_SERVER_REDIS_USERNAME","valueFrom":{"secretKeyRef":{"name":"r","key":"u"}}},` +
			`{"name":"TOOLHIVE_AUTH_SERVER_REDIS_PASSWORD","valueFrom":{"secretKeyRef":{"name":"r","key":"p"}}}]`},
	} {
		if b, _ := json.Marshal(pair[0]); string(b) != pair[1] {
			t.Errorf("%s\n got %s\nwant %s", what, b, pair[1])
		}
	}

	// A standalone address, static Sentinel addresses, and ToolHive's
	// refusals with its messages.
	st, err := storageConfig(testOwner, &authServerStorage{Type: storageRedis, Redis: &thv1.RedisStorageConfig{Addr: "redis:6379", ClusterMode: true,
		ACLUserConfig: &thv1.RedisACLUserConfig{PasswordSecretRef: &thv1.SecretKeyRef{Name: "r", Key: "p"}}}})
	if b, _ := json.Marshal(st); err != nil || string(b) != `{"type":"redis","redis_config":{"addr":"redis:6379","cluster_mode":true,"auth_type":"aclUser",`+
		`"acl_user_config":{"username_env_var":"","password_env_var":"TOOLHIVE_AUTH_SERVER_REDIS_PASSWORD"},"key_prefix":"thv:auth:{ns:mcp}:"}}` {
		t.Errorf("standalone: %s %v", b, err)
	}
	acl := &thv1.RedisACLUserConfig{PasswordSecretRef: &thv1.SecretKeyRef{Name: "r", Key: "p"}}
	for _, tc := range []struct {
		st   *authServerStorage
		want string
	}{
		{&authServerStorage{Type: "disk"}, "unsupported storage type: disk"},
		{&authServerStorage{Type: storageRedis, Redis: &thv1.RedisStorageConfig{ACLUserConfig: acl}},
			"one of addr (standalone or cluster) or sentinelConfig (Sentinel) is required for Redis storage"},
		{&authServerStorage{Type: storageRedis, Redis: &thv1.RedisStorageConfig{Addr: "a", SentinelConfig: &thv1.RedisSentinelConfig{}, ACLUserConfig: acl}},
			"addr and sentinelConfig are mutually exclusive for Redis storage"},
		{&authServerStorage{Type: storageRedis, Redis: &thv1.RedisStorageConfig{Addr: "a", ACLUserConfig: &thv1.RedisACLUserConfig{}}},
			"ACL user config is required for Redis storage"},
		{&authServerStorage{Type: storageRedis, Redis: &thv1.RedisStorageConfig{SentinelConfig: &thv1.RedisSentinelConfig{MasterName: "m"}, ACLUserConfig: acl}},
			"failed to resolve sentinel addresses: either sentinelAddrs or sentinelService must be specified"},
	} {
		if _, err := storageConfig(testOwner, tc.st); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.st, err, tc.want)
		}
	}
	st, _ = storageConfig(testOwner, &authServerStorage{Type: storageRedis, Redis: &thv1.RedisStorageConfig{ACLUserConfig: acl,
		SentinelConfig: &thv1.RedisSentinelConfig{MasterName: "m", SentinelAddrs: []string{"s1:26379", "s2:26379"}, SentinelService: &thv1.SentinelServiceRef{Name: "x"}}}})
	if got := st.RedisConfig.SentinelConfig.SentinelAddrs; strings.Join(got, ",") != "s1:26379,s2:26379" {
		t.Errorf("static sentinel addresses: %q", got)
	}
}
