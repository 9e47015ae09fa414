package wiring

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// Where ToolHive's operator (at the pinned release) puts the secrets of an
// embedded authorization server in the proxy pod, and so where its runner
// looks for them: each signing key and HMAC secret is one Secret volume
// mounted as one file, each upstream client secret a secretKeyRef
// variable named after the upstream.
const (
	AuthServerKeysVolumePrefix = "authserver-signing-key-"
	AuthServerHMACVolumePrefix = "authserver-hmac-secret-"
	AuthServerKeysMountPath    = "/etc/toolhive/authserver/keys"
	AuthServerHMACMountPath    = "/etc/toolhive/authserver/hmac"
	// The TLS listener's certificate and key are one projected volume,
	// a directory the kubelet keeps up to date when the Secrets change.
	AuthServerTLSVolume    = "authserver-tls-listener"
	AuthServerTLSMountPath = "/etc/toolhive/authserver/tls"
	authServerTLSCertFile  = "tls.crt"
	authServerTLSKeyFile   = "tls.key"
	// AuthServerTLSPort is where ToolHive's runner starts the TLS
	// listener; a proxy may not listen there too.
	AuthServerTLSPort int32 = 8443
	// AuthServerTLSPortName names that port on the container and the
	// Service, where a release exposes it (release.AuthServerTLSPort).
	AuthServerTLSPortName = "https-auth"
	// EnvUpstreamClientSecretPrefix + "_" + the upstream's name in upper
	// case with '-' as '_'; EnvUpstreamDCRTokenPrefix names the initial
	// access token of its dynamic client registration the same way.
	EnvUpstreamClientSecretPrefix = "TOOLHIVE_UPSTREAM_CLIENT_SECRET"
	EnvUpstreamDCRTokenPrefix     = "TOOLHIVE_UPSTREAM_DCR_INITIAL_ACCESS_TOKEN"
	// authServerFileMode: the files are readable by their owner only.
	authServerFileMode int32 = 0o400
	// upstreamTypes are the upstream types ToolHive's server has.
	upstreamTypeOIDC   = thv1.UpstreamProviderTypeOIDC
	upstreamTypeOAuth2 = thv1.UpstreamProviderTypeOAuth2
	// A CA bundle of an upstream or a trusted issuer is its ConfigMap key
	// mounted as ca.crt in a directory of its own, by position.
	AuthServerUpstreamCAVolumePrefix = "authserver-upstream-ca-"
	AuthServerUpstreamCAMountPath    = "/etc/toolhive/authserver/upstream-ca"
	AuthServerIssuerCAVolumePrefix   = "authserver-issuer-ca-"
	AuthServerIssuerCAMountPath      = "/etc/toolhive/authserver/issuer-ca"
	authServerCAFile                 = "ca.crt"
	// AuthServerCAChecksumAnnotation, on the pod template, is the checksum
	// of the CA bundles' content, so that a new bundle rolls the pods.
	AuthServerCAChecksumAnnotation = "toolhive.stacklok.dev/authserver-ca-checksum"
	// callbackPath is appended to the resource URL when an upstream does
	// not name its redirect URI.
	callbackPath = "/oauth/callback"
)

// caBundleFilePath is where the CA bundle at index i under base is.
func caBundleFilePath(base string, i int) string {
	return fmt.Sprintf("%s/%d/%s", base, i, authServerCAFile)
}

func signingKeyFile(i int) string { return fmt.Sprintf("key-%d.pem", i) }
func hmacFile(i int) string       { return fmt.Sprintf("hmac-%d", i) }

// embeddedAuthServerSpec is the part of ToolHive's EmbeddedAuthServerConfig
// hivekeeper applies; unsupportedAuthServerFields names what a config sets
// beyond it, which refuses the workload rather than run an authorization
// server other than the one asked for.
type embeddedAuthServerSpec struct {
	Issuer                        string                  `json:"issuer"`
	AuthorizationEndpointBaseURL  string                  `json:"authorizationEndpointBaseUrl,omitempty"`
	SigningKeySecretRefs          []thv1.SecretKeyRef     `json:"signingKeySecretRefs,omitempty"`
	HMACSecretRefs                []thv1.SecretKeyRef     `json:"hmacSecretRefs,omitempty"`
	TokenLifespans                *tokenLifespans         `json:"tokenLifespans,omitempty"`
	TLSListener                   *thv1.TLSListenerConfig `json:"tlsListener,omitempty"`
	UpstreamProviders             []upstreamProvider      `json:"upstreamProviders,omitempty"`
	Storage                       *authServerStorage      `json:"storage,omitempty"`
	DisableUpstreamTokenInjection bool                    `json:"disableUpstreamTokenInjection,omitempty"`
	InsecureAllowHTTP             bool                    `json:"insecureAllowHTTP,omitempty"`
	BaselineClientScopes          []string                `json:"baselineClientScopes,omitempty"`
	RegistrationRateLimit         *thv1.RateLimitBucket   `json:"registrationRateLimit,omitempty"`

	AllowConfidentialClientRegistration       bool                               `json:"allowConfidentialClientRegistration,omitempty"`
	AllowPrivateKeyJWTRegistration            bool                               `json:"allowPrivateKeyJWTRegistration,omitempty"`
	InsecureAllowConfidentialOverLoopbackHTTP bool                               `json:"insecureAllowConfidentialOverLoopbackHTTP,omitempty"`
	ForceConfidentialRedirectURIs             []string                           `json:"forceConfidentialRedirectUris,omitempty"`
	CIMD                                      *thv1.EmbeddedAuthServerCIMDConfig `json:"cimd,omitempty"`
	DelegateClients                           []thv1.DelegateClientConfig        `json:"delegateClients,omitempty"`
	TrustedIssuers                            []thv1.TrustedIssuerConfig         `json:"trustedIssuers,omitempty"`
	InboundGrants                             *thv1.InboundGrantsConfig          `json:"inboundGrants,omitempty"`
	SPIFFETrustDomains                        []thv1.SPIFFETrustDomainConfig     `json:"spiffeTrustDomains,omitempty"`
	// PrimaryUpstreamProvider is applied by a vMCP's authorization
	// (render/vmcp); it has no effect on an MCPServer or MCPRemoteProxy.
	PrimaryUpstreamProvider string `json:"primaryUpstreamProvider,omitempty"`
}

// authServerStorage is the storage, in memory or in Redis, and its cap on
// registered clients.
type authServerStorage struct {
	Type          string                   `json:"type,omitempty"`
	Redis         *thv1.RedisStorageConfig `json:"redis,omitempty"`
	MaxDCRClients *int32                   `json:"maxDCRClients,omitempty"`
}

type tokenLifespans struct {
	AccessTokenLifespan  string `json:"accessTokenLifespan,omitempty"`
	RefreshTokenLifespan string `json:"refreshTokenLifespan,omitempty"`
	AuthCodeLifespan     string `json:"authCodeLifespan,omitempty"`
}

type upstreamProvider struct {
	Name         string          `json:"name"`
	Type         string          `json:"type"`
	OIDCConfig   *oidcUpstream   `json:"oidcConfig,omitempty"`
	OAuth2Config *oauth2Upstream `json:"oauth2Config,omitempty"`
}

