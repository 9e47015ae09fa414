package wiring

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Fields beyond what hivekeeper applies are named by path; zero values
// change nothing and are not.
func TestUnsupportedAuthServerFields(t *testing.T) {
	got := unsupportedAuthServerFields("spec.embeddedAuthServer", []byte(`{"issuer":"i","allowConfidentialClientRegistration":false,"delegateClients":[],`+
		`"trustedIssuers":[{"issuerUrl":"x"}],"storage":{"type":"memory"},"upstreamProviders":[{"name":"a","type":"oauth2",`+
		`"oauth2Config":{"tokenEndpoint":"t"}},{"name":"b","type":"oidc","oidcConfig":{"issuerUrl":"u","caBundleRef":{"configMapRef":{"name":"c"}}}}]}`))
	want := "spec.embeddedAuthServer.trustedIssuers, spec.embeddedAuthServer.upstreamProviders[0].oauth2Config, " +
		"spec.embeddedAuthServer.upstreamProviders[0].type=oauth2, spec.embeddedAuthServer.upstreamProviders[1].oidcConfig.caBundleRef"
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
		{"legacy unsupported", nil, embedded(`{"issuer":"i","storage":{"type":"redis"}}`),
			thv1.ConditionReady, thv1.ReasonInvalidSpec, "spec.externalAuthConfigRef: MCPExternalAuthConfig as: not supported by hivekeeper: spec.embeddedAuthServer.storage.type=redis"},
	} {
		_, err := EmbeddedAuthServer(thv1.KindMCPServer, tc.authServer, tc.extAuth, oidc)
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || invalid.Condition != tc.cond || invalid.Reason != tc.reason || !strings.Contains(invalid.Message, tc.inMessage) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if w, err := EmbeddedAuthServer(thv1.KindMCPServer, nil, extAuthConfig("u", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}), nil); err != nil || w.Config != nil {
		t.Errorf("no embedded server: %+v %v", w, err)
	}
}
