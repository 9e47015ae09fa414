package wiring

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Advisory is a condition a config carries beside Valid, computed from
// its spec alone (ToolHive's advisories), and the Warning event that
// says so when it turns True. Remove drops the condition instead.
type Advisory struct {
	Type                string
	Status              metav1.ConditionStatus
	Reason, Message     string
	Remove              bool
	Event, EventMessage string
}

// The advisory conditions of an embedded authorization server, with
// ToolHive's types, reasons and messages.
const (
	ConditionIdentitySynthesized                = "IdentitySynthesized"
	ReasonIdentitySynthesizedActive             = "OAuth2UpstreamWithoutUserInfo"
	ReasonIdentitySynthesizedInactive           = "AllUpstreamsHaveUserInfo"
	ConditionDeprecatedInboundGrantConfig       = "DeprecatedInboundGrantConfiguration"
	ReasonLegacyInboundGrantFields              = "LegacyInboundGrantFields"
	ReasonCanonicalInboundGrantConfig           = "CanonicalInboundGrantConfiguration"
	ReasonInboundGrantsLegacyFieldsDeprecated   = "InboundGrantsLegacyFieldsDeprecated"
	msgInboundGrantsLegacyFieldsDeprecatedEvent = "Released legacy inbound grant fields are deprecated; see status condition for canonical replacement paths"
)

// ExternalAuthAdvisories are the advisories ToolHive's operator writes on
// an MCPExternalAuthConfig, valid or not: for an embedded authorization
// server, whether an OAuth2 upstream without userInfo or
// identityFromToken makes the server synthesize the user's identity, and
// whether released legacy grant fields are set (with where each now
// goes); for any other type, neither.
func ExternalAuthAdvisories(c *thv1.MCPExternalAuthConfig) []Advisory {
	e := c.Spec.EmbeddedAuthServer
	if c.Spec.Type != thv1.ExternalAuthTypeEmbeddedAuthServer || e == nil {
		return []Advisory{{Type: ConditionIdentitySynthesized, Remove: true}, {Type: ConditionDeprecatedInboundGrantConfig, Remove: true}}
	}
	return []Advisory{IdentitySynthesized(e), DeprecatedInboundGrants(e, "spec.embeddedAuthServer")}
}

// IdentitySynthesized is the IdentitySynthesized advisory of a server
// (an MCPExternalAuthConfig's, or a VirtualMCPServer's own).
func IdentitySynthesized(e *thv1.EmbeddedAuthServerConfig) Advisory {
	var names []string
	for _, u := range e.UpstreamProviders {
		if u.Type == thv1.UpstreamProviderTypeOAuth2 && u.OAuth2Config != nil && u.OAuth2Config.UserInfo == nil && u.OAuth2Config.IdentityFromToken == nil {
			names = append(names, u.Name)
		}
	}
	if len(names) == 0 {
		return Advisory{Type: ConditionIdentitySynthesized, Status: metav1.ConditionFalse, Reason: ReasonIdentitySynthesizedInactive,
			Message: "All OAuth2 upstreams have userInfo configured; user identity is resolved from the upstream"}
	}
	slices.Sort(names)
	return Advisory{Type: ConditionIdentitySynthesized, Status: metav1.ConditionTrue, Reason: ReasonIdentitySynthesizedActive,
		Message: fmt.Sprintf("OAuth2 upstream(s) %v have no userInfo configured; the embedded auth server will "+
			"synthesize a non-PII subject from the access token (no Name/Email claims). "+
			"If a userInfo endpoint exists for these upstreams, configure it to resolve real identity.", names)}
}

// DeprecatedInboundGrants is the DeprecatedInboundGrantConfiguration
// advisory of a server whose block is at root: each legacy field set,
// with the inboundGrants field that replaces it.
func DeprecatedInboundGrants(e *thv1.EmbeddedAuthServerConfig, root string) Advisory {
	exchange, bearer := root+".inboundGrants.tokenExchange.issuerPolicies", root+".inboundGrants.jwtBearer.issuerPolicies"
	var moves []string
	if len(e.DelegateClients) > 0 {
		moves = append(moves, root+".delegateClients -> "+root+".inboundGrants.tokenExchange.delegateClients")
	}
	for i, ti := range e.TrustedIssuers {
		at := fmt.Sprintf("%s.trustedIssuers[%d].", root, i)
		for _, f := range []struct {
			set  bool
			name string
		}{{ti.ExpectedAudience != "", "expectedAudience"}, {ti.ActorClaim != "", "actorClaim"}, {len(ti.AllowedActors) > 0, "allowedActors"},
			{ti.ActorMatcher != "", "actorMatcher"}, {len(ti.AllowedDelegateClients) > 0, "allowedDelegateClients"}, {ti.AllowMayAct, "allowMayAct"}} {
			if f.set {
				moves = append(moves, at+f.name+" -> "+exchange)
			}
		}
		if ti.JWTBearerGrant != nil {
			moves = append(moves, at+"jwtBearerGrant -> "+bearer)
		}
	}
	if len(moves) == 0 {
		return Advisory{Type: ConditionDeprecatedInboundGrantConfig, Status: metav1.ConditionFalse, Reason: ReasonCanonicalInboundGrantConfig,
			Message: "Only canonical inbound grant configuration is populated"}
	}
	return Advisory{Type: ConditionDeprecatedInboundGrantConfig, Status: metav1.ConditionTrue, Reason: ReasonLegacyInboundGrantFields,
		Message: "Deprecated inbound grant fields are configured: " + strings.Join(moves, ", "),
		Event:   ReasonInboundGrantsLegacyFieldsDeprecated, EventMessage: msgInboundGrantsLegacyFieldsDeprecatedEvent}
}