// params are the upstream's extra authorization and token request
// parameters, of whichever block it has.
func (u upstreamProvider) params() (authz, token map[string]string) {
	switch {
	case u.OIDCConfig != nil:
		return u.OIDCConfig.AdditionalAuthorizationParams, u.OIDCConfig.AdditionalTokenParams
	case u.OAuth2Config != nil:
		return u.OAuth2Config.AdditionalAuthorizationParams, u.OAuth2Config.AdditionalTokenParams
	}
	return nil, nil
}

// caBundleRef is the CA bundle reference of whichever block the upstream
// has, nil for none.
func (u upstreamProvider) caBundleRef() *thv1.CABundleSource {
	switch {
	case u.OIDCConfig != nil:
		return u.OIDCConfig.CABundleRef
	case u.OAuth2Config != nil:
		return u.OAuth2Config.CABundleRef
	}
	return nil
}

type oauth2Upstream struct {
	AuthorizationEndpoint         string                        `json:"authorizationEndpoint"`
	TokenEndpoint                 string                        `json:"tokenEndpoint"`
	UserInfo                      *thv1.UserInfoConfig          `json:"userInfo,omitempty"`
	ClientID                      string                        `json:"clientId,omitempty"`
	ClientSecretRef               *thv1.SecretKeyRef            `json:"clientSecretRef,omitempty"`
	TokenEndpointAuthMethod       string                        `json:"tokenEndpointAuthMethod,omitempty"`
	RedirectURI                   string                        `json:"redirectUri,omitempty"`
	Scopes                        []string                      `json:"scopes,omitempty"`
	TokenResponseMapping          *thv1.TokenResponseMapping    `json:"tokenResponseMapping,omitempty"`
	IdentityFromToken             *thv1.IdentityFromTokenConfig `json:"identityFromToken,omitempty"`
	AdditionalAuthorizationParams map[string]string             `json:"additionalAuthorizationParams,omitempty"`
	AdditionalTokenParams         map[string]string             `json:"additionalTokenParams,omitempty"`
	OmitScopeOnRefresh            bool                          `json:"omitScopeOnRefresh,omitempty"`
	InsecureAllowHTTP             bool                          `json:"insecureAllowHTTP,omitempty"`
	AllowPrivateIPs               bool                          `json:"allowPrivateIPs,omitempty"`
	DCRConfig                     *thv1.DCRUpstreamConfig       `json:"dcrConfig,omitempty"`
	CABundleRef                   *thv1.CABundleSource          `json:"caBundleRef,omitempty"`
}

type oidcUpstream struct {
	IssuerURL                     string                  `json:"issuerUrl"`
	ClientID                      string                  `json:"clientId,omitempty"`
	DCRConfig                     *thv1.DCRUpstreamConfig `json:"dcrConfig,omitempty"`
	ClientSecretRef               *thv1.SecretKeyRef      `json:"clientSecretRef,omitempty"`
	RedirectURI                   string                  `json:"redirectUri,omitempty"`
	Scopes                        []string                `json:"scopes,omitempty"`
	UserInfoOverride              *thv1.UserInfoConfig    `json:"userInfoOverride,omitempty"`
	AdditionalAuthorizationParams map[string]string       `json:"additionalAuthorizationParams,omitempty"`
	AdditionalTokenParams         map[string]string       `json:"additionalTokenParams,omitempty"`
	OmitScopeOnRefresh            bool                    `json:"omitScopeOnRefresh,omitempty"`
	SubjectClaim                  string                  `json:"subjectClaim,omitempty"`
	AllowPrivateIPs               bool                    `json:"allowPrivateIPs,omitempty"`
	CABundleRef                   *thv1.CABundleSource    `json:"caBundleRef,omitempty"`
}

// decodeAuthServer reads an embedded authorization server block as the
// part hivekeeper applies, and returns the block's JSON too, which
// unsupportedAuthServerFields reads for what it sets beyond that part.
func decodeAuthServer(c *thv1.EmbeddedAuthServerConfig) (spec embeddedAuthServerSpec, raw []byte, err error) {
	if raw, err = json.Marshal(c); err == nil {
		err = json.Unmarshal(raw, &spec)
	}
	return spec, raw, err
}

// The storage types of ToolHive's authorization server: in memory (the
// default) or Redis.
const (
	storageMemory = "memory"
	storageRedis  = "redis"
)

// jsonKeys are the JSON names of struct type t's fields.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		keys = append(keys, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	return keys
}

