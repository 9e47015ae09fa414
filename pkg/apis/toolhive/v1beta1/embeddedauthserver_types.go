package v1beta1

// The embedded OAuth 2.0 authorization server of ToolHive's proxy runner and
// vMCP: MCPExternalAuthConfig.spec.embeddedAuthServer (type
// embeddedAuthServer) and VirtualMCPServer.spec.authServerConfig carry the
// same block. Field names, JSON keys, enums, defaults, limits and CEL rules
// are those of ToolHive's CRDs at the API release (hack/versions.env); the
// limits on lists and strings are also what keeps the CEL rules within the
// API server's cost budget. Durations are strings (with the CRD's pattern or
// a CEL duration() rule) so that a malformed value is a problem of one
// object, never a decoding error of the whole kind.

// Upstream identity provider types of the embedded authorization server.
const (
	UpstreamProviderTypeOIDC   = "oidc"
	UpstreamProviderTypeOAuth2 = "oauth2"
)

// Storage types of the embedded authorization server.
const (
	AuthServerStorageMemory = "memory"
	AuthServerStorageRedis  = "redis"
)

// EmbeddedAuthServerConfig configures the authorization server the proxy or
// vMCP runs in front of the MCP server: its issuer and keys, the upstream
// identity providers users sign in with, the grants it accepts from
// clients, and where it keeps its state.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="(has(self.upstreamProviders) && size(self.upstreamProviders) > 0) || (has(self.delegateClients) && size(self.delegateClients) > 0) || (has(self.trustedIssuers) && self.trustedIssuers.exists(issuer, has(issuer.jwtBearerGrant))) || (has(self.inboundGrants) && (has(self.inboundGrants.tokenExchange) || has(self.inboundGrants.jwtBearer) || (has(self.inboundGrants.spiffeClientAuth) && size(self.inboundGrants.spiffeClientAuth) > 0)))",message="set an upstream provider or an inbound grant: the server has nothing to issue tokens for otherwise"
// +kubebuilder:validation:XValidation:rule="((has(self.spiffeTrustDomains) && size(self.spiffeTrustDomains) > 0) == (has(self.inboundGrants) && has(self.inboundGrants.spiffeClientAuth) && size(self.inboundGrants.spiffeClientAuth) > 0))",message="spiffeTrustDomains and inboundGrants.spiffeClientAuth go together: set both or neither"
// +kubebuilder:validation:XValidation:rule="!has(self.spiffeTrustDomains) || self.spiffeTrustDomains.all(domain, self.spiffeTrustDomains.filter(other, other.name == domain.name).size() == 1)",message="two spiffeTrustDomains have the same name"
// +kubebuilder:validation:XValidation:rule="!has(self.spiffeTrustDomains) || self.spiffeTrustDomains.all(domain, self.spiffeTrustDomains.filter(other, other.trustDomain == domain.trustDomain).size() == 1)",message="two spiffeTrustDomains have the same trustDomain"
// +kubebuilder:validation:XValidation:rule="!has(self.spiffeTrustDomains) || self.spiffeTrustDomains.all(domain, has(self.inboundGrants) && has(self.inboundGrants.spiffeClientAuth) && self.inboundGrants.spiffeClientAuth.exists(client, client.trustDomainRef == domain.name))",message="a SPIFFE trust domain no spiffeClientAuth entry names"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.spiffeClientAuth) || self.inboundGrants.spiffeClientAuth.all(client, has(self.spiffeTrustDomains) && self.spiffeTrustDomains.exists(domain, domain.name == client.trustDomainRef))",message="a spiffeClientAuth trustDomainRef names no spiffeTrustDomains entry"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.spiffeClientAuth) || self.inboundGrants.spiffeClientAuth.all(client, !has(self.spiffeTrustDomains) || !self.spiffeTrustDomains.exists(domain, domain.name == client.trustDomainRef) || self.spiffeTrustDomains.exists(domain, domain.name == client.trustDomainRef && client.methods.all(method, method in domain.methods)))",message="a spiffeClientAuth entry uses a method its trust domain does not allow"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.spiffeClientAuth) || self.inboundGrants.spiffeClientAuth.all(client, !has(self.spiffeTrustDomains) || !self.spiffeTrustDomains.exists(domain, domain.name == client.trustDomainRef) || self.spiffeTrustDomains.exists(domain, domain.name == client.trustDomainRef && client.principalPattern.startsWith('spiffe://' + domain.trustDomain + '/')))",message="a spiffeClientAuth principalPattern is outside its trust domain"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.spiffeClientAuth) || self.inboundGrants.spiffeClientAuth.all(client, self.inboundGrants.spiffeClientAuth.filter(other, other.clientId == client.clientId).size() == 1)",message="two spiffeClientAuth entries have the same clientId"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.spiffeClientAuth) || self.inboundGrants.spiffeClientAuth.all(client, self.inboundGrants.spiffeClientAuth.filter(other, other.principalPattern == client.principalPattern).size() == 1)",message="two spiffeClientAuth entries have the same principalPattern"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.spiffeClientAuth) || self.inboundGrants.spiffeClientAuth.all(client, !client.clientId.startsWith('synthetic:'))",message="a spiffeClientAuth clientId may not start with synthetic:, a prefix the server reserves"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.spiffeClientAuth) || self.inboundGrants.spiffeClientAuth.all(client, !client.clientId.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+'))",message="a spiffeClientAuth clientId may not be an absolute URL"
// +kubebuilder:validation:XValidation:rule="!(has(self.insecureAllowHTTP) && self.insecureAllowHTTP && ((has(self.allowConfidentialClientRegistration) && self.allowConfidentialClientRegistration) || (has(self.delegateClients) && size(self.delegateClients) > 0) || (has(self.inboundGrants) && has(self.inboundGrants.tokenExchange) && has(self.inboundGrants.tokenExchange.delegateClients) && size(self.inboundGrants.tokenExchange.delegateClients) > 0)))",message="insecureAllowHTTP would send client secrets in clear text: it excludes confidential client registration and delegate clients"
// +kubebuilder:validation:XValidation:rule="(!has(self.forceConfidentialRedirectUris) || size(self.forceConfidentialRedirectUris) == 0) || (has(self.allowConfidentialClientRegistration) && self.allowConfidentialClientRegistration)",message="forceConfidentialRedirectUris needs allowConfidentialClientRegistration"
// +kubebuilder:validation:XValidation:rule="!self.issuer.startsWith('http://') || (has(self.insecureAllowConfidentialOverLoopbackHTTP) && self.insecureAllowConfidentialOverLoopbackHTTP) || ((!has(self.allowConfidentialClientRegistration) || !self.allowConfidentialClientRegistration) && (!has(self.delegateClients) || size(self.delegateClients) == 0) && (!has(self.inboundGrants) || !has(self.inboundGrants.tokenExchange) || !has(self.inboundGrants.tokenExchange.delegateClients) || size(self.inboundGrants.tokenExchange.delegateClients) == 0))",message="an http:// issuer with confidential clients or delegate clients needs insecureAllowConfidentialOverLoopbackHTTP (and a loopback issuer)"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.tokenExchange) || ((!has(self.delegateClients) || size(self.delegateClients) == 0) && (!has(self.trustedIssuers) || !self.trustedIssuers.exists(issuer, has(issuer.expectedAudience) || has(issuer.actorClaim) || has(issuer.allowedActors) || has(issuer.actorMatcher) || has(issuer.allowedDelegateClients) || (has(issuer.allowMayAct) && issuer.allowMayAct))))",message="inboundGrants.tokenExchange replaces delegateClients and the token-exchange fields of trustedIssuers: use one or the other"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.jwtBearer) || !has(self.trustedIssuers) || !self.trustedIssuers.exists(issuer, has(issuer.jwtBearerGrant))",message="inboundGrants.jwtBearer replaces trustedIssuers[].jwtBearerGrant: use one or the other"
// +kubebuilder:validation:XValidation:rule="!has(self.trustedIssuers) || self.trustedIssuers.all(issuer, !has(issuer.name) || self.trustedIssuers.filter(other, has(other.name) && other.name == issuer.name).size() == 1)",message="two trustedIssuers have the same name"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.tokenExchange) || !has(self.inboundGrants.tokenExchange.issuerPolicies) || self.inboundGrants.tokenExchange.issuerPolicies.all(policy, has(self.trustedIssuers) && self.trustedIssuers.exists(issuer, has(issuer.name) && issuer.name == policy.issuerRef))",message="a tokenExchange issuerRef names no trustedIssuers entry"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.tokenExchange) || !has(self.inboundGrants.tokenExchange.issuerPolicies) || self.inboundGrants.tokenExchange.issuerPolicies.all(policy, self.inboundGrants.tokenExchange.issuerPolicies.filter(other, other.issuerRef == policy.issuerRef).size() == 1)",message="two tokenExchange issuerPolicies name the same issuerRef"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.jwtBearer) || !has(self.inboundGrants.jwtBearer.issuerPolicies) || self.inboundGrants.jwtBearer.issuerPolicies.all(policy, has(self.trustedIssuers) && self.trustedIssuers.exists(issuer, has(issuer.name) && issuer.name == policy.issuerRef))",message="a jwtBearer issuerRef names no trustedIssuers entry"
// +kubebuilder:validation:XValidation:rule="!has(self.inboundGrants) || !has(self.inboundGrants.jwtBearer) || !has(self.inboundGrants.jwtBearer.issuerPolicies) || self.inboundGrants.jwtBearer.issuerPolicies.all(policy, self.inboundGrants.jwtBearer.issuerPolicies.filter(other, other.issuerRef == policy.issuerRef).size() == 1)",message="two jwtBearer issuerPolicies name the same issuerRef"
type EmbeddedAuthServerConfig struct {
	// Issuer is the server's issuer URL, as tokens and metadata name it:
	// scheme and host, an optional path, no trailing slash.
	// +kubebuilder:validation:Pattern=`^https?://[^\s?#]+[^/\s?#]$`
	// +required
	Issuer string `json:"issuer"`
	// AuthorizationEndpointBaseURL is where clients reach the authorization
	// endpoint when that differs from the issuer (a public hostname in
	// front of an in-cluster issuer).
	// +kubebuilder:validation:Pattern=`^https?://[^\s?#]+[^/\s?#]$`
	// +optional
	AuthorizationEndpointBaseURL string `json:"authorizationEndpointBaseUrl,omitempty"`
	// SigningKeySecretRefs are the PEM private keys tokens are signed with,
	// the first one current, the others still published for verification.
	// +kubebuilder:validation:MaxItems=5
	// +listType=atomic
	// +optional
	SigningKeySecretRefs []SecretKeyRef `json:"signingKeySecretRefs,omitempty"`
	// HMACSecretRefs are the secrets authorization codes and refresh
	// tokens are protected with, the first one current.
	// +listType=atomic
	// +optional
	HMACSecretRefs []SecretKeyRef `json:"hmacSecretRefs,omitempty"`
	// TokenLifespans override how long issued tokens live.
	// +optional
	TokenLifespans *TokenLifespanConfig `json:"tokenLifespans,omitempty"`
	// SPIFFETrustDomains are the SPIFFE trust domains whose workloads may
	// authenticate as clients (inboundGrants.spiffeClientAuth).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	SPIFFETrustDomains []SPIFFETrustDomainConfig `json:"spiffeTrustDomains,omitempty"`
	// InboundGrants are the grants the server accepts besides the
	// authorization code flow.
	// +optional
	InboundGrants *InboundGrantsConfig `json:"inboundGrants,omitempty"`
	// TLSListener makes the server listen with TLS, with the certificate
	// and key of these Secret keys.
	// +optional
	TLSListener *TLSListenerConfig `json:"tlsListener,omitempty"`
	// UpstreamProviders are the identity providers users sign in with.
	// +listType=map
	// +listMapKey=name
	// +optional
	UpstreamProviders []UpstreamProviderConfig `json:"upstreamProviders,omitempty"`
	// PrimaryUpstreamProvider names, among several upstreams, the one whose
	// token's claims a vMCP's Cedar policies read; with the single upstream
	// of an MCPServer or MCPRemoteProxy it has no effect.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	// +optional
	PrimaryUpstreamProvider string `json:"primaryUpstreamProvider,omitempty"`
	// Storage is where sessions, clients and tokens are kept: memory (the
	// default) or Redis.
	// +optional
	Storage *AuthServerStorageConfig `json:"storage,omitempty"`
	// DisableUpstreamTokenInjection makes the proxy, once it has validated
	// the client's token, strip the client's credential headers instead of
	// sending the upstream provider's token: the MCP server gets an
	// unauthenticated request.
	// +kubebuilder:default=false
	// +optional
	DisableUpstreamTokenInjection bool `json:"disableUpstreamTokenInjection,omitempty"`
	// InsecureAllowHTTP allows http:// URLs for the issuer and upstreams.
	// For development only.
	// +kubebuilder:default=false
	// +optional
	InsecureAllowHTTP bool `json:"insecureAllowHTTP,omitempty"`
	// BaselineClientScopes are scopes every dynamically registered client
	// may request, beside the ones it registered with.
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:Pattern=`^[\x21\x23-\x5B\x5D-\x7E]+$`
	// +listType=atomic
	// +optional
	BaselineClientScopes []string `json:"baselineClientScopes,omitempty"`
	// AllowConfidentialClientRegistration lets dynamic registration create
	// clients with a secret, not only public ones.
	// +kubebuilder:default=false
	// +optional
	AllowConfidentialClientRegistration bool `json:"allowConfidentialClientRegistration,omitempty"`
	// AllowPrivateKeyJWTRegistration lets dynamic registration create
	// clients that authenticate with a signed JWT (private_key_jwt).
	// +kubebuilder:default=false
	// +optional
	AllowPrivateKeyJWTRegistration bool `json:"allowPrivateKeyJWTRegistration,omitempty"`
	// InsecureAllowConfidentialOverLoopbackHTTP allows confidential clients
	// with an http:// issuer, which must then be a loopback address. For
	// local development only.
	// +kubebuilder:default=false
	// +optional
	InsecureAllowConfidentialOverLoopbackHTTP bool `json:"insecureAllowConfidentialOverLoopbackHTTP,omitempty"`
	// DelegateClients are pre-registered confidential clients that may
	// exchange a user's token for one of this server (the older form of
	// inboundGrants.tokenExchange.delegateClients).
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	DelegateClients []DelegateClientConfig `json:"delegateClients,omitempty"`
	// TrustedIssuers are other issuers whose tokens the server accepts as
	// grants (token exchange, JWT bearer).
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	TrustedIssuers []TrustedIssuerConfig `json:"trustedIssuers,omitempty"`
	// ForceConfidentialRedirectURIs are redirect URIs (exact matches) whose
	// dynamically registered clients get a client secret even when they
	// register as public clients.
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:Pattern=`^https://[^\s?#]+$`
	// +listType=atomic
	// +optional
	ForceConfidentialRedirectURIs []string `json:"forceConfidentialRedirectUris,omitempty"`
	// CIMD lets clients identify themselves by a client ID metadata
	// document URL instead of registering.
	// +optional
	CIMD *EmbeddedAuthServerCIMDConfig `json:"cimd,omitempty"`
	// RegistrationRateLimit limits dynamic client registrations with a
	// token bucket.
	// +kubebuilder:validation:XValidation:rule="duration(self.refillPeriod) > duration('0s')",message="registrationRateLimit.refillPeriod must be longer than zero"
	// +optional
	RegistrationRateLimit *RateLimitBucket `json:"registrationRateLimit,omitempty"`
}

