package schema

import (
	"encoding/json"
	"fmt"
)

// MiddlewareConfig is ToolHive's types.MiddlewareConfig: one middleware of
// the runner's chain, its type and its factory's parameters. Parameters
// is encoded as ToolHive's operator encodes the parameter struct of that
// type (null for the recovery middleware).
type MiddlewareConfig struct {
	Type       string `json:"type"`
	Parameters any    `json:"parameters"`
}

// The middleware types of ToolHive's runner.
const (
	MiddlewareBodyLimit         = "bodylimit"
	MiddlewareAudit             = "audit"
	MiddlewareAuth              = "auth"
	MiddlewareUpstreamSwap      = "upstreamswap"
	MiddlewareStripAuth         = "strip-auth"
	MiddlewareTokenExchange     = "tokenexchange"
	MiddlewareToolFilter        = "tool-filter"
	MiddlewareToolCallFilter    = "tool-call-filter"
	MiddlewareMCPParser         = "mcp-parser"
	MiddlewareTelemetry         = "telemetry"
	MiddlewareRateLimit         = "ratelimit"
	MiddlewareMutatingWebhook   = "mutating-webhook"
	MiddlewareValidatingWebhook = "validating-webhook"
	MiddlewareUsageMetrics      = "usagemetrics"
	MiddlewareAuthorization     = "authorization"
	MiddlewareAWSSts            = "awssts"
	MiddlewareHeaderForward     = "header-forward"
	MiddlewareRecovery          = "recovery"
)

// DefaultMaxRequestBodySize is the body limit of a RunConfig that sets
// none: 8 MiB.
const DefaultMaxRequestBodySize int64 = 8 << 20

// defaultUpstreamName names an embedded authorization server's upstream
// that has no name of its own.
const defaultUpstreamName = "default"

// The parameters of each middleware, with the keys of ToolHive's
// parameter structs in their order.
type (
	bodyLimitParams struct {
		MaxBytes int64 `json:"max_bytes"`
	}
	auditParams struct {
		ConfigData    *AuditConfig `json:"config_data,omitempty"`
		TransportType string       `json:"transport_type,omitempty"`
	}
	authParams struct {
		OIDCConfig               *OIDCConfig `json:"oidc_config,omitempty"`
		EmbeddedAuthServerIssuer string      `json:"embedded_auth_server_issuer,omitempty"`
	}
	upstreamSwapParams struct {
		Config *upstreamSwapConfig `json:"config,omitempty"`
	}
	upstreamSwapConfig struct {
		ProviderName string `json:"provider_name"`
	}
	tokenExchangeParams struct {
		TokenExchangeConfig *TokenExchangeConfig `json:"token_exchange_config,omitempty"`
	}
	toolFilterParams struct {
		FilterTools   []string                      `json:"filter_tools"`
		ToolsOverride map[string]toolOverrideParams `json:"tools_override"`
	}
	toolOverrideParams struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	parserParams struct{}
	// telemetryParams, webhookParams: the factory's parameters name the
	// server and its transport too.
	telemetryParams struct {
		Config     *TelemetryConfig `json:"config"`
		ServerName string           `json:"server_name"`
		Transport  string           `json:"transport"`
	}
	rateLimitParams struct {
		Namespace  string           `json:"namespace"`
		ServerName string           `json:"server_name"`
		Config     *RateLimitConfig `json:"config"`
		RedisAddr  string           `json:"redis_addr,omitempty"`
		RedisDB    int32            `json:"redis_db,omitempty"`
		RedisTLS   *RedisTLSConfig  `json:"redis_tls,omitempty"`
	}
	webhookParams struct {
		Webhooks   []WebhookConfig `json:"webhooks"`
		ServerName string          `json:"server_name"`
		Transport  string          `json:"transport"`
	}
	authzParams struct {
		ConfigData json.RawMessage `json:"config_data,omitempty"`
	}
	awsStsParams struct {
		AWSStsConfig *AWSStsConfig `json:"aws_sts_config,omitempty"`
		TargetURL    string        `json:"target_url,omitempty"`
	}
	headerForwardParams struct {
		AddHeaders map[string]string `json:"add_headers"`
	}
	emptyParams struct{}
)

