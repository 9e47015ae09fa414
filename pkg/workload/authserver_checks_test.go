package workload

import (
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
			DelegateClients: []thv1.DelegateClientConfig{{ClientID: "a", ClientSecretRef: &thv1.SecretKeyRef{Name: "s", Key: "k"},
				Scopes: []string{"openid"}, Audiences: []string{"https://mcp"}}}},
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