// TokenLifespanConfig are the lifetimes of issued tokens, as Go durations.
// +kubebuilder:pruning:PreserveUnknownFields
type TokenLifespanConfig struct {
	// AccessTokenLifespan of access tokens.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	AccessTokenLifespan string `json:"accessTokenLifespan,omitempty"`
	// RefreshTokenLifespan of refresh tokens.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	RefreshTokenLifespan string `json:"refreshTokenLifespan,omitempty"`
	// AuthCodeLifespan of authorization codes.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	AuthCodeLifespan string `json:"authCodeLifespan,omitempty"`
}

// TLSListenerConfig is the certificate the server listens with.
// +kubebuilder:pruning:PreserveUnknownFields
type TLSListenerConfig struct {
	// CertificateSecretRef is the PEM certificate (chain).
	// +required
	CertificateSecretRef *SecretKeyRef `json:"certificateSecretRef"`
	// PrivateKeySecretRef is the certificate's PEM private key.
	// +required
	PrivateKeySecretRef *SecretKeyRef `json:"privateKeySecretRef"`
}

// EmbeddedAuthServerCIMDConfig turns on client ID metadata documents.
// +kubebuilder:pruning:PreserveUnknownFields
type EmbeddedAuthServerCIMDConfig struct {
	// Enabled accepts https client IDs whose metadata document the server
	// fetches.
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`
	// CacheMaxSize is how many fetched documents are cached; 256 when
	// unset.
	// +kubebuilder:validation:Minimum=1
	// +optional
	CacheMaxSize int `json:"cacheMaxSize,omitempty"`
	// CacheFallbackTTL is how long every fetched document is cached, a Go
	// duration; 5m when unset.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	CacheFallbackTTL string `json:"cacheFallbackTtl,omitempty"`
}

// DelegateClientConfig is a confidential client registered ahead of time.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="has(self.clientSecretRef) && size(self.clientSecretRef.name) > 0 && size(self.clientSecretRef.key) > 0",message="clientSecretRef needs a name and a key"
type DelegateClientConfig struct {
	// ClientID of the client.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	ClientID string `json:"clientId"`
	// ClientSecretRef is the client's secret.
	// +required
	ClientSecretRef *SecretKeyRef `json:"clientSecretRef"`
	// Scopes the client may be granted.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +required
	Scopes []string `json:"scopes"`
	// Audiences the client's tokens may be issued for.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=2048
	// +listType=atomic
	// +required
	Audiences []string `json:"audiences"`
}

// TrustedIssuerConfig is an issuer whose tokens the server accepts as
// grants, with the rules for them.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!has(self.allowedDelegateClients) || !('*' in self.allowedDelegateClients) || size(self.allowedDelegateClients) == 1",message="allowedDelegateClients is either \"*\" alone or a list of client IDs"
// +kubebuilder:validation:XValidation:rule="!(has(self.allowMayAct) && self.allowMayAct && '*' in self.allowedDelegateClients)",message="allowMayAct cannot be combined with allowedDelegateClients \"*\""
// +kubebuilder:validation:XValidation:rule="!has(self.actorClaim) || !(self.actorClaim in ['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'name', 'email', 'scope', 'scp', 'may_act'])",message="actorClaim may not be a registered or identity claim; name one such as client_id, azp, appid or cid"
// +kubebuilder:validation:XValidation:rule="!(has(self.allowPrivateIPs) && self.allowPrivateIPs) || (has(self.jwksUrl) && self.jwksUrl != \"\")",message="allowPrivateIPs needs an explicit jwksUrl"
// +kubebuilder:validation:XValidation:rule="!((has(self.actorClaim) && size(self.actorClaim) > 0) || (has(self.actorMatcher) && size(self.actorMatcher) > 0) || (has(self.allowMayAct) && self.allowMayAct) || (has(self.allowedActors) && size(self.allowedActors) > 0) || (has(self.allowedDelegateClients) && size(self.allowedDelegateClients) > 0)) || (has(self.expectedAudience) && size(self.expectedAudience) > 0)",message="a token-exchange policy on a trusted issuer needs expectedAudience"
// +kubebuilder:validation:XValidation:rule="!((has(self.expectedAudience) && size(self.expectedAudience) > 0) || (has(self.actorClaim) && size(self.actorClaim) > 0) || (has(self.actorMatcher) && size(self.actorMatcher) > 0) || (has(self.allowMayAct) && self.allowMayAct) || (has(self.allowedActors) && size(self.allowedActors) > 0)) || (has(self.allowedDelegateClients) && size(self.allowedDelegateClients) > 0)",message="a token-exchange policy on a trusted issuer needs allowedDelegateClients"
type TrustedIssuerConfig struct {
	// Name of the issuer, which issuer policies refer to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// IssuerURL is the issuer's iss value.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +required
	IssuerURL string `json:"issuerUrl"`
	// ExpectedAudience a presented token must carry.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	ExpectedAudience string `json:"expectedAudience,omitempty"`
	// JWKSURL of the issuer's keys, when discovery should not be used.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	JWKSURL string `json:"jwksUrl,omitempty"`
	// InsecureAllowHTTP allows http:// issuer and JWKS URLs. For
	// development only.
	// +optional
	InsecureAllowHTTP bool `json:"insecureAllowHTTP,omitempty"`
	// AllowPrivateIPs allows the JWKS URL to resolve to a private address.
	// +optional
	AllowPrivateIPs bool `json:"allowPrivateIPs,omitempty"`
	// CABundleRef is a CA bundle trusted for the issuer's endpoints.
	// +optional
	CABundleRef *CABundleSource `json:"caBundleRef,omitempty"`
	// ActorClaim names the claim that identifies the acting party.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ActorClaim string `json:"actorClaim,omitempty"`
	// AllowedActors are the actor claim values accepted.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +optional
	AllowedActors []string `json:"allowedActors,omitempty"`
	// ActorMatcher is a CEL expression over the token's claims that
	// accepts the actor.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ActorMatcher string `json:"actorMatcher,omitempty"`
	// AllowedDelegateClients are the client IDs that may exchange tokens of
	// this issuer; "*" alone allows any.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +optional
	AllowedDelegateClients []string `json:"allowedDelegateClients,omitempty"`
	// AllowMayAct honours the token's may_act claim.
	// +kubebuilder:default=false
	// +optional
	AllowMayAct bool `json:"allowMayAct,omitempty"`
	// JWTBearerGrant accepts this issuer's tokens as JWT bearer grants
	// (RFC 7523), the older form of inboundGrants.jwtBearer.
	// +optional
	JWTBearerGrant *JWTBearerGrantConfig `json:"jwtBearerGrant,omitempty"`
}

// JWTBearerGrantConfig is what a JWT bearer assertion must satisfy.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="duration(self.maxAssertionAge) > duration('0s')",message="maxAssertionAge must be longer than zero"
// +kubebuilder:validation:XValidation:rule="self.subjectBindings.all(binding, self.subjectBindings.filter(other, other.subject == binding.subject).size() == 1)",message="two subjectBindings have the same subject"
type JWTBearerGrantConfig struct {
	// MaxAssertionAge is the oldest assertion accepted, a Go duration.
	// +required
	MaxAssertionAge string `json:"maxAssertionAge"`
	// SubjectBindings map assertion subjects to the resources they may get
	// tokens for.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +required
	SubjectBindings []JWTBearerSubjectBinding `json:"subjectBindings"`
	// AcceptedAudiences an assertion may be addressed to, beside the
	// server's own token endpoint.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=2048
	// +kubebuilder:validation:items:Pattern=`^https?://[^[:space:]]+$`
	// +listType=atomic
	// +optional
	AcceptedAudiences []string `json:"acceptedAudiences,omitempty"`
}