// unsupportedAuthServerFields names, by path under base (where the block
// is in the spec), what an embedded authorization server block sets that
// hivekeeper does not apply. A field set to its zero value (false, "",
// [], {}) changes nothing and is not named.
func unsupportedAuthServerFields(base string, raw []byte) []string {
	var top map[string]any
	if json.Unmarshal(raw, &top) != nil {
		return nil // the typed decode reports it
	}
	var out []string
	extra := func(path string, m map[string]any, allowed []string) {
		for _, k := range sortedKeys(m) {
			if !slices.Contains(allowed, k) && !isZeroJSON(m[k]) {
				out = append(out, path+"."+k)
			}
		}
	}
	extra(base, top, jsonKeys(reflect.TypeFor[embeddedAuthServerSpec]()))
	if st, ok := top["storage"].(map[string]any); ok {
		extra(base+".storage", st, jsonKeys(reflect.TypeFor[authServerStorage]()))
	}
	ups, _ := top["upstreamProviders"].([]any)
	for i, u := range ups {
		um, ok := u.(map[string]any)
		if !ok {
			continue
		}
		path := fmt.Sprintf("%s.upstreamProviders[%d]", base, i)
		extra(path, um, jsonKeys(reflect.TypeFor[upstreamProvider]()))
		if t, _ := um["type"].(string); t != upstreamTypeOIDC && t != upstreamTypeOAuth2 {
			out = append(out, fmt.Sprintf("%s.type=%s", path, t))
		}
		if oc, ok := um["oidcConfig"].(map[string]any); ok {
			extra(path+".oidcConfig", oc, jsonKeys(reflect.TypeFor[oidcUpstream]()))
		}
		if oc, ok := um["oauth2Config"].(map[string]any); ok {
			extra(path+".oauth2Config", oc, jsonKeys(reflect.TypeFor[oauth2Upstream]()))
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func isZeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// AuthServerWiring is what an embedded authorization server adds to a
// proxy: its RunConfig block, the secretKeyRef variables of the upstream
// client secrets, and the Secret volumes of the signing keys and HMAC
// secrets.
type AuthServerWiring struct {
	Config  *schema.EmbeddedAuthServerConfig
	Env     []corev1.EnvVar
	Volumes []corev1.Volume
	Mounts  []corev1.VolumeMount
}

// TLSListener says whether the server has a TLS listener, which a
// release may expose as a port of the workload (release.AuthServerTLSPort).
func (w AuthServerWiring) TLSListener() bool { return w.Config != nil && w.Config.TLSListener != nil }

// defaultAuthServerScopes are the scopes ToolHive's authorization server
// supports when none are configured.
var defaultAuthServerScopes = []string{"openid", "profile", "email", "offline_access"}

// ApplyTo sets the wiring's RunConfig block. As ToolHive's RunConfig
// builder does, an OIDC block without scopes then advertises the
// authorization server's (its defaults when it has none): the protected
// resource metadata must name the scopes the server grants. Call it after
// the OIDC wiring's ApplyTo.
func (w AuthServerWiring) ApplyTo(rc *schema.RunConfig) {
	rc.EmbeddedAuthServerConfig = w.Config
	if w.Config == nil || rc.OIDCConfig == nil || len(rc.OIDCConfig.Scopes) > 0 {
		return
	}
	rc.OIDCConfig.Scopes = slices.Clone(w.Config.ScopesSupported)
	if len(rc.OIDCConfig.Scopes) == 0 {
		rc.OIDCConfig.Scopes = slices.Clone(defaultAuthServerScopes)
	}
}

// EmbeddedAuthServer wires the embedded authorization server of a
// workload as ToolHive's operator does for the same manifest. It is the
// config spec.authServerRef names (authServer), or else an
// externalAuthConfigRef of type embeddedAuthServer (extAuth); both at once
// is a conflict. oidc is the workload's resolved OIDC configuration: the
// tokens the server mints are for its resource URL, which must also be
// the audience the proxy checks. proxyPort is the workload's: the
// server's TLS listener takes port 8443.
//
// What ToolHive refuses is refused with its condition and reason
// (AuthServerRefValidated for authServerRef, Ready for the legacy
// externalAuthConfigRef path) and its message; a config that sets what
// hivekeeper does not apply (redis storage, OAuth2 upstreams, delegation
// grants, ...) is refused the same way and names the fields.
func EmbeddedAuthServer(kind string, owner Owner, authServer, extAuth *thv1.MCPExternalAuthConfig, oidc *ResolvedOIDC, proxyPort int32, r release.Release) (AuthServerWiring, error) {
	extEmbedded := extAuth != nil && extAuth.Spec.Type == thv1.ExternalAuthTypeEmbeddedAuthServer
	cfg, field, cond, invalidReason := authServer, "spec.authServerRef", thv1.ConditionAuthServerRefValidated, thv1.ReasonAuthServerRefInvalidConfig
	switch {
	case authServer == nil && !extEmbedded:
		return AuthServerWiring{}, nil
	case authServer == nil:
		cfg, field, cond, invalidReason = extAuth, "spec.externalAuthConfigRef", thv1.ConditionReady, thv1.ReasonInvalidSpec
	}
	refuse := func(cond, reason, format string, a ...any) (AuthServerWiring, error) {
		return AuthServerWiring{}, &InvalidSpecError{Condition: cond, Reason: reason,
			Message: buildFailureMessage(fmt.Sprintf("%s: MCPExternalAuthConfig %s: ", field, cfg.Name), fmt.Sprintf(format, a...))}
	}
	if authServer != nil {
		if t := authServer.Spec.Type; t != thv1.ExternalAuthTypeEmbeddedAuthServer {
			return refuse(cond, thv1.ReasonAuthServerRefInvalidType, "has type %q, but only %s is supported", t, thv1.ExternalAuthTypeEmbeddedAuthServer)
		}
		if extEmbedded {
			return refuse(thv1.ConditionReady, thv1.ReasonInvalidSpec,
				"conflicts with spec.externalAuthConfigRef %s, also of type %s: use authServerRef for the embedded authorization server and externalAuthConfigRef for outgoing authentication only",
				extAuth.Name, thv1.ExternalAuthTypeEmbeddedAuthServer)
		}
	}
	if cfg.Spec.EmbeddedAuthServer == nil {
		return refuse(cond, invalidReason, "type %s without spec.embeddedAuthServer", thv1.ExternalAuthTypeEmbeddedAuthServer)
	}
	if cfg.Spec.EmbeddedAuthServer.TLSListener != nil && proxyPort == AuthServerTLSPort {
		return refuse(cond, invalidReason, "proxyPort %d conflicts with the embedded auth server TLS listener port; choose a different proxyPort", proxyPort)
	}
	spec, raw, err := decodeAuthServer(cfg.Spec.EmbeddedAuthServer)
	if err != nil {
		return refuse(cond, invalidReason, "spec.embeddedAuthServer: %v", err)
	}
	if n := len(spec.UpstreamProviders); n > 1 {
		reason := thv1.ReasonAuthServerRefMultiUpstream
		if cond == thv1.ConditionReady {
			reason = thv1.ReasonInvalidSpec
		}
		return refuse(cond, reason, "an %s supports only one upstream provider (found %d); use a VirtualMCPServer for several", kind, n)
	}
	// ToolHive's operator checks these first when it builds the
	// server's configuration, whose failures its message names.
	const building = "failed to build embedded auth server config: "
	if err := validateTLSListener(cfg.Spec.EmbeddedAuthServer); err != nil {
		return refuse(cond, invalidReason, building+"%v", err)
	}
	if err := inboundGrantChecks(cfg.Spec.EmbeddedAuthServer); err != nil {
		return refuse(cond, invalidReason, building+"%v", err)
	}
	if err := spiffeChecks(cfg.Spec.EmbeddedAuthServer, r); err != nil {
		return refuse(cond, invalidReason, building+"%v", err)
	}
	if u := unsupportedAuthServerFields("spec.embeddedAuthServer", raw); len(u) > 0 {
		return refuse(cond, invalidReason, "not supported by hivekeeper: %s", strings.Join(u, ", "))
	}
	switch {
	case oidc == nil:
		return refuse(cond, invalidReason, "an embedded authorization server needs spec.oidcConfigRef")
	case oidc.ResourceURL == "":
		return refuse(cond, invalidReason, "an embedded authorization server needs spec.oidcConfigRef.resourceUrl")
	case oidc.Audience != oidc.ResourceURL:
		return refuse(cond, invalidReason, "spec.oidcConfigRef.audience %q must equal its resourceUrl %q: the embedded authorization server issues tokens for the resource URL",
			oidc.Audience, oidc.ResourceURL)
	}
	for i, r := range slices.Concat(spec.SigningKeySecretRefs, spec.HMACSecretRefs) {
		if r.Name == "" || r.Key == "" {
			return refuse(cond, invalidReason, "secret reference %d: name and key are required", i)
		}
	}
	w, err := wireAuthServer(owner, &spec, oidc)
	if err != nil {
		return refuse(cond, invalidReason, building+"%v", err)
	}
	if err := runtimeGrantChecks(cfg.Spec.EmbeddedAuthServer, w.Config.ScopesSupported, w.Config.AllowedAudiences); err != nil {
		return refuse(cond, invalidReason, building+"%v", err)
	}
	return w, nil
}

// validateTLSListener is ToolHive's check of tlsListener (its messages):
// both Secret references complete, and a listener wherever SPIFFE X.509
// client authentication is configured, which needs it.
func validateTLSListener(c *thv1.EmbeddedAuthServerConfig) error {
	if l := c.TLSListener; l != nil {
		if l.CertificateSecretRef == nil || l.PrivateKeySecretRef == nil {
			return fmt.Errorf("tlsListener.certificateSecretRef and tlsListener.privateKeySecretRef are required")
		}
		for _, f := range []struct {
			field string
			ref   *thv1.SecretKeyRef
		}{{"certificateSecretRef", l.CertificateSecretRef}, {"privateKeySecretRef", l.PrivateKeySecretRef}} {
			if f.ref.Name == "" || f.ref.Key == "" {
				return fmt.Errorf("tlsListener.%[1]s.name and tlsListener.%[1]s.key are required", f.field)
			}
		}
		return nil
	}
	if c.InboundGrants == nil {
		return nil
	}
	for _, a := range c.InboundGrants.SPIFFEClientAuth {
		if slices.Contains(a.Methods, thv1.SPIFFEMethodX509) {
			return fmt.Errorf("tlsListener is required when SPIFFE X.509 client authentication is configured")
		}
	}
	return nil
}

// spiffeChecks are what ToolHive's runtime refuses of a SPIFFE
// configuration at release r, with its messages. Before
// release.SPIFFEFileBundles every trust domain is refused as not yet
// enforced; from it on, a SPIFFE X.509 client needs an https issuer, a
// SPIFFE client's id may not be a delegate client's too, and a bundle
// source other than a file is refused. ToolHive's operator wraps them as
// it wraps its runtime checks of delegate clients and trusted issuers.
func spiffeChecks(c *thv1.EmbeddedAuthServerConfig, r release.Release) error {
	const wrap = "invalid embedded auth server delegate clients or trusted issuers: "
	if !r.SPIFFEFileBundles {
		if len(c.SPIFFETrustDomains) == 0 {
			return nil
		}
		return fmt.Errorf(wrap + "spiffe_trust_domains: SPIFFE client authentication is not yet enforced by this build " +
			"(no X.509-SVID or JWT-SVID is verified against the configured trust bundle); remove this configuration " +
			"until a verification consumer lands")
	}
	if hasSPIFFEX509(c) && c.TLSListener != nil {
		if err := spiffeX509Issuer(c.Issuer); err != nil {
			return fmt.Errorf(wrap+"%w", err)
		}
	}
	if err := spiffeClientsNotDelegates(c); err != nil {
		return fmt.Errorf(wrap+"%w", err)
	}
	for i, d := range c.SPIFFETrustDomains {
		if err := spiffeBundleSourceType(fmt.Sprintf("spiffe_trust_domains[%d] %q bundle_source", i, d.Name), d.BundleSource.Type); err != nil {
			return fmt.Errorf(wrap+"%w", err)
		}
	}
	return nil
}

// spiffeConfigChecks are the SPIFFE checks ToolHive's operator makes of
// an MCPExternalAuthConfig itself at release r (under
// spec.embeddedAuthServer, before any workload uses it): from
// release.SPIFFEFileBundles on, an https issuer for SPIFFE X.509 and no
// SPIFFE client id that is a delegate client's (its checks of the inbound
// grants), then no bundle source but a file.
func spiffeConfigChecks(c *thv1.EmbeddedAuthServerConfig, r release.Release) []string {
	if !r.SPIFFEFileBundles {
		return nil
	}
	var errs []string
	// ToolHive's operator reports these as its checks return them, with
	// no field prefix.
	add := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if hasSPIFFEX509(c) {
		add(spiffeX509Issuer(c.Issuer))
	}
	add(spiffeClientsNotDelegates(c))
	for i, d := range c.SPIFFETrustDomains {
		if err := spiffeBundleSourceType(fmt.Sprintf("spiffeTrustDomains[%d].bundleSource", i), d.BundleSource.Type); err != nil {
			add(err)
			break
		}
	}
	return errs
}

// hasSPIFFEX509 says whether a SPIFFE client may authenticate with an
// X.509-SVID, which only the TLS listener can ask for.
func hasSPIFFEX509(c *thv1.EmbeddedAuthServerConfig) bool {
	return c.InboundGrants != nil && slices.ContainsFunc(c.InboundGrants.SPIFFEClientAuth, func(a thv1.SPIFFEClientConfig) bool {
		return slices.Contains(a.Methods, thv1.SPIFFEMethodX509)
	})
}

// spiffeX509Issuer: an X.509-SVID client authenticates to the TLS
// listener, so the issuer it is told to use must be https.
func spiffeX509Issuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil {
		return fmt.Errorf("parse auth server issuer: %w", err)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("SPIFFE X.509 authentication requires an https issuer")
	}
	return nil
}

// spiffeClientsNotDelegates: a SPIFFE client and a delegate client would
// both register a client of the same id.
func spiffeClientsNotDelegates(c *thv1.EmbeddedAuthServerConfig) error {
	if c.InboundGrants == nil {
		return nil
	}
	delegates := slices.Clone(c.DelegateClients)
	if te := c.InboundGrants.TokenExchange; te != nil {
		delegates = append(delegates, te.DelegateClients...)
	}
	for _, a := range c.InboundGrants.SPIFFEClientAuth {
		if slices.ContainsFunc(delegates, func(d thv1.DelegateClientConfig) bool { return d.ClientID == a.ClientID }) {
			return fmt.Errorf("client_id %q is configured both as a SPIFFE client association and as a delegate client", a.ClientID)
		}
	}
	return nil
}

// spiffeBundleSourceType: the file source is the only one ToolHive's
// runtime loads.
func spiffeBundleSourceType(subject, t string) error {
	if t == thv1.SPIFFEBundleSourceFile {
		return nil
	}
	return fmt.Errorf("%s: type %q is not supported by this build; only %q is supported", subject, t, thv1.SPIFFEBundleSourceFile)
}

// wireAuthServer builds the RunConfig block and the pod's secrets of a
// supported spec, and refuses what ToolHive's operator refuses while it
// builds them, with its messages.
func wireAuthServer(owner Owner, spec *embeddedAuthServerSpec, oidc *ResolvedOIDC) (AuthServerWiring, error) {
	w := AuthServerWiring{Config: &schema.EmbeddedAuthServerConfig{
		SchemaVersion:                 schema.AuthServerSchemaVersion,
		Issuer:                        spec.Issuer,
		AuthorizationEndpointBaseURL:  spec.AuthorizationEndpointBaseURL,
		Upstreams:                     []schema.UpstreamConfig{},
		ScopesSupported:               oidc.Scopes,
		BaselineClientScopes:          spec.BaselineClientScopes,
		AllowedAudiences:              []string{oidc.ResourceURL},
		DisableUpstreamTokenInjection: spec.DisableUpstreamTokenInjection,
		InsecureAllowHTTP:             spec.InsecureAllowHTTP,
	}}
	c := w.Config
	if err := delegationConfig(spec, c); err != nil {
		return AuthServerWiring{}, err
	}
	if l := spec.TLSListener; l != nil {
		c.TLSListener = &schema.TLSListenerConfig{
			CertFile: path.Join(AuthServerTLSMountPath, authServerTLSCertFile), KeyFile: path.Join(AuthServerTLSMountPath, authServerTLSKeyFile),
		}
		w.Volumes, w.Mounts = tlsListenerVolume(l)
	}
	secretFile := func(volume, secret, key, file, dir string) {
		v, m := secretFileVolume(volume, secret, key, dir, file)
		w.Volumes, w.Mounts = append(w.Volumes, v...), append(w.Mounts, m...)
	}
	for i, r := range spec.SigningKeySecretRefs {
		secretFile(fmt.Sprintf("%s%d", AuthServerKeysVolumePrefix, i), r.Name, r.Key, signingKeyFile(i), AuthServerKeysMountPath)
		if c.SigningKeyConfig == nil {
			c.SigningKeyConfig = &schema.SigningKeyConfig{KeyDir: AuthServerKeysMountPath, SigningKeyFile: signingKeyFile(i)}
		} else {
			c.SigningKeyConfig.FallbackKeyFiles = append(c.SigningKeyConfig.FallbackKeyFiles, signingKeyFile(i))
		}
	}
	for i, r := range spec.HMACSecretRefs {
		secretFile(fmt.Sprintf("%s%d", AuthServerHMACVolumePrefix, i), r.Name, r.Key, hmacFile(i), AuthServerHMACMountPath)
		c.HMACSecretFiles = append(c.HMACSecretFiles, AuthServerHMACMountPath+"/"+hmacFile(i))
	}
	c.SPIFFETrustDomains = spiffeTrustDomains(spec.SPIFFETrustDomains)
	for i, d := range spec.SPIFFETrustDomains {
		if f := d.BundleSource.File; f != nil {
			v, m := spiffeBundleVolume(i, f)
			w.Volumes, w.Mounts = append(w.Volumes, v), append(w.Mounts, m)
		}
	}
	for _, f := range redisCAFiles(spec.Storage) {
		secretFile(f.volume, f.ref.Name, f.ref.Key, f.file, AuthServerRedisCAMountPath)
	}
	caVols, caMounts, err := caBundleVolumes(spec)
	if err != nil {
		return AuthServerWiring{}, err
	}
	w.Volumes, w.Mounts = append(w.Volumes, caVols...), append(w.Mounts, caMounts...)
	if l := spec.TokenLifespans; l != nil {
		c.TokenLifespans = &schema.TokenLifespanConfig{
			AccessTokenLifespan: l.AccessTokenLifespan, RefreshTokenLifespan: l.RefreshTokenLifespan, AuthCodeLifespan: l.AuthCodeLifespan,
		}
	}
	if m := spec.CIMD; m != nil && m.Enabled {
		c.CIMD = &schema.CIMDConfig{Enabled: true, CacheMaxSize: m.CacheMaxSize, CacheFallbackTTL: m.CacheFallbackTTL}
	}
	for i, u := range spec.UpstreamProviders {
		up := schema.UpstreamConfig{Name: u.Name, Type: u.Type}
		var env []corev1.EnvVar
		var err error
		switch {
		case u.Type == upstreamTypeOIDC && u.OIDCConfig != nil:
			up.OIDCConfig, env, err = oidcUpstreamConfig(u.Name, u.OIDCConfig, oidc.ResourceURL)
		case u.Type == upstreamTypeOAuth2 && u.OAuth2Config != nil:
			up.OAuth2Config, env, err = oauth2UpstreamConfig(u.Name, u.OAuth2Config, oidc.ResourceURL)
		}
		if err != nil {
			return AuthServerWiring{}, fmt.Errorf("upstream %q: %w", u.Name, err)
		}
		if u.caBundleRef() != nil {
			ca := caBundleFilePath(AuthServerUpstreamCAMountPath, i)
			if up.OIDCConfig != nil {
				up.OIDCConfig.CAFilePath = ca
			}
			if up.OAuth2Config != nil {
				up.OAuth2Config.CAFilePath = ca
			}
		}
		w.Env = append(w.Env, env...)
		c.Upstreams = append(c.Upstreams, up)
	}
	w.Env = append(w.Env, delegateClientEnv(spec)...)
	w.Env = append(w.Env, redisEnv(spec.Storage)...)
	if c.Storage, err = storageConfig(owner, spec.Storage); err != nil {
		return AuthServerWiring{}, fmt.Errorf("failed to build storage config: %w", err)
	}
	if c.RegistrationRateLimit, err = registrationRateLimit(spec.RegistrationRateLimit); err != nil {
		return AuthServerWiring{}, err
	}
	c.AllowConfidentialClientRegistration = spec.AllowConfidentialClientRegistration
	c.AllowPrivateKeyJWTRegistration = spec.AllowPrivateKeyJWTRegistration
	c.ForceConfidentialRedirectURIs = spec.ForceConfidentialRedirectURIs
	c.InsecureAllowConfidentialOverLoopbackHTTP = spec.InsecureAllowConfidentialOverLoopbackHTTP
	return w, nil
}

// upstreamEnvName is the variable of an upstream's secret: prefix, then
// the upstream's name in upper case with '-' as '_'.
func upstreamEnvName(prefix, upstream string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(upstream, "-", "_"))
}

// oidcUpstreamConfig is an OIDC upstream's RunConfig block and the
// variables of its secrets (the client secret, then a registration's
// initial access token), after ToolHive's check of its client: a client
// ID or a dynamic client registration, not both.
func oidcUpstreamConfig(name string, o *oidcUpstream, resourceURL string) (*schema.OIDCUpstreamConfig, []corev1.EnvVar, error) {
	if err := validateOIDCDCR(o.ClientID, o.ClientSecretRef, o.DCRConfig); err != nil {
		return nil, nil, err
	}
	c, err := upstreamClientOf(name, "oidcConfig", o.ClientSecretRef, o.DCRConfig)
	if err != nil {
		return nil, nil, err
	}
	return &schema.OIDCUpstreamConfig{
		IssuerURL: o.IssuerURL, ClientID: o.ClientID, ClientSecretEnvVar: c.secretEnv, RedirectURI: redirectURI(o.RedirectURI, resourceURL),
		Scopes: o.Scopes, UserInfoOverride: userInfo(o.UserInfoOverride),
		AdditionalAuthorizationParams: o.AdditionalAuthorizationParams, AdditionalTokenParams: o.AdditionalTokenParams,
		OmitScopeOnRefresh: o.OmitScopeOnRefresh, SubjectClaim: o.SubjectClaim, DCRConfig: c.dcr, AllowPrivateIPs: o.AllowPrivateIPs,
	}, c.env, nil
}

// oauth2UpstreamConfig is an OAuth2 upstream's RunConfig block and the
// variables of its secrets, after ToolHive's checks of its client and of
// the identity read from its token response.
func oauth2UpstreamConfig(name string, o *oauth2Upstream, resourceURL string) (*schema.OAuth2UpstreamConfig, []corev1.EnvVar, error) {
	if err := validateOAuth2Client(o.ClientID, o.ClientSecretRef, o.DCRConfig, o.IdentityFromToken); err != nil {
		return nil, nil, err
	}
	c, err := upstreamClientOf(name, "oauth2Config", o.ClientSecretRef, o.DCRConfig)
	if err != nil {
		return nil, nil, err
	}
	oc := &schema.OAuth2UpstreamConfig{
		AuthorizationEndpoint: o.AuthorizationEndpoint, TokenEndpoint: o.TokenEndpoint, ClientID: o.ClientID, ClientSecretEnvVar: c.secretEnv,
		TokenEndpointAuthMethod: o.TokenEndpointAuthMethod, RedirectURI: redirectURI(o.RedirectURI, resourceURL), Scopes: o.Scopes,
		UserInfo: userInfo(o.UserInfo), AdditionalAuthorizationParams: o.AdditionalAuthorizationParams,
		AdditionalTokenParams: o.AdditionalTokenParams, OmitScopeOnRefresh: o.OmitScopeOnRefresh, DCRConfig: c.dcr,
		AllowPrivateIPs: o.AllowPrivateIPs, InsecureAllowHTTP: o.InsecureAllowHTTP,
	}
	if m := o.TokenResponseMapping; m != nil {
		oc.TokenResponseMapping = &schema.TokenResponseMapping{AccessTokenPath: m.AccessTokenPath, ScopePath: m.ScopePath,
			RefreshTokenPath: m.RefreshTokenPath, ExpiresInPath: m.ExpiresInPath}
	}
	if i := o.IdentityFromToken; i != nil {
		oc.IdentityFromToken = &schema.IdentityFromToken{SubjectPath: i.SubjectPath, NamePath: i.NamePath, EmailPath: i.EmailPath}
	}
	return oc, c.env, nil
}

// redirectURI is an upstream's redirect URI: its own, or the callback
// path under the resource URL.
func redirectURI(own, resourceURL string) string {
	if own != "" {
		return own
	}
	return strings.TrimRight(resourceURL, "/") + callbackPath
}

// userInfo is a userinfo endpoint's block, nil for none.
func userInfo(u *thv1.UserInfoConfig) *schema.UserInfoConfig {
	if u == nil {
		return nil
	}
	out := &schema.UserInfoConfig{EndpointURL: u.EndpointURL, HTTPMethod: u.HTTPMethod, AdditionalHeaders: u.AdditionalHeaders}
	if m := u.FieldMapping; m != nil {
		out.FieldMapping = &schema.UserInfoFieldMapping{SubjectFields: m.SubjectFields, NameFields: m.NameFields, EmailFields: m.EmailFields}
	}
	return out
}

// upstreamClient is how an upstream's client authenticates: the variable
// of its client secret, its registration at run time, and the variables
// both need, in that order.
type upstreamClient struct {
	secretEnv string
	dcr       *schema.DCRConfig
	env       []corev1.EnvVar
}

// upstreamClientOf wires an upstream's client secret and registration;
// field is where the upstream's block is ("oidcConfig", "oauth2Config").
func upstreamClientOf(name, field string, secret *thv1.SecretKeyRef, d *thv1.DCRUpstreamConfig) (upstreamClient, error) {
	var c upstreamClient
	if secret != nil {
		c.secretEnv = upstreamEnvName(EnvUpstreamClientSecretPrefix, name)
		c.env = append(c.env, SecretEnv(c.secretEnv, secret.Name, secret.Key))
	}
	if d == nil {
		return c, nil
	}
	c.dcr = &schema.DCRConfig{DiscoveryURL: d.DiscoveryURL, RegistrationEndpoint: d.RegistrationEndpoint, RotationKey: d.RotationKey,
		RegistrationProbe: d.RegistrationProbe, SoftwareID: d.SoftwareID, SoftwareStatement: d.SoftwareStatement}
	if p := d.RegistrationProbeInterval; p != nil {
		interval, err := time.ParseDuration(*p)
		if err != nil {
			return c, fmt.Errorf("%s.dcrConfig.registrationProbeInterval %q is not a duration", field, *p)
		}
		c.dcr.RegistrationProbeInterval = interval.String()
	}
	if r := d.InitialAccessTokenRef; r != nil {
		c.dcr.InitialAccessTokenEnvVar = upstreamEnvName(EnvUpstreamDCRTokenPrefix, name)
		c.env = append(c.env, SecretEnv(c.dcr.InitialAccessTokenEnvVar, r.Name, r.Key))
	}
	return c, nil
}

// Upper bounds of a dynamic client registration's strings, the schema's,
// checked again for objects stored before it had them.
const (
	maxDCRURLLength          = 2048
	maxSoftwareStatementSize = 16384
)

// validateOIDCDCR is ToolHive's check of an OIDC upstream's client (its
// messages): exactly one of clientId and dcrConfig, no client secret
// with a registration (the registration returns it), at most one
// registration endpoint source (the issuer's discovery otherwise), and
// the schema's length limits.
func validateOIDCDCR(clientID string, secret *thv1.SecretKeyRef, d *thv1.DCRUpstreamConfig) error {
	return validateClient("oidcConfig", clientID, secret, d, false)
}

// validateOAuth2Client is the same check of an OAuth2 upstream's client,
// which must name exactly one registration endpoint source (it has no
// issuer to discover from), and of the identity read from its token
// response.
func validateOAuth2Client(clientID string, secret *thv1.SecretKeyRef, d *thv1.DCRUpstreamConfig, id *thv1.IdentityFromTokenConfig) error {
	if err := validateClient("oauth2Config", clientID, secret, d, true); err != nil {
		return err
	}
	if id != nil && id.SubjectPath == "" {
		return fmt.Errorf("oauth2Config.identityFromToken.subjectPath must not be empty when identityFromToken is set")
	}
	return nil
}

// validateClient checks the client of the upstream block field;
// oneEndpoint requires exactly one registration endpoint source rather
// than at most one.
func validateClient(field, clientID string, secret *thv1.SecretKeyRef, d *thv1.DCRUpstreamConfig, oneEndpoint bool) error {
	if (clientID != "") == (d != nil) {
		return fmt.Errorf("%s: exactly one of clientId or dcrConfig must be set", field)
	}
	if d == nil {
		return nil
	}
	if secret != nil {
		return fmt.Errorf("%s: clientSecretRef must not be set when dcrConfig is set; "+
			"the client_secret is obtained at runtime via Dynamic Client Registration", field)
	}
	discovery, endpoint := d.DiscoveryURL != "", d.RegistrationEndpoint != ""
	switch {
	case oneEndpoint && discovery == endpoint:
		return fmt.Errorf("%s.dcrConfig: exactly one of discoveryUrl or registrationEndpoint must be set", field)
	case discovery && endpoint:
		return fmt.Errorf("%s.dcrConfig: at most one of discoveryUrl or registrationEndpoint may be set", field)
	}
	if l := len(d.DiscoveryURL); l > maxDCRURLLength {
		return fmt.Errorf("%s.dcrConfig.discoveryUrl: length %d exceeds maximum %d", field, l, maxDCRURLLength)
	}
	if l := len(d.RegistrationEndpoint); l > maxDCRURLLength {
		return fmt.Errorf("%s.dcrConfig.registrationEndpoint: length %d exceeds maximum %d", field, l, maxDCRURLLength)
	}
	if l := len(d.SoftwareStatement); l > maxSoftwareStatementSize {
		return fmt.Errorf("%s.dcrConfig.softwareStatement: length %d exceeds maximum %d", field, l, maxSoftwareStatementSize)
	}
	return nil
}

// registrationRateLimit is registrationRateLimit as ToolHive's operator
// converts it: maxTokens registrations at once, then maxTokens per
// refillPeriod; nil leaves the server's default.
func registrationRateLimit(b *thv1.RateLimitBucket) (*schema.RegistrationRateLimit, error) {
	if b == nil {
		return nil, nil
	}
	if b.MaxTokens < 1 {
		return nil, fmt.Errorf("registrationRateLimit.maxTokens must be >= 1, got %d", b.MaxTokens)
	}
	refill, err := time.ParseDuration(b.RefillPeriod)
	if err != nil {
		return nil, fmt.Errorf("registrationRateLimit.refillPeriod %q is not a duration", b.RefillPeriod)
	}
	if refill <= 0 {
		return nil, fmt.Errorf("registrationRateLimit.refillPeriod must be positive, got %s", refill)
	}
	return &schema.RegistrationRateLimit{RequestsPerSecond: float64(b.MaxTokens) / refill.Seconds(), Burst: int(b.MaxTokens)}, nil
}

// tlsListenerVolume is the TLS listener's projected volume: the
// certificate and key as tls.crt and tls.key, from one Secret or two
// (the certificate's first), readable by their owner only, and its
// mount as a directory.
func tlsListenerVolume(l *thv1.TLSListenerConfig) ([]corev1.Volume, []corev1.VolumeMount) {
	cert, key := l.CertificateSecretRef, l.PrivateKeySecretRef
	sources := []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: cert.Name},
		Items:                []corev1.KeyToPath{{Key: cert.Key, Path: authServerTLSCertFile}},
	}}}
	keyItem := corev1.KeyToPath{Key: key.Key, Path: authServerTLSKeyFile}
	if cert.Name == key.Name {
		sources[0].Secret.Items = append(sources[0].Secret.Items, keyItem)
	} else {
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: key.Name}, Items: []corev1.KeyToPath{keyItem},
		}})
	}
	return []corev1.Volume{{Name: AuthServerTLSVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: sources, DefaultMode: ptr.To(authServerFileMode),
		}}}}, []corev1.VolumeMount{{
			Name: AuthServerTLSVolume, MountPath: AuthServerTLSMountPath, ReadOnly: true,
		}}
}

