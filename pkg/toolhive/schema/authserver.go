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
	// CIMD is written only when client ID metadata documents are enabled.
	CIMD              *CIMDConfig     `json:"cimd,omitempty"`
	InsecureAllowHTTP bool            `json:"insecure_allow_http,omitempty"`
	TrustedIssuers    []TrustedIssuer `json:"trusted_issuers,omitempty"`
	// The dynamic registration of confidential clients, and the redirect
	// URIs whose clients are confidential whatever they ask for.
	AllowConfidentialClientRegistration       bool     `json:"allow_confidential_client_registration,omitempty"`
	AllowPrivateKeyJWTRegistration            bool     `json:"allow_private_key_jwt_registration,omitempty"`
	ForceConfidentialRedirectURIs             []string `json:"force_confidential_redirect_uris,omitempty"`
	InsecureAllowConfidentialOverLoopbackHTTP bool     `json:"insecure_allow_confidential_over_loopback_http,omitempty"`
	// DelegateClients are static clients whose secrets are variables of
	// the container (ClientSecretEnvVar), never the secrets themselves.
	DelegateClients    []DelegateClient    `json:"delegate_clients,omitempty"`
	SPIFFETrustDomains []SPIFFETrustDomain `json:"spiffe_trust_domains,omitempty"`
	InboundGrants      *InboundGrants      `json:"inbound_grants,omitempty"`
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

// AuthServerStorage is ToolHive's storage.RunConfig, in memory or in
// Redis. MaxDCRClients caps the clients registered at /oauth/register; 0
// is no cap, nil the server's default.
type AuthServerStorage struct {
	Type          string       `json:"type,omitempty"`
	RedisConfig   *RedisConfig `json:"redis_config,omitempty"`
	MaxDCRClients *int         `json:"max_dcr_clients,omitempty"`
}

// RedisConfig is ToolHive's storage.RedisRunConfig: one address (a
// server or a cluster) or Sentinel, the ACL user whose name and password
// are variables of the container, and the prefix that keeps one
// workload's keys apart from another's.
type RedisConfig struct {
	Addr           string              `json:"addr,omitempty"`
	ClusterMode    bool                `json:"cluster_mode,omitempty"`
	SentinelConfig *RedisSentinel      `json:"sentinel_config,omitempty"`
	AuthType       string              `json:"auth_type"`
	ACLUserConfig  *RedisACLUser       `json:"acl_user_config,omitempty"`
	KeyPrefix      string              `json:"key_prefix"`
	DialTimeout    string              `json:"dial_timeout,omitempty"`
	ReadTimeout    string              `json:"read_timeout,omitempty"`
	WriteTimeout   string              `json:"write_timeout,omitempty"`
	TLS            *AuthServerRedisTLS `json:"tls,omitempty"`
	SentinelTLS    *AuthServerRedisTLS `json:"sentinel_tls,omitempty"`
}

// RedisSentinel is ToolHive's storage.SentinelRunConfig.
type RedisSentinel struct {
	MasterName    string   `json:"master_name"`
	SentinelAddrs []string `json:"sentinel_addrs"`
	DB            int      `json:"db,omitempty"`
}

// AuthServerRedisTLS is ToolHive's storage.RedisTLSRunConfig: the CA is a
// file mounted from a Secret.
type AuthServerRedisTLS struct {
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
	CACertFile         string `json:"ca_cert_file,omitempty"`
}

// RedisACLUser is ToolHive's storage.ACLUserRunConfig: the variables
// that carry the user's name and password.
type RedisACLUser struct {
	UsernameEnvVar string `json:"username_env_var"`
	PasswordEnvVar string `json:"password_env_var"`
}

// CIMDConfig is ToolHive's CIMDRunConfig: client ID metadata documents,
// and the cache of the documents fetched.
type CIMDConfig struct {
	Enabled          bool   `json:"enabled"`
	CacheMaxSize     int    `json:"cache_max_size,omitempty"`
	CacheFallbackTTL string `json:"cache_fallback_ttl,omitempty"`
}

// TrustedIssuer is ToolHive's tokenexchange.TrustedIssuer: an issuer
// whose tokens the server accepts as subject tokens or JWT bearer
// assertions. The lists ToolHive writes as copies are nil when empty, so
// a list without omitempty is written null.
type TrustedIssuer struct {
	Name                   string          `json:"name,omitempty"`
	IssuerURL              string          `json:"issuer_url"`
	ExpectedAudience       string          `json:"expected_audience"`
	JWKSURL                string          `json:"jwks_url,omitempty"`
	InsecureAllowHTTP      bool            `json:"insecure_allow_http,omitempty"`
	AllowPrivateIPs        bool            `json:"allow_private_ips,omitempty"`
	CAFilePath             string          `json:"ca_file_path,omitempty"`
	ActorClaim             string          `json:"actor_claim,omitempty"`
	AllowedActors          []string        `json:"allowed_actors,omitempty"`
	ActorMatcher           string          `json:"actor_matcher,omitempty"`
	AllowedDelegateClients []string        `json:"allowed_delegate_clients,omitempty"`
	AllowMayAct            bool            `json:"allow_may_act,omitempty"`
	JWTBearerGrant         *JWTBearerGrant `json:"jwt_bearer_grant,omitempty"`
}