// JWTBearerSubjectBinding lets one assertion subject get tokens for the
// listed resources.
// +kubebuilder:pruning:PreserveUnknownFields
type JWTBearerSubjectBinding struct {
	// Subject is the assertion's exact sub value (no wildcards).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[^*]+$`
	// +required
	Subject string `json:"subject"`
	// AllowedResources are the resource URLs tokens may be issued for.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=2048
	// +kubebuilder:validation:items:Pattern=`^https?://[^[:space:]]+$`
	// +listType=atomic
	// +required
	AllowedResources []string `json:"allowedResources"`
}

// SPIFFE authentication methods and bundle sources.
const (
	SPIFFEMethodX509              = "spiffe_x509"
	SPIFFEMethodJWT               = "spiffe_jwt"
	SPIFFEBundleSourceEndpoint    = "bundle_endpoint"
	SPIFFEBundleSourceFile        = "file"
	SPIFFEBundleSourceWorkloadAPI = "workload_api"
)

// SPIFFETrustDomainConfig is a SPIFFE trust domain and where its trust
// bundle comes from.
// +kubebuilder:pruning:PreserveUnknownFields
type SPIFFETrustDomainConfig struct {
	// Name of the entry, which spiffeClientAuth entries refer to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// TrustDomain is the SPIFFE trust domain name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^([a-z0-9_]|[a-z0-9_]([a-z0-9_-]|\.[a-z0-9_-])*[a-z0-9_])$`
	// +required
	TrustDomain string `json:"trustDomain"`
	// Methods are how workloads of the domain may authenticate.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=spiffe_x509;spiffe_jwt
	// +listType=set
	// +required
	Methods []string `json:"methods"`
	// BundleSource is where the domain's trust bundle comes from.
	// +required
	BundleSource SPIFFEBundleSourceConfig `json:"bundleSource"`
}