// defaultUpstreamName is the name ToolHive's authorization server gives
// an upstream configured without one.
const defaultUpstreamName = "default"

// FirstUpstreamName is the name ToolHive's operator gives the first
// upstream of an authorization server ("default" when it has no name):
// the subject provider of a vMCP's token exchange strategies and the
// primary upstream of its authorization. "" without upstreams.
func (w AuthServerWiring) FirstUpstreamName() string {
	if w.Config == nil || len(w.Config.Upstreams) == 0 {
		return ""
	}
	return cmp.Or(w.Config.Upstreams[0].Name, defaultUpstreamName)
}

// Upstreams is the number of the authorization server's upstreams, 0
// without one.
func (w AuthServerWiring) Upstreams() int {
	if w.Config == nil {
		return 0
	}
	return len(w.Config.Upstreams)
}

// InlineAuthServer wires a VirtualMCPServer's spec.authServerConfig, the
// same block as an MCPExternalAuthConfig's embeddedAuthServer and the same
// supported subset (several upstreams, as a vMCP takes them), as
// ToolHive's operator does: its configuration (authserver-config.yaml
// beside config.yaml), the Secret volumes and secretKeyRef variables of the
// vmcp container. filter is spec.authServerUpstreamFilter, which
// ToolHive v0.63.0's operator writes into that configuration. oidc is the
// resolved incoming OIDC configuration, nil for anonymous incoming auth.
//
// Refusals are ToolHive's: AuthServerConfigValidated=False with reason
// AuthServerConfigInvalid and its messages (the checks of its controller,
// those of the upstream filter, then those of vmcp's auth server
// integration), and a config that sets what hivekeeper does not apply
// names the fields.
func InlineAuthServer(owner Owner, cfg *thv1.EmbeddedAuthServerConfig, filter *thv1.AuthServerUpstreamFilterConfig, oidc *ResolvedOIDC, r release.Release) (AuthServerWiring, error) {
	refuse := func(format string, a ...any) (AuthServerWiring, error) {
		return AuthServerWiring{}, &InvalidSpecError{Condition: thv1.ConditionAuthServerConfigValidated,
			Reason: thv1.ReasonAuthServerConfigInvalid, Message: fmt.Sprintf(format, a...)}
	}
	if cfg == nil {
		if filter != nil {
			// The schema refuses it; a spec stored before that rule is
			// refused as ToolHive v0.63.0's operator refuses it.
			return refuse("spec.authServerUpstreamFilter requires spec.authServerConfig to be set")
		}
		return AuthServerWiring{}, nil
	}
	const base = "spec.authServerConfig"
	spec, raw, err := decodeAuthServer(cfg)
	if err != nil {
		return refuse("%s: %v", base, err)
	}
	if spec.Issuer == "" {
		return refuse("%s.issuer is required", base)
	}
	if err := validateTLSListener(cfg); err != nil {
		return refuse("%s: %v", base, err)
	}
	if err := inboundGrantChecks(cfg); err != nil {
		return refuse("%s: %v", base, err)
	}
	if u, err := url.Parse(spec.Issuer); err == nil && u.Scheme == "http" && u.Host != "" && !isLoopbackHost(u.Hostname()) && !spec.InsecureAllowHTTP {
		return refuse("%s.issuer %q uses http:// with a non-localhost host; set %s.insecureAllowHTTP: true to allow this for trusted "+
			"in-cluster deployments, or use https:// for production deployments", base, spec.Issuer, base)
	}
	if r.SPIFFEFileBundles {
		// ToolHive's operator checks a vMCP's bundle sources first.
		for i, d := range cfg.SPIFFETrustDomains {
			if err := spiffeBundleSourceType(fmt.Sprintf("spiffeTrustDomains[%d].bundleSource", i), d.BundleSource.Type); err != nil {
				return refuse("%s: %v", base, err)
			}
		}
	}
	if err := spiffeChecks(cfg, r); err != nil {
		return refuse("%s: %v", base, err)
	}
	if u := unsupportedAuthServerFields(base, raw); len(u) > 0 {
		return refuse("%s: not supported by hivekeeper: %s", base, strings.Join(u, ", "))
	}
	jwtBearer := slices.ContainsFunc(spec.TrustedIssuers, func(t thv1.TrustedIssuerConfig) bool { return t.JWTBearerGrant != nil })
	if len(spec.UpstreamProviders) == 0 && len(spec.DelegateClients) == 0 && spec.InboundGrants == nil && !jwtBearer {
		return refuse("%s requires at least one upstream provider unless delegateClients, inboundGrants, or a trustedIssuer "+
			"with jwtBearerGrant is configured", base)
	}
	for i, u := range spec.UpstreamProviders {
		authz, token := u.params()
		if err := validateUpstreamParams(fmt.Sprintf("%s.upstreamProviders[%d]", base, i), authz, token); err != nil {
			return refuse("%v", err)
		}
	}
	for i, r := range slices.Concat(spec.SigningKeySecretRefs, spec.HMACSecretRefs) {
		if r.Name == "" || r.Key == "" {
			return refuse("%s: secret reference %d: name and key are required", base, i)
		}
	}
	if filter != nil {
		configured := make([]string, len(spec.UpstreamProviders))
		for i, u := range spec.UpstreamProviders {
			configured[i] = u.Name
		}
		if err := checkUpstreamFilter(filter, configured); err != nil {
			return refuse("spec.authServerUpstreamFilter: %v", err)
		}
	}
	// What vmcp checks of the server against incoming auth at start
	// (ToolHive's operator checks it before writing the config).
	const integration = "invalid auth server integration: "
	switch {
	case oidc == nil:
		return refuse(integration + "an embedded auth server requires incomingAuth type oidc with an oidcConfigRef")
	case oidc.ResourceURL == "":
		return refuse(integration + "auth server requires at least one allowed audience (set spec.incomingAuth.oidcConfigRef.resourceUrl)")
	case spec.Issuer != oidc.Issuer:
		return refuse(integration+"auth server issuer mismatch: auth server issuer %q != incomingAuth.oidc.issuer %q", spec.Issuer, oidc.Issuer)
	case oidc.Audience != "" && oidc.Audience != oidc.ResourceURL:
		return refuse(integration+"incomingAuth.oidc.audience %q not in auth server's allowed audiences [%s]", oidc.Audience, oidc.ResourceURL)
	}
	w, err := wireAuthServer(owner, &spec, oidc)
	if err != nil {
		return refuse("%s: %v", base, err)
	}
	if err := runtimeGrantChecks(cfg, w.Config.ScopesSupported, w.Config.AllowedAudiences); err != nil {
		return refuse("%s: %v", base, err)
	}
	w.Config.UpstreamFilter = upstreamFilter(filter)
	return w, nil
}

