package schema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func middlewareTypes(rc *RunConfig) []string {
	var out []string
	for _, m := range rc.MiddlewareConfigs {
		out = append(out, m.Type)
	}
	return out
}

// TestMiddlewareMinimal pins the chain of a workload with no feature set,
// as ToolHive's operator writes it: the body limit's default, an auth
// middleware without OIDC (anonymous), the parser, recovery without
// parameters.
func TestMiddlewareMinimal(t *testing.T) {
	rc := &RunConfig{Name: "fetch", Transport: "stdio"}
	if err := rc.PopulateMiddlewareConfigs(false); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(rc.MiddlewareConfigs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"bodylimit","parameters":{"max_bytes":8388608}},{"type":"auth","parameters":{}},` +
		`{"type":"mcp-parser","parameters":{}},{"type":"recovery","parameters":null}]`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
}

// TestMiddlewareOrder pins the order of every middleware of the chain.
func TestMiddlewareOrder(t *testing.T) {
	rc := &RunConfig{
		Name: "all", Transport: "streamable-http", RemoteURL: "https://remote.example.com/mcp",
		AuditConfig:              DefaultAuditConfig(),
		OIDCConfig:               &OIDCConfig{Issuer: "https://idp"},
		EmbeddedAuthServerConfig: &EmbeddedAuthServerConfig{Issuer: "https://as", Upstreams: []UpstreamConfig{{Name: "okta"}}},
		TokenExchangeConfig:      &TokenExchangeConfig{TokenURL: "https://sts"},
		ToolsFilter:              []string{"a"},
		TelemetryConfig:          &TelemetryConfig{ServiceName: "all"},
		RateLimitConfig:          &RateLimitConfig{},
		ScalingConfig:            &ScalingConfig{SessionRedis: &SessionRedisConfig{Address: "redis:6379", DB: 2}},
		MutatingWebhooks:         []WebhookConfig{{Name: "m"}},
		ValidatingWebhooks:       []WebhookConfig{{Name: "v"}},
		AuthzConfig:              json.RawMessage(`{"version":"1.0","type":"cedarv1","cedar":{"policies":["permit(principal, action, resource);"],"entities_json":"[]"}}`),
		AWSStsConfig:             &AWSStsConfig{Region: "eu-west-1"},
		HeaderForward:            &HeaderForward{AddPlaintextHeaders: map[string]string{"X-A": "1"}},
	}
	if err := rc.PopulateMiddlewareConfigs(true); err != nil {
		t.Fatal(err)
	}
	want := []string{"bodylimit", "audit", "auth", "upstreamswap", "tokenexchange", "tool-filter", "tool-call-filter",
		"mcp-parser", "telemetry", "ratelimit", "mutating-webhook", "validating-webhook", "usagemetrics",
		"authorization", "awssts", "header-forward", "recovery"}
	if got := middlewareTypes(rc); !slices.Equal(got, want) {
		t.Fatalf("chain %v\nwant  %v", got, want)
	}
	out, _ := json.Marshal(rc.MiddlewareConfigs)
	for _, want := range []string{
		`"embedded_auth_server_issuer":"https://as"`,
		`{"type":"upstreamswap","parameters":{"config":{"provider_name":"okta"}}}`,
		`"redis_addr":"redis:6379","redis_db":2`,
		// Cedar reads the claims of the first upstream's token.
		`"entities_json":"[]","primary_upstream_provider":"okta"`,
		`"target_url":"https://remote.example.com/mcp"`,
		`{"type":"header-forward","parameters":{"add_headers":{"X-A":"1"}}}`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("%s missing from %s", want, out)
		}
	}
}

// TestMiddlewareStripAuth: an embedded authorization server without an
// upstream, or that does not inject its token, strips the client's
// credentials, and refuses a middleware that would add one back.
func TestMiddlewareStripAuth(t *testing.T) {
	for _, eas := range []*EmbeddedAuthServerConfig{
		{Issuer: "https://as"},
		{Issuer: "https://as", Upstreams: []UpstreamConfig{{Name: "okta"}}, DisableUpstreamTokenInjection: true},
	} {
		rc := &RunConfig{EmbeddedAuthServerConfig: eas}
		if err := rc.PopulateMiddlewareConfigs(false); err != nil {
			t.Fatal(err)
		}
		if got := middlewareTypes(rc); !slices.Equal(got, []string{"bodylimit", "auth", "strip-auth", "mcp-parser", "recovery"}) {
			t.Errorf("chain %v", got)
		}
		rc.TokenExchangeConfig = &TokenExchangeConfig{}
		if err := rc.PopulateMiddlewareConfigs(false); err == nil || !strings.Contains(err.Error(), "token exchange") {
			t.Errorf("token exchange after strip-auth: %v", err)
		}
	}
}
