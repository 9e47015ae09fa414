package wiring

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
)

// subjectTokenTypes maps the short and full forms of the subject token
// types the runner accepts to the full URN ToolHive's operator writes.
var subjectTokenTypes = map[string]string{
	"":             "",
	"access_token": "urn:ietf:params:oauth:token-type:access_token",
	"id_token":     "urn:ietf:params:oauth:token-type:id_token",
	"jwt":          "urn:ietf:params:oauth:token-type:jwt",
	"urn:ietf:params:oauth:token-type:access_token": "urn:ietf:params:oauth:token-type:access_token",
	"urn:ietf:params:oauth:token-type:id_token":     "urn:ietf:params:oauth:token-type:id_token",
	"urn:ietf:params:oauth:token-type:jwt":          "urn:ietf:params:oauth:token-type:jwt",
}

// externalAuthBlocks says, per type, whether its block is set.
func externalAuthBlocks(s *thv1.MCPExternalAuthConfigSpec) map[string]bool {
	return map[string]bool{
		thv1.ExternalAuthTypeTokenExchange:      s.TokenExchange != nil,
		thv1.ExternalAuthTypeHeaderInjection:    s.HeaderInjection != nil,
		thv1.ExternalAuthTypeBearerToken:        s.BearerToken != nil,
		thv1.ExternalAuthTypeEmbeddedAuthServer: s.EmbeddedAuthServer != nil,
		thv1.ExternalAuthTypeAWSSts:             s.AWSSts != nil,
		thv1.ExternalAuthTypeUpstreamInject:     s.UpstreamInject != nil,
		thv1.ExternalAuthTypeOBO:                s.OBO != nil,
		thv1.ExternalAuthTypeXAA:                s.XAA != nil,
	}
}

// externalAuthTypes are ToolHive's types in the order of its enum.
var externalAuthTypes = []string{
	thv1.ExternalAuthTypeTokenExchange, thv1.ExternalAuthTypeHeaderInjection, thv1.ExternalAuthTypeBearerToken,
	thv1.ExternalAuthTypeUnauthenticated, thv1.ExternalAuthTypeEmbeddedAuthServer, thv1.ExternalAuthTypeAWSSts,
	thv1.ExternalAuthTypeUpstreamInject, thv1.ExternalAuthTypeOBO, thv1.ExternalAuthTypeXAA,
}

// RefuseExternalAuthConfig refuses a config of type obo (on-behalf-of
// token exchange): only ToolHive's enterprise build has a handler for it,
// so its open-source operator marks the config Valid=False with reason
// EnterpriseRequired, and hivekeeper, which applies no such type either,
// says the same.
func RefuseExternalAuthConfig(c *thv1.MCPExternalAuthConfig) (reason, message string) {
	if c.Spec.Type != thv1.ExternalAuthTypeOBO {
		return "", ""
	}
	return thv1.ReasonEnterpriseRequired, "spec.type: obo (on-behalf-of token exchange) is applied only by ToolHive's enterprise build; " +
		"neither ToolHive's open-source operator nor hivekeeper runs it"
}