// SPIFFEBundleSourceConfig names one source of a trust bundle and carries
// its block, and no other.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="self.type == 'bundle_endpoint' ? has(self.endpoint) : !has(self.endpoint)",message="endpoint is set if and only if type is bundle_endpoint"
// +kubebuilder:validation:XValidation:rule="self.type == 'file' ? has(self.file) : !has(self.file)",message="file is set if and only if type is file"
// +kubebuilder:validation:XValidation:rule="self.type == 'workload_api' ? has(self.workloadAPI) : !has(self.workloadAPI)",message="workloadAPI is set if and only if type is workload_api"
type SPIFFEBundleSourceConfig struct {
	// Type of the source.
	// +kubebuilder:validation:Enum=bundle_endpoint;file;workload_api
	// +required
	Type string `json:"type"`
	// Endpoint is a SPIFFE bundle endpoint (type bundle_endpoint).
	// +optional
	Endpoint *SPIFFEBundleEndpointSourceConfig `json:"endpoint,omitempty"`
	// File is a ConfigMap key holding the bundle (type file).
	// +optional
	File *SPIFFEFileBundleSourceConfig `json:"file,omitempty"`
	// WorkloadAPI reads the bundle from the SPIFFE Workload API (type
	// workload_api); it has no settings.
	// +optional
	WorkloadAPI *SPIFFEWorkloadAPIBundleSourceConfig `json:"workloadAPI,omitempty"`
}