// PopulateMiddlewareConfigs derives the runner's middleware chain from
// the RunConfig's other fields, as ToolHive's operator does before it
// writes the RunConfig (so the runner does not derive it at start):
//
//	bodylimit, audit?, auth, (upstreamswap | strip-auth)?, tokenexchange?,
//	(tool-filter, tool-call-filter)?, mcp-parser, telemetry?, ratelimit?,
//	mutating-webhook?, validating-webhook?, usagemetrics?, authorization?,
//	awssts?, header-forward?, recovery
//
// An embedded authorization server adds upstreamswap naming its first
// upstream, or strip-auth when it has no upstream or does not inject the
// upstream's token; then neither token exchange nor AWS STS may re-add a
// credential, which is an error, as it is for ToolHive. usageMetrics
// adds the runner's anonymous usage metrics, which ToolHive's operator
// writes unless its environment turns them off.
func (rc *RunConfig) PopulateMiddlewareConfigs(usageMetrics bool) error {
	add := func(typ string, params any) {
		rc.MiddlewareConfigs = append(rc.MiddlewareConfigs, MiddlewareConfig{Type: typ, Parameters: params})
	}
	rc.MiddlewareConfigs = nil
	if rc.MaxRequestBodySize < 0 {
		return fmt.Errorf("max_request_body_size must be non-negative, got %d", rc.MaxRequestBodySize)
	}
	maxBytes := rc.MaxRequestBodySize
	if maxBytes == 0 {
		maxBytes = DefaultMaxRequestBodySize
	}
	add(MiddlewareBodyLimit, bodyLimitParams{MaxBytes: maxBytes})
	if rc.AuditConfig != nil {
		add(MiddlewareAudit, auditParams{ConfigData: rc.AuditConfig, TransportType: rc.Transport})
	}
	eas := rc.EmbeddedAuthServerConfig
	auth := authParams{OIDCConfig: rc.OIDCConfig}
	if eas != nil {
		auth.EmbeddedAuthServerIssuer = eas.Issuer
	}
	add(MiddlewareAuth, auth)
	if eas != nil {
		if len(eas.Upstreams) == 0 || eas.DisableUpstreamTokenInjection {
			reason := "token-only embedded auth server"
			if len(eas.Upstreams) > 0 {
				reason = "disableUpstreamTokenInjection"
			}
			switch {
			case rc.TokenExchangeConfig != nil:
				return fmt.Errorf("%s cannot be combined with token exchange: token exchange would re-add an Authorization header after strip-auth removes it", reason)
			case rc.AWSStsConfig != nil:
				return fmt.Errorf("%s cannot be combined with AWS STS: SigV4 signing would re-add credentials after strip-auth removes them", reason)
			}
			add(MiddlewareStripAuth, emptyParams{})
		} else {
			add(MiddlewareUpstreamSwap, upstreamSwapParams{Config: &upstreamSwapConfig{ProviderName: eas.firstUpstreamName()}})
		}
	}
	if rc.TokenExchangeConfig != nil {
		add(MiddlewareTokenExchange, tokenExchangeParams{TokenExchangeConfig: rc.TokenExchangeConfig})
	}
	if len(rc.ToolsFilter) > 0 || len(rc.ToolsOverride) > 0 {
		p := toolFilterParams{FilterTools: rc.ToolsFilter, ToolsOverride: map[string]toolOverrideParams{}}
		for tool, o := range rc.ToolsOverride {
			p.ToolsOverride[tool] = toolOverrideParams(o)
		}
		add(MiddlewareToolFilter, p)
		add(MiddlewareToolCallFilter, p)
	}
	add(MiddlewareMCPParser, parserParams{})
	if rc.TelemetryConfig != nil {
		add(MiddlewareTelemetry, telemetryParams{Config: rc.TelemetryConfig, ServerName: rc.Name, Transport: rc.Transport})
	}
	if rc.RateLimitConfig != nil {
		if rc.ScalingConfig == nil || rc.ScalingConfig.SessionRedis == nil {
			return fmt.Errorf("rate limiting requires sessionStorage with provider redis")
		}
		redis := rc.ScalingConfig.SessionRedis
		add(MiddlewareRateLimit, rateLimitParams{Namespace: rc.RateLimitNamespace, ServerName: rc.Name,
			Config: rc.RateLimitConfig, RedisAddr: redis.Address, RedisDB: redis.DB, RedisTLS: redis.TLS})
	}
	if len(rc.MutatingWebhooks) > 0 {
		add(MiddlewareMutatingWebhook, webhookParams{Webhooks: rc.MutatingWebhooks, ServerName: rc.Name, Transport: rc.Transport})
	}
	if len(rc.ValidatingWebhooks) > 0 {
		add(MiddlewareValidatingWebhook, webhookParams{Webhooks: rc.ValidatingWebhooks, ServerName: rc.Name, Transport: rc.Transport})
	}
	if usageMetrics {
		add(MiddlewareUsageMetrics, emptyParams{})
	}
	if len(rc.AuthzConfig) > 0 {
		data := rc.AuthzConfig
		if eas != nil && len(eas.Upstreams) > 0 {
			var err error
			if data, err = withPrimaryUpstream(data, eas.firstUpstreamName()); err != nil {
				return err
			}
		}
		add(MiddlewareAuthorization, authzParams{ConfigData: data})
	}
	if rc.AWSStsConfig != nil {
		if rc.RemoteURL == "" {
			return fmt.Errorf("AWS STS middleware requires a remote URL: SigV4 signing is only meaningful for remote MCP servers")
		}
		add(MiddlewareAWSSts, awsStsParams{AWSStsConfig: rc.AWSStsConfig, TargetURL: rc.RemoteURL})
	}
	if hf := rc.HeaderForward; rc.RemoteURL != "" && hf != nil && (len(hf.AddPlaintextHeaders) > 0 || len(hf.AddHeadersFromSecret) > 0) {
		// The runner adds the headers from Secrets itself once it has
		// read them.
		add(MiddlewareHeaderForward, headerForwardParams{AddHeaders: hf.AddPlaintextHeaders})
	}
	add(MiddlewareRecovery, nil)
	return nil
}

