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
	Upstreams            []UpstreamConfig `json:"upstreams"`
	ScopesSupported      []string         `json:"scopes_supported,omitempty"`
	BaselineClientScopes []string         `json:"baseline_client_scopes,omitempty"`
	AllowedAudiences     []string         `json:"allowed_audiences"`
	// Storage is written only for in-memory storage with a cap on
	// registered clients, as ToolHive's operator writes it.
	Storage                       *AuthServerStorage `json:"storage,omitempty"`
	DisableUpstreamTokenInjection bool               `json:"disable_upstream_token_injection,omitempty"`
	InsecureAllowHTTP             bool               `json:"insecure_allow_http,omitempty"`
	// TLSListener names the certificate and key files of the server's
	// TLS listener on port 8443.
	TLSListener           *TLSListenerConfig     `json:"tls_listener,omitempty"`
	RegistrationRateLimit *RegistrationRateLimit `json:"registration_rate_limit,omitempty"`
}

// AuthServerStorage is ToolHive's storage.RunConfig, in memory.
// MaxDCRClients caps the clients registered at /oauth/register; 0 is no
// cap, nil the server's default.
type AuthServerStorage struct {
	Type          string `json:"type,omitempty"`
	MaxDCRClients *int   `json:"max_dcr_clients,omitempty"`
}

// TLSListenerConfig is ToolHive's authserver.TLSListenerRunConfig.
type TLSListenerConfig struct {
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
}

// RegistrationRateLimit is ToolHive's RegistrationRateLimitRunConfig: a
// token bucket on /oauth/register, Burst registrations at once and
// RequestsPerSecond after. The rate is a float64, written as encoding/json
// writes one in the RunConfig ("1000000") and as ToolHive's YAML encoder
// writes one in authserver-config.yaml ("1e+06").
type RegistrationRateLimit struct {
	RequestsPerSecond float64 `json:"requests_per_second"`
	Burst             int     `json:"burst"`
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
// ClientID is written empty when the client is registered at run time
// (DCRConfig), as ToolHive writes it.
type OIDCUpstreamConfig struct {
	IssuerURL                     string            `json:"issuer_url"`
	ClientID                      string            `json:"client_id"`
	ClientSecretEnvVar            string            `json:"client_secret_env_var,omitempty"`
	RedirectURI                   string            `json:"redirect_uri,omitempty"`
	Scopes                        []string          `json:"scopes,omitempty"`
	AdditionalAuthorizationParams map[string]string `json:"additional_authorization_params,omitempty"`
	AdditionalTokenParams         map[string]string `json:"additional_token_params,omitempty"`
	OmitScopeOnRefresh            bool              `json:"omit_scope_on_refresh,omitempty"`
	SubjectClaim                  string            `json:"subject_claim,omitempty"`
	DCRConfig                     *DCRConfig        `json:"dcr_config,omitempty"`
	AllowPrivateIPs               bool              `json:"allow_private_ips,omitempty"`
}

// DCRConfig is ToolHive's authserver.DCRUpstreamConfig: the upstream
// client is registered at run time (RFC 7591). The initial access token
// is never here: InitialAccessTokenEnvVar names the variable that carries
// it from its Secret. RegistrationProbeInterval is a Go duration as Go
// prints it ("5m0s").
type DCRConfig struct {
	DiscoveryURL              string `json:"discovery_url,omitempty"`
	RegistrationEndpoint      string `json:"registration_endpoint,omitempty"`
	RotationKey               string `json:"rotation_key,omitempty"`
	RegistrationProbe         string `json:"registration_probe,omitempty"`
	RegistrationProbeInterval string `json:"registration_probe_interval,omitempty"`
	InitialAccessTokenEnvVar  string `json:"initial_access_token_env_var,omitempty"`
	SoftwareID                string `json:"software_id,omitempty"`
	SoftwareStatement         string `json:"software_statement,omitempty"`
}
