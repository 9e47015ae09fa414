package workload

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// How the secrets of an MCPExternalAuthConfig reach ToolHive's runner, as
// ToolHive's operator wires them at the pinned release: as variables of
// the proxy container from secretKeyRefs, never in the RunConfig.
const (
	// EnvTokenExchangeClientSecret is the token exchange client secret,
	// which the runner's token exchange middleware reads.
	EnvTokenExchangeClientSecret = "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET"
	// EnvSecretsProvider=environment makes the runner resolve secret
	// parameters from the variables EnvSecretPrefix+<name>.
	EnvSecretsProvider     = "TOOLHIVE_SECRETS_PROVIDER"
	SecretsProviderFromEnv = "environment"
	EnvSecretPrefix        = "TOOLHIVE_SECRET_"
	// bearerTokenTarget is the target of ToolHive's secret parameter for
	// a bearer token ("<secret>,target=bearer_token").
	bearerTokenTarget = "bearer_token"
	// headerStrategyReplace and headerStrategyCustom are the token
	// exchange's header strategies: the exchanged token replaces the
	// Authorization header, or goes in a header of its own.
	headerStrategyReplace = "replace"
	headerStrategyCustom  = "custom"
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

// validateExternalAuthConfig returns every problem of an
// MCPExternalAuthConfig the schema does not catch (or that was stored
// before it could): the block of its type missing or another one set, a
// token URL that is not an absolute http(s) URL, a header name that is
// not an HTTP token, an incomplete Secret reference. A config of a type
// hivekeeper does not apply is not invalid: a workload that references
// it says so.
func validateExternalAuthConfig(c *thv1.MCPExternalAuthConfig) []string {
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
	if bt := s.BearerToken; bt != nil && s.Type == thv1.ExternalAuthTypeBearerToken {
		secretRef("spec.bearerToken.tokenSecretRef", bt.TokenSecretRef)
		if r := bt.TokenSecretRef; r != nil && strings.ContainsAny(r.Name, ",=") {
			errs = append(errs, fmt.Sprintf("spec.bearerToken.tokenSecretRef.name: %q cannot be a secret parameter of the runner", r.Name))
		}
	}
	return errs
}

// ExternalAuthWiring is what an MCPExternalAuthConfig adds to a proxy:
// RunConfig fields, and the proxy container's variables that carry its
// secrets.
type ExternalAuthWiring struct {
	TokenExchange *schema.TokenExchangeConfig
	RemoteAuth    *schema.RemoteAuthConfig
	AWSSts        *schema.AWSStsConfig
	// Env are secretKeyRef variables, in the order ToolHive's operator
	// adds them (token exchange client secret, then bearer token).
	Env []corev1.EnvVar
	// SecretsProvider says the runner must resolve a secret parameter
	// from the environment (EnvSecretsProvider=environment).
	SecretsProvider bool
}

// ApplyTo sets the wiring's RunConfig fields.
func (w ExternalAuthWiring) ApplyTo(rc *schema.RunConfig) {
	rc.TokenExchangeConfig, rc.RemoteAuthConfig = w.TokenExchange, w.RemoteAuth
	rc.AWSStsConfig = w.AWSSts
}

// ExternalAuth wires the MCPExternalAuthConfig a workload of kind
// references (nil for none) as ToolHive's operator does for the same
// manifest:
//   - tokenExchange: token_exchange_config (subject token type as a full
//     URN, header strategy replace, or custom with
//     externalTokenHeaderName), and the client secret as
//     TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET;
//   - bearerToken (MCPRemoteProxy): remote_auth_config.bearer_token as
//     the secret parameter "<secret>,target=bearer_token", the token as
//     TOOLHIVE_SECRET_<secret>, and the environment secrets provider;
//   - awsSts (MCPRemoteProxy): aws_sts_config (no secret: the runner
//     exchanges the caller's token with STS);
//   - unauthenticated: nothing;
//   - headerInjection: nothing, as in ToolHive, whose operator applies
//     it to VirtualMCPServer backends only (see ExternalAuthNoEffect).
//
// A config of a type hivekeeper does not apply, and bearerToken or awsSts
// on an MCPServer (which has no remote server; ToolHive's runner then
// fails to start), are an InvalidSpecError: the workload is not deployed rather
// than run without the authentication it asked for.
func ExternalAuth(cfg *thv1.MCPExternalAuthConfig, kind string) (ExternalAuthWiring, error) {
	var w ExternalAuthWiring
	if cfg == nil {
		return w, nil
	}
	const field = "spec.externalAuthConfigRef"
	refuse := func(format string, a ...any) (ExternalAuthWiring, error) {
		return ExternalAuthWiring{}, &InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec,
			Message: fmt.Sprintf("%s: MCPExternalAuthConfig %s: ", field, cfg.Name) + fmt.Sprintf(format, a...)}
	}
	s := &cfg.Spec
	switch s.Type {
	case thv1.ExternalAuthTypeUnauthenticated:
		return w, nil
	case thv1.ExternalAuthTypeHeaderInjection:
		return w, nil
	case thv1.ExternalAuthTypeEmbeddedAuthServer:
		// Not outgoing authentication: EmbeddedAuthServer wires it.
		return w, nil
	case thv1.ExternalAuthTypeTokenExchange:
		te := s.TokenExchange
		if te == nil {
			return refuse("type tokenExchange without spec.tokenExchange")
		}
		strategy := headerStrategyReplace
		if te.ExternalTokenHeaderName != "" {
			strategy = headerStrategyCustom
		}
		w.TokenExchange = &schema.TokenExchangeConfig{
			TokenURL: te.TokenURL, ClientID: te.ClientID, Audience: te.Audience, Scopes: te.Scopes,
			SubjectTokenType: subjectTokenTypes[te.SubjectTokenType], HeaderStrategy: strategy,
			ExternalTokenHeaderName: te.ExternalTokenHeaderName,
		}
		if r := te.ClientSecretRef; r != nil {
			w.Env = append(w.Env, SecretEnv(EnvTokenExchangeClientSecret, r.Name, r.Key))
		}
		return w, nil
	case thv1.ExternalAuthTypeBearerToken:
		if kind != thv1.KindMCPRemoteProxy {
			return refuse("type bearerToken authenticates an MCPRemoteProxy to its remote server; a %s has none", kind)
		}
		if s.BearerToken == nil || s.BearerToken.TokenSecretRef == nil {
			return refuse("type bearerToken without spec.bearerToken.tokenSecretRef")
		}
		r := s.BearerToken.TokenSecretRef
		w.RemoteAuth = &schema.RemoteAuthConfig{BearerToken: r.Name + ",target=" + bearerTokenTarget}
		w.Env = append(w.Env, SecretEnv(EnvSecretPrefix+r.Name, r.Name, r.Key))
		w.SecretsProvider = true
		return w, nil
	case thv1.ExternalAuthTypeAWSSts:
		if kind != thv1.KindMCPRemoteProxy {
			return refuse("type awsSts signs the requests to an MCPRemoteProxy's remote server; a %s has none "+
				"(ToolHive's operator and runner refuse it too)", kind)
		}
		if s.AWSSts == nil {
			return refuse("type awsSts without spec.awsSts")
		}
		w.AWSSts = awsStsRunConfig(s.AWSSts)
		return w, nil
	default:
		return refuse("type %s is not supported by hivekeeper (it applies tokenExchange, headerInjection, bearerToken, unauthenticated and awsSts)", s.Type)
	}
}

// ExternalAuthNoEffect names, for the workload's UnsupportedFields
// condition, a referenced config the proxy stores but does not act on:
// one of type headerInjection, which ToolHive's operator does not apply
// to an MCPServer or MCPRemoteProxy either.
func ExternalAuthNoEffect(cfg *thv1.MCPExternalAuthConfig) []string {
	if cfg == nil || cfg.Spec.Type != thv1.ExternalAuthTypeHeaderInjection {
		return nil
	}
	return []string{fmt.Sprintf("spec.externalAuthConfigRef (MCPExternalAuthConfig %s of type headerInjection, "+
		"which ToolHive applies to VirtualMCPServer backends only)", cfg.Name)}
}