// ValidateExternalAuthConfig returns every problem of an
// MCPExternalAuthConfig the schema does not catch (or that was stored
// before it could): the block of its type missing or another one set, a
// token URL that is not an absolute http(s) URL, a header name that is
// not an HTTP token, an incomplete Secret reference. A config of a type
// hivekeeper does not apply is not invalid: a workload that references
// it says so.
func ValidateExternalAuthConfig(c *thv1.MCPExternalAuthConfig) []string {
	s := &c.Spec
	known := false
	for _, t := range externalAuthTypes {
		known = known || t == s.Type
	}
	if !known {
		return []string{fmt.Sprintf("spec.type: %q is not one of %s", s.Type, strings.Join(externalAuthTypes, ", "))}
	}
	var errs []string
	blocks := externalAuthBlocks(s)
	for _, t := range externalAuthTypes {
		switch set := blocks[t]; {
		case t == s.Type && t != thv1.ExternalAuthTypeUnauthenticated && !set:
			errs = append(errs, fmt.Sprintf("spec.%s: required when type is %s", t, t))
		case t != s.Type && set:
			errs = append(errs, fmt.Sprintf("spec.%s: must not be set when type is %s", t, s.Type))
		}
	}
	secretRef := func(path string, r *thv1.SecretKeyRef) {
		switch {
		case r == nil:
			errs = append(errs, path+": required")
		case r.Name == "" || r.Key == "":
			errs = append(errs, path+": name and key are required")
		}
	}
	if te := s.TokenExchange; te != nil && s.Type == thv1.ExternalAuthTypeTokenExchange {
		if u, err := url.Parse(te.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("spec.tokenExchange.tokenUrl: %q is not an absolute http(s) URL", te.TokenURL))
		}
		if te.Audience == "" {
			errs = append(errs, "spec.tokenExchange.audience: required")
		}
		if te.ClientSecretRef != nil {
			secretRef("spec.tokenExchange.clientSecretRef", te.ClientSecretRef)
		}
		for i, sc := range te.Scopes {
			if sc == "" || strings.ContainsAny(sc, " \t\r\n") {
				errs = append(errs, fmt.Sprintf("spec.tokenExchange.scopes[%d]: %q is not a scope", i, sc))
			}
		}
		if _, ok := subjectTokenTypes[te.SubjectTokenType]; !ok {
			errs = append(errs, fmt.Sprintf("spec.tokenExchange.subjectTokenType: %q is not access_token, id_token or jwt", te.SubjectTokenType))
		}
		if h := te.ExternalTokenHeaderName; h != "" && !httpguts.ValidHeaderFieldName(h) {
			errs = append(errs, fmt.Sprintf("spec.tokenExchange.externalTokenHeaderName: %q is not a valid HTTP header name", h))
		}
	}
	if hi := s.HeaderInjection; hi != nil && s.Type == thv1.ExternalAuthTypeHeaderInjection {
		if !httpguts.ValidHeaderFieldName(hi.HeaderName) {
			errs = append(errs, fmt.Sprintf("spec.headerInjection.headerName: %q is not a valid HTTP header name", hi.HeaderName))
		}
		secretRef("spec.headerInjection.valueSecretRef", hi.ValueSecretRef)
	}
	if a := s.AWSSts; a != nil && s.Type == thv1.ExternalAuthTypeAWSSts {
		errs = append(errs, validateAWSSts(a)...)
	}
	if e := s.EmbeddedAuthServer; e != nil && s.Type == thv1.ExternalAuthTypeEmbeddedAuthServer {
		errs = append(errs, ValidateEmbeddedAuthServer(e)...)
	}
	if bt := s.BearerToken; bt != nil && s.Type == thv1.ExternalAuthTypeBearerToken {
		secretRef("spec.bearerToken.tokenSecretRef", bt.TokenSecretRef)
		if r := bt.TokenSecretRef; r != nil && strings.ContainsAny(r.Name, ",=") {
			errs = append(errs, fmt.Sprintf("spec.bearerToken.tokenSecretRef.name: %q cannot be a secret parameter of the runner", r.Name))
		}
	}
	return errs
}

// validateAWSSts returns what ToolHive's operator refuses in an awsSts
// block beyond its schema: no region, neither a fallback role nor a
// mapping, a mapping without a role or with not exactly one of claim and
// matcher, a session duration outside STS's 900 to 43200 seconds.
func validateAWSSts(a *thv1.AWSStsConfig) []string {
	var errs []string
	if a.Region == "" {
		errs = append(errs, "spec.awsSts.region: required")
	}
	if a.FallbackRoleArn == "" && len(a.RoleMappings) == 0 {
		errs = append(errs, "spec.awsSts: at least one of fallbackRoleArn and roleMappings is required")
	}
	for i, m := range a.RoleMappings {
		if m.RoleArn == "" {
			errs = append(errs, fmt.Sprintf("spec.awsSts.roleMappings[%d].roleArn: required", i))
		}
		if (m.Claim == "") == (m.Matcher == "") {
			errs = append(errs, fmt.Sprintf("spec.awsSts.roleMappings[%d]: exactly one of claim and matcher is required", i))
		}
	}
	if d := a.SessionDuration; d != nil && (*d < 900 || *d > 43200) {
		errs = append(errs, fmt.Sprintf("spec.awsSts.sessionDuration: %d is not between 900 and 43200 seconds", *d))
	}
	return errs
}

// ExternalAuthConfigReleaseChecks returns the problems of an
// MCPExternalAuthConfig that ToolHive's operator finds only from some
// release on (release.Release): those of an embedded authorization
// server's SPIFFE configuration.
func ExternalAuthConfigReleaseChecks(c *thv1.MCPExternalAuthConfig, r release.Release) []string {
	if e := c.Spec.EmbeddedAuthServer; e != nil && c.Spec.Type == thv1.ExternalAuthTypeEmbeddedAuthServer {
		return spiffeConfigChecks(e, r)
	}
	return nil
}
