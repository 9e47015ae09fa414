package schema

// AuthServerSchemaVersion is the schema_version of ToolHive's embedded
// authorization server configuration at the pinned release.
const AuthServerSchemaVersion = "v0.1.0"

// EmbeddedAuthServerConfig is the part of ToolHive's authserver.RunConfig
// hivekeeper writes. No secret is in it: signing keys and HMAC secrets
// are files of Secret volumes, upstream client secrets are variables of
// the proxy container, both named here.
type EmbeddedAuthServerConfig struct {
	SchemaVersion                string               `json:"schema_version"`
	Issuer                       string               `json:"issuer"`
	AuthorizationEndpointBaseURL string               `json:"authorization_endpoint_base_url,omitempty"`
	SigningKeyConfig             *SigningKeyConfig    `json:"signing_key_config,omitempty"`
	HMACSecretFiles              []string             `json:"hmac_secret_files,omitempty"`
	TokenLifespans               *TokenLifespanConfig `json:"token_lifespans,omitempty"`
	// Upstreams is always written, [] for none, as ToolHive does.
	Upstreams                     []UpstreamConfig `json:"upstreams"`
	ScopesSupported               []string         `json:"scopes_supported,omitempty"`
	BaselineClientScopes          []string         `json:"baseline_client_scopes,omitempty"`
	AllowedAudiences              []string         `json:"allowed_audiences"`
	DisableUpstreamTokenInjection bool             `json:"disable_upstream_token_injection,omitempty"`
	InsecureAllowHTTP             bool             `json:"insecure_allow_http,omitempty"`
}

// SigningKeyConfig names the signing key files: the first key signs, the
// others only verify (a rotation).
type SigningKeyConfig struct {
	KeyDir           string   `json:"key_dir,omitempty"`
	SigningKeyFile   string   `json:"signing_key_file,omitempty"`
	FallbackKeyFiles []string `json:"fallback_key_files,omitempty"`
}

// TokenLifespanConfig holds durations as written ("1h"); the runner
// parses them.
type TokenLifespanConfig struct {
	AccessTokenLifespan  string `json:"access_token_lifespan,omitempty"`
	RefreshTokenLifespan string `json:"refresh_token_lifespan,omitempty"`
	AuthCodeLifespan     string `json:"auth_code_lifespan,omitempty"`
}

// UpstreamConfig is the identity provider the authorization server
// delegates the user's login to.
type UpstreamConfig struct {
	Name       string              `json:"name,omitempty"`
	Type       string              `json:"type"`
	OIDCConfig *OIDCUpstreamConfig `json:"oidc_config,omitempty"`
}

// OIDCUpstreamConfig is an OIDC upstream. The client secret is the
// variable ClientSecretEnvVar of the proxy container.
type OIDCUpstreamConfig struct {
	IssuerURL                     string            `json:"issuer_url"`
	ClientID                      string            `json:"client_id"`
	ClientSecretEnvVar            string            `json:"client_secret_env_var,omitempty"`
	RedirectURI                   string            `json:"redirect_uri,omitempty"`
	Scopes                        []string          `json:"scopes,omitempty"`
	AdditionalAuthorizationParams map[string]string `json:"additional_authorization_params,omitempty"`
	SubjectClaim                  string            `json:"subject_claim,omitempty"`
	AllowPrivateIPs               bool              `json:"allow_private_ips,omitempty"`
}
