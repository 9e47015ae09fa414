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
	Upstreams []UpstreamConfig `json:"upstreams"`
	// UpstreamFilter is a vMCP's spec.authServerUpstreamFilter, which
	// ToolHive v0.63.0's operator writes here, after the upstreams.
	UpstreamFilter       *UpstreamFilter `json:"upstream_filter,omitempty"`
	ScopesSupported      []string        `json:"scopes_supported,omitempty"`
	BaselineClientScopes []string        `json:"baseline_client_scopes,omitempty"`
	AllowedAudiences     []string        `json:"allowed_audiences"`
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

// UpstreamFilter is ToolHive's group-based upstream filter
// (upstreamfilter.GroupBasedFilterConfig): which upstreams after the first
// a user signs in with, by the groups in one claim of the identity the
// first upstream resolves. Its keys are camelCase, unlike the rest of the
// file, as ToolHive's are.
type UpstreamFilter struct {
	Claim            string               `json:"claim,omitempty"`
	Rules            []UpstreamFilterRule `json:"rules"`
	DefaultUpstreams []string             `json:"defaultUpstreams,omitempty"`
}

// UpstreamFilterRule gives the members of any of Groups the upstreams
// UpstreamProviders.
type UpstreamFilterRule struct {
	Groups            []string `json:"groups"`
	UpstreamProviders []string `json:"upstreamProviders"`
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
	Name         string                `json:"name,omitempty"`
	Type         string                `json:"type"`
	OIDCConfig   *OIDCUpstreamConfig   `json:"oidc_config,omitempty"`
	OAuth2Config *OAuth2UpstreamConfig `json:"oauth2_config,omitempty"`
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
	UserInfoOverride              *UserInfoConfig   `json:"userinfo_override,omitempty"`
	AdditionalAuthorizationParams map[string]string `json:"additional_authorization_params,omitempty"`
	AdditionalTokenParams         map[string]string `json:"additional_token_params,omitempty"`
	OmitScopeOnRefresh            bool              `json:"omit_scope_on_refresh,omitempty"`
	SubjectClaim                  string            `json:"subject_claim,omitempty"`
	DCRConfig                     *DCRConfig        `json:"dcr_config,omitempty"`
	AllowPrivateIPs               bool              `json:"allow_private_ips,omitempty"`
}

// OAuth2UpstreamConfig is ToolHive's authserver.OAuth2UpstreamRunConfig:
// an upstream that is not an OIDC provider, with its endpoints named, and
// how the user's identity is read (from a userinfo endpoint, from the
// token response, or else synthesized by the server). ClientID is
// written empty with a registration at run time (DCRConfig).
type OAuth2UpstreamConfig struct {
	AuthorizationEndpoint         string                `json:"authorization_endpoint"`
	TokenEndpoint                 string                `json:"token_endpoint"`
	ClientID                      string                `json:"client_id"`
	ClientSecretEnvVar            string                `json:"client_secret_env_var,omitempty"`
	TokenEndpointAuthMethod       string                `json:"token_endpoint_auth_method,omitempty"`
	RedirectURI                   string                `json:"redirect_uri,omitempty"`
	Scopes                        []string              `json:"scopes,omitempty"`
	UserInfo                      *UserInfoConfig       `json:"userinfo,omitempty"`
	TokenResponseMapping          *TokenResponseMapping `json:"token_response_mapping,omitempty"`
	IdentityFromToken             *IdentityFromToken    `json:"identity_from_token,omitempty"`
	AdditionalAuthorizationParams map[string]string     `json:"additional_authorization_params,omitempty"`
	AdditionalTokenParams         map[string]string     `json:"additional_token_params,omitempty"`
	OmitScopeOnRefresh            bool                  `json:"omit_scope_on_refresh,omitempty"`
	DCRConfig                     *DCRConfig            `json:"dcr_config,omitempty"`
	AllowPrivateIPs               bool                  `json:"allow_private_ips,omitempty"`
	InsecureAllowHTTP             bool                  `json:"insecure_allow_http,omitempty"`
}

// UserInfoConfig is ToolHive's UserInfoRunConfig: where the user's
// claims are fetched, and which of them are the subject, name and email.
type UserInfoConfig struct {
	EndpointURL       string                `json:"endpoint_url"`
	HTTPMethod        string                `json:"http_method,omitempty"`
	AdditionalHeaders map[string]string     `json:"additional_headers,omitempty"`
	FieldMapping      *UserInfoFieldMapping `json:"field_mapping,omitempty"`
}

// UserInfoFieldMapping is ToolHive's UserInfoFieldMappingRunConfig.
type UserInfoFieldMapping struct {
	SubjectFields []string `json:"subject_fields,omitempty"`
	NameFields    []string `json:"name_fields,omitempty"`
	EmailFields   []string `json:"email_fields,omitempty"`
}

// TokenResponseMapping is ToolHive's TokenResponseMappingRunConfig: the
// dot paths of a token response that does not follow the standard.
type TokenResponseMapping struct {
	AccessTokenPath  string `json:"access_token_path"`
	ScopePath        string `json:"scope_path,omitempty"`
	RefreshTokenPath string `json:"refresh_token_path,omitempty"`
	ExpiresInPath    string `json:"expires_in_path,omitempty"`
}

// IdentityFromToken is ToolHive's IdentityFromTokenRunConfig: the dot
// paths of the user's identity in the token response.
type IdentityFromToken struct {
	SubjectPath string `json:"subject_path"`
	NamePath    string `json:"name_path,omitempty"`
	EmailPath   string `json:"email_path,omitempty"`
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