// SPIFFEBundleEndpointSourceConfig is a SPIFFE bundle endpoint.
// +kubebuilder:pruning:PreserveUnknownFields
type SPIFFEBundleEndpointSourceConfig struct {
	// URL of the endpoint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +required
	URL string `json:"url"`
	// Profile is how the endpoint authenticates itself.
	// +kubebuilder:validation:Enum=https_web;https_spiffe
	// +required
	Profile string `json:"profile"`
}

// SPIFFEFileBundleSourceConfig is a trust bundle in a ConfigMap key of the
// workload's namespace, mounted into the pod.
// +kubebuilder:pruning:PreserveUnknownFields
type SPIFFEFileBundleSourceConfig struct {
	// ConfigMapName is the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	ConfigMapName string `json:"configMapName"`
	// ConfigMapKey is the key, a file name (not . or ..).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+$`
	// +kubebuilder:validation:XValidation:rule="self != '.' && !self.startsWith('..')",message="configMapKey may not be . or start with .."
	// +required
	ConfigMapKey string `json:"configMapKey"`
}

// SPIFFEWorkloadAPIBundleSourceConfig reads the bundle from the Workload
// API; it has no fields yet.
// +kubebuilder:pruning:PreserveUnknownFields
type SPIFFEWorkloadAPIBundleSourceConfig struct{}

// InboundGrantsConfig are the grants beside the authorization code flow.
// +kubebuilder:pruning:PreserveUnknownFields
type InboundGrantsConfig struct {
	// SPIFFEClientAuth lets SPIFFE workloads authenticate as clients.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	SPIFFEClientAuth []SPIFFEClientConfig `json:"spiffeClientAuth,omitempty"`
	// TokenExchange accepts OAuth 2.0 token exchange (RFC 8693).
	// +optional
	TokenExchange *TokenExchangeInboundGrantConfig `json:"tokenExchange,omitempty"`
	// JWTBearer accepts JWT bearer assertions (RFC 7523).
	// +optional
	JWTBearer *JWTBearerInboundGrantConfig `json:"jwtBearer,omitempty"`
}

// SPIFFEClientConfig is a client whose SPIFFE ID matches a pattern.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="self.principalPattern.split('/').all(segment, segment != '.' && segment != '..')",message="principalPattern may not have . or .. path segments"
type SPIFFEClientConfig struct {
	// TrustDomainRef names a spiffeTrustDomains entry.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	TrustDomainRef string `json:"trustDomainRef"`
	// PrincipalPattern is the SPIFFE ID, or a path prefix ending in /*,
	// of the workloads this client stands for.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^spiffe://[a-z0-9._-]+((/[a-zA-Z0-9._-]+)+(/\*)?|/\*)$`
	// +required
	PrincipalPattern string `json:"principalPattern"`
	// ClientID the workloads are given.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ClientID string `json:"clientId"`
	// Methods the workloads may authenticate with.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=spiffe_x509;spiffe_jwt
	// +listType=set
	// +required
	Methods []string `json:"methods"`
	// Resources tokens may be issued for.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=2048
	// +kubebuilder:validation:items:Pattern=`^https?://[^@#[:space:]]+$`
	// +listType=set
	// +optional
	Resources []string `json:"resources,omitempty"`
	// Audiences tokens may be issued for.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=2048
	// +listType=set
	// +required
	Audiences []string `json:"audiences"`
	// Scopes the client may be granted.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	// +required
	Scopes []string `json:"scopes"`
}

// TokenExchangeInboundGrantConfig is who may exchange which tokens.
// +kubebuilder:pruning:PreserveUnknownFields
type TokenExchangeInboundGrantConfig struct {
	// DelegateClients are the confidential clients that may exchange.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	DelegateClients []DelegateClientConfig `json:"delegateClients,omitempty"`
	// IssuerPolicies are the rules per trusted issuer.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	IssuerPolicies []TokenExchangeIssuerPolicyConfig `json:"issuerPolicies,omitempty"`
}

// TokenExchangeIssuerPolicyConfig is the token-exchange rule for the tokens
// of one trusted issuer.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!('*' in self.allowedDelegateClients) || size(self.allowedDelegateClients) == 1",message="allowedDelegateClients is either \"*\" alone or a list of client IDs"
// +kubebuilder:validation:XValidation:rule="!(has(self.allowMayAct) && self.allowMayAct && '*' in self.allowedDelegateClients)",message="allowMayAct cannot be combined with allowedDelegateClients \"*\""
// +kubebuilder:validation:XValidation:rule="!has(self.actorClaim) || !(self.actorClaim in ['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'name', 'email', 'scope', 'scp', 'may_act'])",message="actorClaim may not be a registered or identity claim; name one such as client_id, azp, appid or cid"
type TokenExchangeIssuerPolicyConfig struct {
	// IssuerRef names a trustedIssuers entry.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	IssuerRef string `json:"issuerRef"`
	// ExpectedAudience a presented token must carry.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	ExpectedAudience string `json:"expectedAudience"`
	// ActorClaim names the claim that identifies the acting party.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ActorClaim string `json:"actorClaim,omitempty"`
	// AllowedActors are the actor claim values accepted.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +optional
	AllowedActors []string `json:"allowedActors,omitempty"`
	// ActorMatcher is a CEL expression over the token's claims that
	// accepts the actor.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ActorMatcher string `json:"actorMatcher,omitempty"`
	// AllowedDelegateClients are the client IDs that may exchange; "*"
	// alone allows any.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	AllowedDelegateClients []string `json:"allowedDelegateClients"`
	// AllowMayAct honours the token's may_act claim.
	// +optional
	AllowMayAct bool `json:"allowMayAct,omitempty"`
}