// reservedAuthorizationParams are the authorization request parameters
// ToolHive's authorization server sets itself, which an upstream's
// additionalAuthorizationParams may not override.
var reservedAuthorizationParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state",
	"code_challenge", "code_challenge_method", "nonce"}

// reservedTokenParams are the token request parameters it sets itself
// (both grants it sends, and client authentication), which
// additionalTokenParams may not override.
var reservedTokenParams = []string{"grant_type", "code", "redirect_uri", "client_id", "client_secret", "code_verifier",
	"refresh_token", "scope", "client_assertion", "client_assertion_type"}

// validateUpstreamParams is ToolHive's check of an upstream's extra
// request parameters (its messages, prefixed with where the upstream is):
// no reserved authorization parameter, then no reserved token parameter
// and a "resource" token parameter that is an absolute URI without a
// fragment (RFC 8707). Keys are checked in sorted order, so the one
// reported does not change from one sync to the next.
func validateUpstreamParams(prefix string, authz, token map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(authz)) {
		if slices.Contains(reservedAuthorizationParams, k) {
			return fmt.Errorf("%s.additionalAuthorizationParams: reserved parameter %q is managed by the framework and cannot be overridden", prefix, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(token)) {
		if slices.Contains(reservedTokenParams, k) {
			return fmt.Errorf("%s.additionalTokenParams: reserved token parameter %q is managed by the framework and cannot be overridden", prefix, k)
		}
		if k == "resource" {
			if err := validateResourceParam(token[k]); err != nil {
				return fmt.Errorf("%s.additionalTokenParams: %w", prefix, err)
			}
		}
	}
	return nil
}

// validateResourceParam is ToolHive's RFC 8707 check of a "resource"
// token parameter: an absolute URI without a fragment.
func validateResourceParam(v string) error {
	const param = "resource"
	if v == "" {
		return fmt.Errorf("token parameter %q must not be empty", param)
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return fmt.Errorf("token parameter %q must be an absolute URI: %w", param, err)
	case !u.IsAbs():
		return fmt.Errorf("token parameter %q must be an absolute URI, got %q", param, v)
	case u.Fragment != "" || strings.Contains(v, "#"):
		return fmt.Errorf("token parameter %q must not contain a fragment, got %q", param, v)
	}
	return nil
}

// isLoopbackHost reports whether host is localhost or a loopback address,
// where ToolHive allows an http:// issuer.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ValidateEmbeddedAuthServer returns what ToolHive's operator refuses in
// an MCPExternalAuthConfig's embeddedAuthServer before any workload uses
// it (its messages, under spec.embeddedAuthServer): neither an upstream
// nor an inbound grant, an incomplete TLS listener or none where SPIFFE
// X.509 needs one, and per upstream a duplicate name, a block that does
// not match its type, a client that is not exactly one of clientId and
// dcrConfig, and reserved extra parameters. What hivekeeper does not
// apply is not invalid: a workload that uses it says so.
func ValidateEmbeddedAuthServer(c *thv1.EmbeddedAuthServerConfig) []string {
	const base = "spec.embeddedAuthServer"
	var errs []string
	add := func(err error) {
		if err != nil {
			errs = append(errs, base+": "+err.Error())
		}
	}
	jwtBearer := slices.ContainsFunc(c.TrustedIssuers, func(t thv1.TrustedIssuerConfig) bool { return t.JWTBearerGrant != nil })
	if len(c.UpstreamProviders) == 0 && len(c.DelegateClients) == 0 && c.InboundGrants == nil && !jwtBearer {
		add(fmt.Errorf("at least one upstream provider or inbound grant family is required"))
	}
	add(validateTLSListener(c))
	add(inboundGrantChecks(c))
	add(spiffePrincipalChecks(c.InboundGrants))
	add(forceConfidentialRedirectURIs(c.ForceConfidentialRedirectURIs, c.AllowConfidentialClientRegistration))
	seen := map[string]bool{}
	for i, u := range c.UpstreamProviders {
		prefix := fmt.Sprintf("upstreamProviders[%d]", i)
		if seen[u.Name] {
			add(fmt.Errorf("%s: duplicate name %q", prefix, u.Name))
		}
		seen[u.Name] = true
		var authz, token map[string]string
		switch {
		case u.Type == thv1.UpstreamProviderTypeOIDC && u.OIDCConfig != nil && u.OAuth2Config == nil:
			o := u.OIDCConfig
			if err := validateOIDCDCR(o.ClientID, o.ClientSecretRef, o.DCRConfig); err != nil {
				add(fmt.Errorf("%s: %w", prefix, err))
			}
			authz, token = o.AdditionalAuthorizationParams, o.AdditionalTokenParams
		case u.Type == thv1.UpstreamProviderTypeOAuth2 && u.OAuth2Config != nil && u.OIDCConfig == nil:
			o := u.OAuth2Config
			if err := validateOAuth2Client(o.ClientID, o.ClientSecretRef, o.DCRConfig, o.IdentityFromToken); err != nil {
				add(fmt.Errorf("%s: %w", prefix, err))
			}
			authz, token = o.AdditionalAuthorizationParams, o.AdditionalTokenParams
		default:
			add(fmt.Errorf("%s: type must be 'oidc' or 'oauth2'; oidcConfig must be set when type is 'oidc' "+
				"and oauth2Config must be set when type is 'oauth2' (and the other must not be set)", prefix))
		}
		add(validateUpstreamParams(prefix, authz, token))
	}
	return errs
}
