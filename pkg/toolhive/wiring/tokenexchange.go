package wiring

import (
	"fmt"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	corev1 "k8s.io/api/core/v1"
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

// ExternalAuthWiring is what an MCPExternalAuthConfig adds to a proxy:
// RunConfig fields, and the proxy container's variables that carry its
// secrets.
type ExternalAuthWiring struct {
	TokenExchange *schema.TokenExchangeConfig
	RemoteAuth    *schema.RemoteAuthConfig
	AWSSts        *schema.AWSStsConfig
	// Env are secretKeyRef variables, in the order ToolHive's operator
	// adds them (token exchange client secret, then bearer token). A
	// bearer token's variable makes RequiredEnv switch the runner's
	// secrets provider to the environment.
	Env []corev1.EnvVar
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
//   - headerInjection, upstreamInject, xaa: nothing, as in ToolHive,
//     whose operator applies them to VirtualMCPServer backends only and
//     whose runner is given nothing of them (see ExternalAuthNoEffect).
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
	case thv1.ExternalAuthTypeHeaderInjection, thv1.ExternalAuthTypeUpstreamInject, thv1.ExternalAuthTypeXAA:
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
		return refuse("type %s is not supported by hivekeeper (it applies tokenExchange, headerInjection, bearerToken, unauthenticated, awsSts, "+
			"upstreamInject and xaa)", s.Type)
	}
}

// ExternalAuthNoEffect names, for the workload's UnsupportedFields
// condition, a referenced config the proxy stores but does not act on:
// one of type headerInjection, upstreamInject or xaa, which ToolHive's
// operator does not apply to an MCPServer or MCPRemoteProxy either.
func ExternalAuthNoEffect(cfg *thv1.MCPExternalAuthConfig) []string {
	if cfg == nil {
		return nil
	}
	switch cfg.Spec.Type {
	case thv1.ExternalAuthTypeHeaderInjection, thv1.ExternalAuthTypeUpstreamInject, thv1.ExternalAuthTypeXAA:
		return []string{fmt.Sprintf("spec.externalAuthConfigRef (MCPExternalAuthConfig %s of type %s, "+
			"which ToolHive applies to VirtualMCPServer backends only)", cfg.Name, cfg.Spec.Type)}
	}
	return nil
}

// The defaults of ToolHive's awsSts schema. The API server applies them;
// the builder applies them too, so a build never depends on whether the
// object passed through the server.
const (
	awsStsDefaultService          = "aws-mcp"
	awsStsDefaultRoleClaim        = "groups"
	awsStsDefaultSessionDuration  = int32(3600)
	awsStsDefaultSessionNameClaim = "sub"
)

// awsStsRunConfig is the RunConfig's aws_sts_config for an awsSts block,
// field for field as ToolHive's operator writes it (subjectProviderName
// is vMCP's and not written).
func awsStsRunConfig(a *thv1.AWSStsConfig) *schema.AWSStsConfig {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	out := &schema.AWSStsConfig{
		Region:           a.Region,
		Service:          or(a.Service, awsStsDefaultService),
		FallbackRoleArn:  a.FallbackRoleArn,
		RoleClaim:        or(a.RoleClaim, awsStsDefaultRoleClaim),
		SessionDuration:  awsStsDefaultSessionDuration,
		SessionNameClaim: or(a.SessionNameClaim, awsStsDefaultSessionNameClaim),
	}
	if a.SessionDuration != nil {
		out.SessionDuration = *a.SessionDuration
	}
	for _, m := range a.RoleMappings {
		out.RoleMappings = append(out.RoleMappings, schema.AWSRoleMapping{
			Claim: m.Claim, Matcher: m.Matcher, RoleArn: m.RoleArn, Priority: m.Priority,
		})
	}
	return out
}
