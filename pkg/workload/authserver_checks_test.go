package workload

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// An embedded authorization server whose grants ToolHive's operator
// refuses (delegate clients over an http issuer, a trusted issuer without
// an expected audience, forceConfidentialRedirectUris without confidential
// registration) is Valid=False ValidationFailed with ToolHive's message,
// one Warning event, and quiet on the next sync.
func TestExternalAuthConfigEmbeddedGrantChecks(t *testing.T) {
	upstream := []thv1.UpstreamProviderConfig{{Name: "idp", Type: thv1.UpstreamProviderTypeOIDC,
		OIDCConfig: &thv1.OIDCUpstreamConfig{IssuerURL: "https://idp", ClientID: "c"}}}
	for _, tc := range []struct {
		name string
		cfg  thv1.EmbeddedAuthServerConfig
		want string
	}{
		{"delegate clients over http", thv1.EmbeddedAuthServerConfig{Issuer: "http://auth.example.com", InsecureAllowHTTP: true, UpstreamProviders: upstream,
			InboundGrants: &thv1.InboundGrantsConfig{TokenExchange: &thv1.TokenExchangeInboundGrantConfig{DelegateClients: []thv1.DelegateClientConfig{{
				ClientID: "a", ClientSecretRef: &thv1.SecretKeyRef{Name: "s", Key: "k"}, Scopes: []string{"openid"}, Audiences: []string{"https://mcp"}}}}}},
			"spec.embeddedAuthServer: confidential clients (allow_confidential_client_registration or delegate clients) cannot be combined with insecure_allow_http"},
		{"trusted issuer without expected audience", thv1.EmbeddedAuthServerConfig{Issuer: "https://auth.example.com", UpstreamProviders: upstream,
			TrustedIssuers: []thv1.TrustedIssuerConfig{{IssuerURL: "https://corp"}}},
			`spec.embeddedAuthServer: trustedIssuers: issuer_url "https://corp": expected_audience is required when JWT-bearer grant is disabled`},
		{"forced confidential redirects without confidential registration", thv1.EmbeddedAuthServerConfig{Issuer: "https://auth.example.com",
			UpstreamProviders: upstream, ForceConfidentialRedirectURIs: []string{"https://app/cb"}},
			"spec.embeddedAuthServer: force_confidential_redirect_uris requires allow_confidential_client_registration to be true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &thv1.MCPExternalAuthConfig{ObjectMeta: curated(), Spec: thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer,
				EmbeddedAuthServer: &tc.cfg}}
			cfg.Finalizers = []string{thv1.MCPExternalAuthConfigFinalizer}
			c, client, factory, recorder := newKindController(t, ExternalAuthConfigs, cfg)
			indexer := ExternalAuthConfigs.Informer(factory).GetIndexer()
			if err := indexer.Add(cfg); err != nil {
				t.Fatal(err)
			}
			_, ctx := ktesting.NewTestContext(t)
			key := cache.NewObjectName(testNS, "curated")
			if err := c.sync(ctx, key); err != nil {
				t.Fatalf("an invalid config is not retried: %v", err)
			}
			if acts := client.Actions(); len(acts) != 1 || acts[0].GetSubresource() != "status" {
				t.Fatalf("want one status patch, got %s", describe(acts))
			}
			got, err := ExternalAuthConfigs.Get(indexerOf(t, client, ExternalAuthConfigs), testNS, "curated")
			if err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionValid)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != thv1.ReasonValidationFailed || !strings.HasPrefix(cond.Message, tc.want) {
				t.Fatalf("Valid = %+v, want False/%s %q", cond, thv1.ReasonValidationFailed, tc.want)
			}
			if e := drainEvents(recorder); len(e) != 1 || !strings.HasPrefix(e[0], "Warning "+thv1.ReasonConfigInvalid+" ") {
				t.Fatalf("want one Warning %s event, got %q", thv1.ReasonConfigInvalid, e)
			}
			resyncQuietly(ctx, t, c, client, indexer, got, key)
			if e := drainEvents(recorder); len(e) != 0 {
				t.Errorf("event repeated without a transition: %q", e)
			}
		})
	}
}

