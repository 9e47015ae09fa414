package toolhivetest

import (
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// ParityRefs are the OIDC, tool and authorization references of one
// parity combination of an MCPServer or MCPRemoteProxy, with the configs
// they resolve to (nil for a reference the combination does not make).
type ParityRefs struct {
	OIDC        *thv1.MCPOIDCConfig
	OIDCRef     *thv1.OIDCConfigReference
	Tools       *thv1.MCPToolConfig
	ToolRef     *thv1.ToolConfigReference
	Authz       *thv1.MCPAuthzConfig
	AuthzRef    *thv1.AuthzConfigReference
	InlineAuthz *thv1.InlineAuthz
	// AuthServer is the embedded authorization server AuthServerRef names.
	AuthServer    *thv1.MCPExternalAuthConfig
	AuthServerRef *thv1.AuthServerRef
}

// RefsFor is the combination for oidcKind ("none", "inline" or
// "kubernetesServiceAccount"): an inline OIDC config also filters tools
// and authorizes with a referenced MCPAuthzConfig; a service-account one
// authorizes with inline Cedar policies and runs an embedded authorization
// server (whose tokens are for the resource URL, which is then also the
// audience, as ToolHive requires). The OIDC config's CA bundle is
// the ConfigMap "idp-ca".
func RefsFor(namespace, oidcKind string) ParityRefs {
	var r ParityRefs
	if oidcKind != "none" {
		r.OIDC = NewOIDCConfig(namespace, "auth", oidcKind == "inline", "idp-ca", true)
		r.OIDCRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp", Scopes: []string{"openid"}}
	}
	switch oidcKind {
	case "inline":
		r.Tools = &thv1.MCPToolConfig{Spec: thv1.MCPToolConfigSpec{ToolsFilter: []string{"a", "b"},
			ToolsOverride: map[string]thv1.ToolOverride{"x": {Name: "a", Description: "d"}}}}
		r.ToolRef = &thv1.ToolConfigReference{Name: "tools"}
		r.Authz = &thv1.MCPAuthzConfig{Spec: thv1.MCPAuthzConfigSpec{Type: thv1.AuthzTypeCedar,
			Config: runtime.RawExtension{Raw: []byte(`{"policies":["permit(principal, action, resource);"]}`)}}}
		r.AuthzRef = &thv1.AuthzConfigReference{Name: "authz"}
	case "kubernetesServiceAccount":
		r.InlineAuthz = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline, GroupClaimName: "groups",
			Inline: &thv1.InlineCedar{Policies: []string{`permit(principal, action, resource);`}, EntitiesJSON: "[]"}}
		r.OIDCRef.Audience, r.OIDCRef.ResourceURL = "https://mcp.example.com", "https://mcp.example.com"
		r.AuthServer = &thv1.MCPExternalAuthConfig{Spec: thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer,
			EmbeddedAuthServer: Decode[thv1.EmbeddedAuthServerConfig](`{"issuer":"https://auth.example.com",` +
				`"signingKeySecretRefs":[{"name":"keys","key":"k0"},{"name":"keys","key":"k1"}],"hmacSecretRefs":[{"name":"hmac","key":"h"}],` +
				`"tokenLifespans":{"accessTokenLifespan":"1h"},"upstreamProviders":[{"name":"idp","type":"oidc",` +
				`"oidcConfig":{"issuerUrl":"https://idp.example.com","dcrConfig":{"initialAccessTokenRef":{"name":"idp","key":"iat"}}}}],` +
				`"tlsListener":{"certificateSecretRef":{"name":"tls-cert","key":"tls.crt"},"privateKeySecretRef":{"name":"tls-key","key":"tls.key"}},` +
				`"registrationRateLimit":{"maxTokens":5,"refillPeriod":"1m"},"storage":{"type":"memory","maxDCRClients":100}}`)}}
		r.AuthServerRef = &thv1.AuthServerRef{Kind: thv1.KindMCPExternalAuthConfig, Name: "as"}
	}
	return r
}