// JWTBearerGrant is ToolHive's tokenexchange.JWTBearerGrantPolicy.
// MaxAssertionAge is a Go duration as Go prints it ("5m0s").
type JWTBearerGrant struct {
	MaxAssertionAge   string                    `json:"max_assertion_age"`
	SubjectBindings   []JWTBearerSubjectBinding `json:"subject_bindings"`
	AcceptedAudiences []string                  `json:"accepted_audiences,omitempty"`
}

// JWTBearerSubjectBinding is ToolHive's tokenexchange.JWTBearerSubjectBinding.
type JWTBearerSubjectBinding struct {
	Subject          string   `json:"subject"`
	AllowedResources []string `json:"allowed_resources"`
}

// DelegateClient is ToolHive's DelegateClientRunConfig, as its operator
// writes it: the client, the variable of its secret, its scopes and
// audiences.
type DelegateClient struct {
	ClientID           string   `json:"client_id"`
	ClientSecretEnvVar string   `json:"client_secret_env_var,omitempty"`
	Scopes             []string `json:"scopes"`
	Audiences          []string `json:"audiences"`
}

// SPIFFETrustDomain is ToolHive's SPIFFETrustDomainRunConfig.
type SPIFFETrustDomain struct {
	Name         string             `json:"name"`
	TrustDomain  string             `json:"trust_domain"`
	Methods      []string           `json:"methods"`
	BundleSource SPIFFEBundleSource `json:"bundle_source"`
}

// SPIFFEBundleSource is ToolHive's SPIFFEBundleSourceRunConfig; a file
// source is the bundle's ConfigMap key mounted in the pod.
type SPIFFEBundleSource struct {
	Type        string                   `json:"type"`
	Endpoint    *SPIFFEBundleEndpoint    `json:"endpoint,omitempty"`
	File        *SPIFFEFileBundle        `json:"file,omitempty"`
	WorkloadAPI *SPIFFEWorkloadAPIBundle `json:"workload_api,omitempty"`
}

// SPIFFEBundleEndpoint is ToolHive's SPIFFEBundleEndpointSourceRunConfig.
type SPIFFEBundleEndpoint struct {
	URL     string `json:"url"`
	Profile string `json:"profile"`
}

// SPIFFEFileBundle is ToolHive's SPIFFEFileBundleSourceRunConfig.
type SPIFFEFileBundle struct {
	Path string `json:"path"`
}

// SPIFFEWorkloadAPIBundle is ToolHive's SPIFFEWorkloadAPIBundleSourceRunConfig,
// which has no fields.
type SPIFFEWorkloadAPIBundle struct{}

// InboundGrants is ToolHive's InboundGrantsRunConfig: which clients may
// use the token exchange and JWT bearer grants, and how.
type InboundGrants struct {
	SPIFFEClientAuth []SPIFFEClientAuth     `json:"spiffe_client_auth,omitempty"`
	TokenExchange    *TokenExchangeGrant    `json:"token_exchange,omitempty"`
	JWTBearer        *JWTBearerInboundGrant `json:"jwt_bearer,omitempty"`
}

// SPIFFEClientAuth is ToolHive's SPIFFEClientAuthRunConfig.
type SPIFFEClientAuth struct {
	TrustDomainRef   string   `json:"trust_domain_ref"`
	PrincipalPattern string   `json:"principal_pattern"`
	ClientID         string   `json:"client_id"`
	Methods          []string `json:"methods"`
	Resources        []string `json:"resources,omitempty"`
	Audiences        []string `json:"audiences"`
	Scopes           []string `json:"scopes"`
	GrantTypes       []string `json:"grant_types"`
}

// TokenExchangeGrant is ToolHive's TokenExchangeInboundGrantRunConfig.
type TokenExchangeGrant struct {
	DelegateClients []DelegateClient            `json:"delegate_clients,omitempty"`
	IssuerPolicies  []TokenExchangeIssuerPolicy `json:"issuer_policies,omitempty"`
}

// TokenExchangeIssuerPolicy is ToolHive's TokenExchangeIssuerPolicyRunConfig.
type TokenExchangeIssuerPolicy struct {
	IssuerRef              string   `json:"issuer_ref"`
	ExpectedAudience       string   `json:"expected_audience"`
	ActorClaim             string   `json:"actor_claim,omitempty"`
	AllowedActors          []string `json:"allowed_actors,omitempty"`
	ActorMatcher           string   `json:"actor_matcher,omitempty"`
	AllowedDelegateClients []string `json:"allowed_delegate_clients"`
	AllowMayAct            bool     `json:"allow_may_act,omitempty"`
}

// JWTBearerInboundGrant is ToolHive's JWTBearerInboundGrantRunConfig.
type JWTBearerInboundGrant struct {
	IssuerPolicies []JWTBearerIssuerPolicy `json:"issuer_policies,omitempty"`
}

// JWTBearerIssuerPolicy is ToolHive's JWTBearerIssuerPolicyRunConfig.
type JWTBearerIssuerPolicy struct {
	IssuerRef         string                    `json:"issuer_ref"`
	MaxAssertionAge   string                    `json:"max_assertion_age"`
	SubjectBindings   []JWTBearerSubjectBinding `json:"subject_bindings"`
	AcceptedAudiences []string                  `json:"accepted_audiences,omitempty"`
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
	CAFilePath                    string            `json:"ca_file_path,omitempty"`
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
	CAFilePath                    string                `json:"ca_file_path,omitempty"`
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