// JWTBearerInboundGrantConfig is which JWT bearer assertions are accepted.
// +kubebuilder:pruning:PreserveUnknownFields
type JWTBearerInboundGrantConfig struct {
	// IssuerPolicies are the rules per trusted issuer.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	IssuerPolicies []JWTBearerIssuerPolicyConfig `json:"issuerPolicies,omitempty"`
}

// JWTBearerIssuerPolicyConfig is the JWT bearer rule for the assertions of
// one trusted issuer.
// +kubebuilder:pruning:PreserveUnknownFields
type JWTBearerIssuerPolicyConfig struct {
	// IssuerRef names a trustedIssuers entry.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	IssuerRef            string `json:"issuerRef"`
	JWTBearerGrantConfig `json:",inline"`
}

// UpstreamProviderConfig is an identity provider users sign in with: an
// OIDC provider or a plain OAuth 2.0 one, with the block of its type and
// no other.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="self.type == 'oidc' ? (has(self.oidcConfig) && !has(self.oauth2Config)) : self.type == 'oauth2' ? (has(self.oauth2Config) && !has(self.oidcConfig)) : false",message="type oidc takes oidcConfig only, type oauth2 takes oauth2Config only"
type UpstreamProviderConfig struct {
	// Name of the upstream; it names its client secret variable and its
	// tokens.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// Type of the provider.
	// +kubebuilder:validation:Enum=oidc;oauth2
	// +required
	Type string `json:"type"`
	// OIDCConfig configures an OIDC provider (type oidc).
	// +optional
	OIDCConfig *OIDCUpstreamConfig `json:"oidcConfig,omitempty"`
	// OAuth2Config configures an OAuth 2.0 provider (type oauth2).
	// +optional
	OAuth2Config *OAuth2UpstreamConfig `json:"oauth2Config,omitempty"`
}

// OIDCUpstreamConfig is an OIDC provider, found by discovery from its
// issuer. The client is either registered (clientId) or registered at run
// time by dynamic client registration (dcrConfig).
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="(has(self.clientId) && size(self.clientId) > 0) ? !has(self.dcrConfig) : has(self.dcrConfig)",message="set clientId or dcrConfig, one of them"
// +kubebuilder:validation:XValidation:rule="!(has(self.dcrConfig) && has(self.clientSecretRef))",message="dcrConfig obtains the client secret at run time: clientSecretRef must not be set with it"
// +kubebuilder:validation:XValidation:rule="!(has(self.dcrConfig) && has(self.dcrConfig.discoveryUrl) && has(self.dcrConfig.registrationEndpoint))",message="dcrConfig takes discoveryUrl or registrationEndpoint, not both"
type OIDCUpstreamConfig struct {
	// IssuerURL of the provider.
	// +kubebuilder:validation:Pattern=`^https://.*$`
	// +required
	IssuerURL string `json:"issuerUrl"`
	// ClientID of the registered client.
	// +optional
	ClientID string `json:"clientId,omitempty"`
	// DCRConfig registers the client at run time instead.
	// +optional
	DCRConfig *DCRUpstreamConfig `json:"dcrConfig,omitempty"`
	// ClientSecretRef is the registered client's secret.
	// +optional
	ClientSecretRef *SecretKeyRef `json:"clientSecretRef,omitempty"`
	// RedirectURI registered for the client; the resource URL plus
	// /oauth/callback when unset.
	// +optional
	RedirectURI string `json:"redirectUri,omitempty"`
	// Scopes requested from the provider.
	// +listType=atomic
	// +optional
	Scopes []string `json:"scopes,omitempty"`
	// UserInfoOverride reads the user's identity from another user info
	// endpoint than discovery names.
	// +optional
	UserInfoOverride *UserInfoConfig `json:"userInfoOverride,omitempty"`
	// AdditionalAuthorizationParams are added to the authorization request.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	AdditionalAuthorizationParams map[string]string `json:"additionalAuthorizationParams,omitempty"`
	// AdditionalTokenParams are added to the token request; keys the
	// server sets itself are refused.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	AdditionalTokenParams map[string]string `json:"additionalTokenParams,omitempty"`
	// OmitScopeOnRefresh leaves the scope parameter out of refresh
	// requests, for providers that refuse it there.
	// +optional
	OmitScopeOnRefresh bool `json:"omitScopeOnRefresh,omitempty"`
	// SubjectClaim is the ID token claim that identifies the user; sub
	// when unset.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^([a-zA-Z_][a-zA-Z0-9_]*)?$`
	// +optional
	SubjectClaim string `json:"subjectClaim,omitempty"`
	// CABundleRef is a CA bundle trusted for the provider's endpoints.
	// +optional
	CABundleRef *CABundleSource `json:"caBundleRef,omitempty"`
	// AllowPrivateIPs allows the provider's endpoints to resolve to private
	// addresses.
	// +optional
	AllowPrivateIPs bool `json:"allowPrivateIPs,omitempty"`
}