// firstUpstreamName is the name of the server's first upstream, the one
// whose token the proxy forwards and Cedar reads claims from.
func (c *EmbeddedAuthServerConfig) firstUpstreamName() string {
	if len(c.Upstreams) == 0 || c.Upstreams[0].Name == "" {
		return defaultUpstreamName
	}
	return c.Upstreams[0].Name
}

// CedarAuthzConfig is the runner's Cedar authorization config, its keys
// in the order of ToolHive's types: how ToolHive's operator encodes an
// inline authorization config, and what the authorization middleware
// receives when an embedded authorization server names the provider whose
// token Cedar reads claims from.
type CedarAuthzConfig struct {
	Version string        `json:"version"`
	Type    string        `json:"type"`
	Options *CedarOptions `json:"cedar"`
}

// CedarOptions are the options of the runner's Cedar authorizer.
type CedarOptions struct {
	Policies                []string `json:"policies"`
	EntitiesJSON            string   `json:"entities_json"`
	PrimaryUpstreamProvider string   `json:"primary_upstream_provider,omitempty"`
	GroupClaimName          string   `json:"group_claim_name,omitempty"`
	RoleClaimName           string   `json:"role_claim_name,omitempty"`
	GroupEntityType         string   `json:"group_entity_type,omitempty"`
	MultiValuedClaims       []string `json:"multi_valued_claims,omitempty"`
}

// withPrimaryUpstream returns a Cedar authorization config with its
// primary upstream provider set to provider, re-encoded as ToolHive does;
// any other authorizer's config is returned as it is.
func withPrimaryUpstream(raw json.RawMessage, provider string) (json.RawMessage, error) {
	var c CedarAuthzConfig
	if json.Unmarshal(raw, &c) != nil || c.Options == nil {
		return raw, nil // not a Cedar config: nothing to name
	}
	c.Options.PrimaryUpstreamProvider = provider
	out, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding authorization config: %w", err)
	}
	return out, nil
}