// The advisories ToolHive's operator writes on an MCPExternalAuthConfig of
// type embeddedAuthServer, valid or not: IdentitySynthesized (an OAuth2
// upstream without userInfo or identityFromToken) and
// DeprecatedInboundGrantConfiguration (legacy grant fields, each with its
// replacement; one Warning event when it turns True). Another type has
// neither.
func TestExternalAuthConfigAdvisories(t *testing.T) {
	oauth2 := func(name string, u *thv1.UserInfoConfig) thv1.UpstreamProviderConfig {
		return thv1.UpstreamProviderConfig{Name: name, Type: thv1.UpstreamProviderTypeOAuth2, OAuth2Config: &thv1.OAuth2UpstreamConfig{
			AuthorizationEndpoint: "https://gh/authorize", TokenEndpoint: "https://gh/token", ClientID: "c", UserInfo: u}}
	}
	for _, tc := range []struct {
		name       string
		spec       thv1.MCPExternalAuthConfigSpec
		identity   string // status/reason/message of IdentitySynthesized, "" for none
		deprecated string
		events     []string
	}{
		{"canonical, identities resolved", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer, EmbeddedAuthServer: &thv1.EmbeddedAuthServerConfig{
			Issuer: "https://auth", UpstreamProviders: []thv1.UpstreamProviderConfig{oauth2("gh", &thv1.UserInfoConfig{EndpointURL: "https://gh/user"})}}},
			"False/AllUpstreamsHaveUserInfo/All OAuth2 upstreams have userInfo configured; user identity is resolved from the upstream",
			"False/CanonicalInboundGrantConfiguration/Only canonical inbound grant configuration is populated", nil},
		{"legacy fields, synthesized identities", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer, EmbeddedAuthServer: &thv1.EmbeddedAuthServerConfig{
			Issuer: "https://auth", UpstreamProviders: []thv1.UpstreamProviderConfig{oauth2("zz", nil), oauth2("aa", nil)},
			DelegateClients: []thv1.DelegateClientConfig{{ClientID: "a", ClientSecretRef: &thv1.SecretKeyRef{Name: "s", Key: "k"}, Scopes: []string{"openid"}, Audiences: []string{"https://mcp"}}},
			TrustedIssuers: []thv1.TrustedIssuerConfig{{IssuerURL: "https://corp", ExpectedAudience: "https://auth", AllowedDelegateClients: []string{"a"},
				JWTBearerGrant: &thv1.JWTBearerGrantConfig{MaxAssertionAge: "1m", SubjectBindings: []thv1.JWTBearerSubjectBinding{{Subject: "s", AllowedResources: []string{"https://mcp"}}}}}}}},
			"True/OAuth2UpstreamWithoutUserInfo/OAuth2 upstream(s) [aa zz] have no userInfo configured; the embedded auth server will synthesize a non-PII subject " +
				"from the access token (no Name/Email claims). If a userInfo endpoint exists for these upstreams, configure it to resolve real identity.",
			"True/LegacyInboundGrantFields/Deprecated inbound grant fields are configured: spec.embeddedAuthServer.delegateClients -> " +
				"spec.embeddedAuthServer.inboundGrants.tokenExchange.delegateClients, spec.embeddedAuthServer.trustedIssuers[0].expectedAudience -> " +
				"spec.embeddedAuthServer.inboundGrants.tokenExchange.issuerPolicies, spec.embeddedAuthServer.trustedIssuers[0].allowedDelegateClients -> " +
				"spec.embeddedAuthServer.inboundGrants.tokenExchange.issuerPolicies, spec.embeddedAuthServer.trustedIssuers[0].jwtBearerGrant -> " +
				"spec.embeddedAuthServer.inboundGrants.jwtBearer.issuerPolicies",
			[]string{"Warning InboundGrantsLegacyFieldsDeprecated Released legacy inbound grant fields are deprecated; see status condition for canonical replacement paths"}},
		{"another type", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}, "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &thv1.MCPExternalAuthConfig{ObjectMeta: curated(), Spec: tc.spec}
			cfg.Finalizers = []string{thv1.MCPExternalAuthConfigFinalizer}
			// Left from an earlier spec: removed when the type has none.
			cfg.Status.Conditions = []metav1.Condition{{Type: "IdentitySynthesized", Status: metav1.ConditionFalse, Reason: "AllUpstreamsHaveUserInfo"}}
			c, client, factory, recorder := newKindController(t, ExternalAuthConfigs, cfg)
			indexer := ExternalAuthConfigs.Informer(factory).GetIndexer()
			if err := indexer.Add(cfg); err != nil {
				t.Fatal(err)
			}
			_, ctx := ktesting.NewTestContext(t)
			key := cache.NewObjectName(testNS, "curated")
			if err := c.sync(ctx, key); err != nil {
				t.Fatal(err)
			}
			got, err := ExternalAuthConfigs.Get(indexerOf(t, client, ExternalAuthConfigs), testNS, "curated")
			if err != nil {
				t.Fatal(err)
			}
			for typ, want := range map[string]string{"IdentitySynthesized": tc.identity, "DeprecatedInboundGrantConfiguration": tc.deprecated} {
				c := meta.FindStatusCondition(got.Status.Conditions, typ)
				switch {
				case want == "" && c != nil:
					t.Errorf("%s: %+v, want none", typ, c)
				case want != "" && (c == nil || string(c.Status)+"/"+c.Reason+"/"+c.Message != want || c.ObservedGeneration != 1):
					t.Errorf("%s: %+v, want %s", typ, c, want)
				}
			}
			var warnings []string
			for _, e := range drainEvents(recorder) {
				if !strings.HasPrefix(e, "Warning ConfigInvalid") && !strings.HasPrefix(e, "Normal") {
					warnings = append(warnings, e)
				}
			}
			if !slices.Equal(warnings, tc.events) {
				t.Errorf("events %q, want %q", warnings, tc.events)
			}
			resyncQuietly(ctx, t, c, client, indexer, got, key)
			if e := drainEvents(recorder); len(e) != 0 {
				t.Errorf("event repeated without a transition: %q", e)
			}
		})
	}
}