// OAuth2UpstreamConfig is an OAuth 2.0 provider without discovery: its
// endpoints are named, and the user's identity comes from a user info
// endpoint or from the token response.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="(has(self.clientId) && size(self.clientId) > 0) ? !has(self.dcrConfig) : has(self.dcrConfig)",message="set clientId or dcrConfig, one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.dcrConfig) || (has(self.dcrConfig.discoveryUrl) != has(self.dcrConfig.registrationEndpoint))",message="dcrConfig takes discoveryUrl or registrationEndpoint, exactly one"
// +kubebuilder:validation:XValidation:rule="!(has(self.dcrConfig) && has(self.clientSecretRef))",message="dcrConfig obtains the client secret at run time: clientSecretRef must not be set with it"
type OAuth2UpstreamConfig struct {
	// AuthorizationEndpoint of the provider.
	// +kubebuilder:validation:Pattern=`^https?://.*$`
	// +required
	AuthorizationEndpoint string `json:"authorizationEndpoint"`
	// TokenEndpoint of the provider.
	// +kubebuilder:validation:Pattern=`^https?://.*$`
	// +required
	TokenEndpoint string `json:"tokenEndpoint"`
	// UserInfo is where the user's identity is read.
	// +optional
	UserInfo *UserInfoConfig `json:"userInfo,omitempty"`
	// ClientID of the registered client.
	// +optional
	ClientID string `json:"clientId,omitempty"`
	// ClientSecretRef is the registered client's secret.
	// +optional
	ClientSecretRef *SecretKeyRef `json:"clientSecretRef,omitempty"`
	// TokenEndpointAuthMethod is how the client authenticates at the token
	// endpoint.
	// +kubebuilder:validation:Enum=none;client_secret_basic;client_secret_post
	// +optional
	TokenEndpointAuthMethod string `json:"tokenEndpointAuthMethod,omitempty"`
	// RedirectURI registered for the client.
	// +optional
	RedirectURI string `json:"redirectUri,omitempty"`
	// Scopes requested from the provider.
	// +listType=atomic
	// +optional
	Scopes []string `json:"scopes,omitempty"`
	// TokenResponseMapping reads a token response that does not follow
	// RFC 6749's field names.
	// +optional
	TokenResponseMapping *TokenResponseMapping `json:"tokenResponseMapping,omitempty"`
	// IdentityFromToken reads the user's identity from the token response
	// instead of a user info endpoint.
	// +optional
	IdentityFromToken *IdentityFromTokenConfig `json:"identityFromToken,omitempty"`
	// AdditionalAuthorizationParams are added to the authorization request.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	AdditionalAuthorizationParams map[string]string `json:"additionalAuthorizationParams,omitempty"`
	// AdditionalTokenParams are added to the token request; keys the
	// server sets itself are refused.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	AdditionalTokenParams map[string]string `json:"additionalTokenParams,omitempty"`
	// OmitScopeOnRefresh leaves the scope parameter out of refresh
	// requests, for providers that refuse it there.
	// +optional
	OmitScopeOnRefresh bool `json:"omitScopeOnRefresh,omitempty"`
	// CABundleRef is a CA bundle trusted for the provider's endpoints.
	// +optional
	CABundleRef *CABundleSource `json:"caBundleRef,omitempty"`
	// InsecureAllowHTTP allows http:// endpoints. For development only.
	// +optional
	InsecureAllowHTTP bool `json:"insecureAllowHTTP,omitempty"`
	// AllowPrivateIPs allows the provider's endpoints to resolve to private
	// addresses.
	// +optional
	AllowPrivateIPs bool `json:"allowPrivateIPs,omitempty"`
	// DCRConfig registers the client at run time (RFC 7591) instead of
	// clientId.
	// +optional
	DCRConfig *DCRUpstreamConfig `json:"dcrConfig,omitempty"`
}

// DCR registration probes: how the server checks that a dynamically
// registered client still works.
const (
	DCRProbeTokenEndpoint         = "tokenEndpoint"
	DCRProbeAuthorizationEndpoint = "authorizationEndpoint"
	DCRProbeNone                  = "none"
)

// DCRUpstreamConfig registers the upstream client at run time (dynamic
// client registration, RFC 7591), at the registration endpoint named or
// found by discovery.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!(has(self.discoveryUrl) && has(self.registrationEndpoint))",message="set discoveryUrl or registrationEndpoint, not both"
type DCRUpstreamConfig struct {
	// DiscoveryURL is a metadata document that names the registration
	// endpoint.
	// +kubebuilder:validation:Pattern=`^https://[^\s?#]+[^/\s?#]$`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	DiscoveryURL string `json:"discoveryUrl,omitempty"`
	// RegistrationEndpoint is the registration endpoint itself.
	// +kubebuilder:validation:Pattern=`^https://[^\s?#]+[^/\s?#]$`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	RegistrationEndpoint string `json:"registrationEndpoint,omitempty"`
	// RotationKey, when changed, makes the server register a new client,
	// for a registration the upstream dropped without the probe noticing.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+$`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	RotationKey string `json:"rotationKey,omitempty"`
	// RegistrationProbe is the upstream endpoint the server calls, at
	// start, to check that the registered client is still accepted (and
	// registers a new one when it is not), or none.
	// +kubebuilder:validation:Enum=tokenEndpoint;authorizationEndpoint;none
	// +optional
	RegistrationProbe string `json:"registrationProbe,omitempty"`
	// RegistrationProbeInterval repeats the check while running, every
	// interval (a Go duration of at least a minute); unset checks at start
	// only.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="registrationProbeInterval is at least 1m"
	// +optional
	RegistrationProbeInterval *string `json:"registrationProbeInterval,omitempty"`
	// InitialAccessTokenRef is the initial access token the registration
	// endpoint requires, if it does.
	// +optional
	InitialAccessTokenRef *SecretKeyRef `json:"initialAccessTokenRef,omitempty"`
	// SoftwareID sent with the registration.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	SoftwareID string `json:"softwareId,omitempty"`
	// SoftwareStatement (a signed JWT) sent with the registration.
	// +kubebuilder:validation:MaxLength=16384
	// +optional
	SoftwareStatement string `json:"softwareStatement,omitempty"`
}

// IdentityFromTokenConfig reads the user's identity from the token
// response, by dotted paths into it.
// +kubebuilder:pruning:PreserveUnknownFields
type IdentityFromTokenConfig struct {
	// SubjectPath of the user's unique ID.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	SubjectPath string `json:"subjectPath"`
	// NamePath of the user's display name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	NamePath string `json:"namePath,omitempty"`
	// EmailPath of the user's email address.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +optional
	EmailPath string `json:"emailPath,omitempty"`
}

// TokenResponseMapping are dotted paths to the fields of a non-standard
// token response.
// +kubebuilder:pruning:PreserveUnknownFields
type TokenResponseMapping struct {
	// AccessTokenPath of the access token.
	// +kubebuilder:validation:MinLength=1
	// +required
	AccessTokenPath string `json:"accessTokenPath"`
	// ScopePath of the granted scopes.
	// +optional
	ScopePath string `json:"scopePath,omitempty"`
	// RefreshTokenPath of the refresh token.
	// +optional
	RefreshTokenPath string `json:"refreshTokenPath,omitempty"`
	// ExpiresInPath of the lifetime in seconds.
	// +optional
	ExpiresInPath string `json:"expiresInPath,omitempty"`
}

// UserInfoConfig is a user info endpoint and how to read its answer.
// +kubebuilder:pruning:PreserveUnknownFields
type UserInfoConfig struct {
	// EndpointURL of the user info endpoint.
	// +kubebuilder:validation:Pattern=`^https?://.*$`
	// +required
	EndpointURL string `json:"endpointUrl"`
	// HTTPMethod of the request; GET when unset.
	// +kubebuilder:validation:Enum=GET;POST
	// +optional
	HTTPMethod string `json:"httpMethod,omitempty"`
	// AdditionalHeaders sent with the request.
	// +optional
	AdditionalHeaders map[string]string `json:"additionalHeaders,omitempty"`
	// FieldMapping names the fields of a non-standard answer.
	// +optional
	FieldMapping *UserInfoFieldMapping `json:"fieldMapping,omitempty"`
}

// UserInfoFieldMapping are the candidate fields of a user info answer, in
// order of preference.
// +kubebuilder:pruning:PreserveUnknownFields
type UserInfoFieldMapping struct {
	// SubjectFields hold the user's unique ID.
	// +listType=atomic
	// +optional
	SubjectFields []string `json:"subjectFields,omitempty"`
	// NameFields hold the user's display name.
	// +listType=atomic
	// +optional
	NameFields []string `json:"nameFields,omitempty"`
	// EmailFields hold the user's email address.
	// +listType=atomic
	// +optional
	EmailFields []string `json:"emailFields,omitempty"`
}

// AuthServerStorageConfig is where the server keeps its state.
// +kubebuilder:pruning:PreserveUnknownFields
type AuthServerStorageConfig struct {
	// Type of storage.
	// +kubebuilder:validation:Enum=memory;redis
	// +kubebuilder:default=memory
	Type string `json:"type,omitempty"`
	// Redis is the Redis server (type redis).
	// +optional
	Redis *RedisStorageConfig `json:"redis,omitempty"`
	// MaxDCRClients caps the live dynamically registered clients; at the
	// cap, registration fails until one expires. Unset means the server's
	// default (10000), 0 means no cap.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxDCRClients *int32 `json:"maxDCRClients,omitempty"`
}

// RedisStorageConfig is a Redis server reached at an address (standalone or
// cluster) or through Sentinel.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="(has(self.addr) && self.addr.size() > 0) != has(self.sentinelConfig)",message="set addr or sentinelConfig, exactly one"
// +kubebuilder:validation:XValidation:rule="!(has(self.clusterMode) && self.clusterMode) || (has(self.addr) && self.addr.size() > 0)",message="clusterMode needs addr"
type RedisStorageConfig struct {
	// Addr is host:port of the server or of a cluster node.
	// +optional
	Addr string `json:"addr,omitempty"`
	// ClusterMode talks the Redis Cluster protocol.
	// +optional
	ClusterMode bool `json:"clusterMode,omitempty"`
	// SentinelConfig finds the server through Sentinel.
	// +optional
	SentinelConfig *RedisSentinelConfig `json:"sentinelConfig,omitempty"`
	// ACLUserConfig is the Redis user and password.
	// +required
	ACLUserConfig *RedisACLUserConfig `json:"aclUserConfig"`
	// DialTimeout of a connection, a Go duration.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:default="5s"
	// +optional
	DialTimeout string `json:"dialTimeout,omitempty"`
	// ReadTimeout of a command, a Go duration.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:default="3s"
	// +optional
	ReadTimeout string `json:"readTimeout,omitempty"`
	// WriteTimeout of a command, a Go duration.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:default="3s"
	// +optional
	WriteTimeout string `json:"writeTimeout,omitempty"`
	// TLS to the server.
	// +optional
	TLS *RedisTLSConfig `json:"tls,omitempty"`
	// SentinelTLS to the Sentinel nodes.
	// +optional
	SentinelTLS *RedisTLSConfig `json:"sentinelTls,omitempty"`
}

// RedisSentinelConfig finds the Redis master through Sentinel.
// +kubebuilder:pruning:PreserveUnknownFields
type RedisSentinelConfig struct {
	// MasterName Sentinel knows the master by.
	// +required
	MasterName string `json:"masterName"`
	// SentinelAddrs are host:port of the Sentinel nodes.
	// +listType=atomic
	// +optional
	SentinelAddrs []string `json:"sentinelAddrs,omitempty"`
	// SentinelService is a Service whose endpoints are the Sentinel nodes.
	// +optional
	SentinelService *SentinelServiceRef `json:"sentinelService,omitempty"`
	// DB is the Redis database number.
	// +kubebuilder:default=0
	// +optional
	DB int32 `json:"db,omitempty"`
}

// SentinelServiceRef is the Service of the Sentinel nodes.
// +kubebuilder:pruning:PreserveUnknownFields
type SentinelServiceRef struct {
	// Name of the Service.
	// +required
	Name string `json:"name"`
	// Namespace of the Service; the config's own when unset.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Port of Sentinel on the Service.
	// +kubebuilder:default=26379
	// +optional
	Port int32 `json:"port,omitempty"`
}

// RedisTLSConfig is TLS to a Redis server: verified against a CA bundle
// from a Secret key (the system's roots when unset), or not verified.
// +kubebuilder:pruning:PreserveUnknownFields
type RedisTLSConfig struct {
	// InsecureSkipVerify skips verifying the server's certificate. For
	// development only.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
	// CACertSecretRef is the PEM CA bundle the server's certificate is
	// verified with.
	// +optional
	CACertSecretRef *SecretKeyRef `json:"caCertSecretRef,omitempty"`
}

// RedisACLUserConfig is the Redis ACL user.
// +kubebuilder:pruning:PreserveUnknownFields
type RedisACLUserConfig struct {
	// UsernameSecretRef is the user name; the default user when unset.
	// +optional
	UsernameSecretRef *SecretKeyRef `json:"usernameSecretRef,omitempty"`
	// PasswordSecretRef is the password.
	// +required
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef"`
}
