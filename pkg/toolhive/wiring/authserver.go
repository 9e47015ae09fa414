package wiring

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
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
	// EnvUpstreamClientSecretPrefix + "_" + the upstream's name in upper
	// case with '-' as '_'.
	EnvUpstreamClientSecretPrefix = "TOOLHIVE_UPSTREAM_CLIENT_SECRET"
	// authServerFileMode: the files are readable by their owner only.
	authServerFileMode int32 = 0o400
	// upstreamTypeOIDC is the only upstream type hivekeeper wires.
	upstreamTypeOIDC = "oidc"
	// callbackPath is appended to the resource URL when an upstream does
	// not name its redirect URI.
	callbackPath = "/oauth/callback"
)

func signingKeyFile(i int) string { return fmt.Sprintf("key-%d.pem", i) }
func hmacFile(i int) string       { return fmt.Sprintf("hmac-%d", i) }

// embeddedAuthServerSpec is the part of ToolHive's EmbeddedAuthServerConfig
// hivekeeper applies; unsupportedAuthServerFields names what a config sets
// beyond it, which refuses the workload rather than run an authorization
// server other than the one asked for.
type embeddedAuthServerSpec struct {
	Issuer                        string              `json:"issuer"`
	AuthorizationEndpointBaseURL  string              `json:"authorizationEndpointBaseUrl,omitempty"`
	SigningKeySecretRefs          []thv1.SecretKeyRef `json:"signingKeySecretRefs,omitempty"`
	HMACSecretRefs                []thv1.SecretKeyRef `json:"hmacSecretRefs,omitempty"`
	TokenLifespans                *tokenLifespans     `json:"tokenLifespans,omitempty"`
	UpstreamProviders             []upstreamProvider  `json:"upstreamProviders,omitempty"`
	DisableUpstreamTokenInjection bool                `json:"disableUpstreamTokenInjection,omitempty"`
	InsecureAllowHTTP             bool                `json:"insecureAllowHTTP,omitempty"`
	BaselineClientScopes          []string            `json:"baselineClientScopes,omitempty"`
}

type tokenLifespans struct {
	AccessTokenLifespan  string `json:"accessTokenLifespan,omitempty"`
	RefreshTokenLifespan string `json:"refreshTokenLifespan,omitempty"`
	AuthCodeLifespan     string `json:"authCodeLifespan,omitempty"`
}

type upstreamProvider struct {
	Name       string        `json:"name"`
	Type       string        `json:"type"`
	OIDCConfig *oidcUpstream `json:"oidcConfig,omitempty"`
}

type oidcUpstream struct {
	IssuerURL                     string             `json:"issuerUrl"`
	ClientID                      string             `json:"clientId"`
	ClientSecretRef               *thv1.SecretKeyRef `json:"clientSecretRef,omitempty"`
	RedirectURI                   string             `json:"redirectUri,omitempty"`
	Scopes                        []string           `json:"scopes,omitempty"`
	AdditionalAuthorizationParams map[string]string  `json:"additionalAuthorizationParams,omitempty"`
	SubjectClaim                  string             `json:"subjectClaim,omitempty"`
	AllowPrivateIPs               bool               `json:"allowPrivateIPs,omitempty"`
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

// storageMemory is the storage hivekeeper supports: the default, in
// memory; redis is refused.
const storageMemory = "memory"

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
	extra(base, top, append(jsonKeys(reflect.TypeFor[embeddedAuthServerSpec]()), "storage"))
	if st, ok := top["storage"].(map[string]any); ok {
		extra(base+".storage", st, []string{"type"})
		if t, _ := st["type"].(string); t != "" && t != storageMemory {
			out = append(out, fmt.Sprintf("%s.storage.type=%s", base, t))
		}
	}
	ups, _ := top["upstreamProviders"].([]any)
	for i, u := range ups {
		um, ok := u.(map[string]any)
		if !ok {
			continue
		}
		path := fmt.Sprintf("%s.upstreamProviders[%d]", base, i)
		extra(path, um, jsonKeys(reflect.TypeFor[upstreamProvider]()))
		if t, _ := um["type"].(string); t != upstreamTypeOIDC {
			out = append(out, fmt.Sprintf("%s.type=%s", path, t))
		}
		if oc, ok := um["oidcConfig"].(map[string]any); ok {
			extra(path+".oidcConfig", oc, jsonKeys(reflect.TypeFor[oidcUpstream]()))
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
// the audience the proxy checks.
//
// What ToolHive refuses is refused with its condition and reason
// (AuthServerRefValidated for authServerRef, Ready for the legacy
// externalAuthConfigRef path); a config that sets what hivekeeper does
// not apply (redis storage, OAuth2 upstreams, delegation grants, ...) is
// refused the same way and names the fields.
func EmbeddedAuthServer(kind string, authServer, extAuth *thv1.MCPExternalAuthConfig, oidc *ResolvedOIDC) (AuthServerWiring, error) {
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
			Message: fmt.Sprintf("%s: MCPExternalAuthConfig %s: ", field, cfg.Name) + fmt.Sprintf(format, a...)}
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
	return wireAuthServer(&spec, oidc), nil
}

// wireAuthServer builds the RunConfig block and the pod's secrets of a
// supported, validated spec.
func wireAuthServer(spec *embeddedAuthServerSpec, oidc *ResolvedOIDC) AuthServerWiring {
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
	secretFile := func(volume, secret, key, file, dir string) {
		w.Volumes = append(w.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: file}}, DefaultMode: ptr.To(authServerFileMode),
		}}})
		w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: volume, MountPath: dir + "/" + file, SubPath: file, ReadOnly: true})
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
	if l := spec.TokenLifespans; l != nil {
		c.TokenLifespans = &schema.TokenLifespanConfig{
			AccessTokenLifespan: l.AccessTokenLifespan, RefreshTokenLifespan: l.RefreshTokenLifespan, AuthCodeLifespan: l.AuthCodeLifespan,
		}
	}
	for _, u := range spec.UpstreamProviders {
		up := schema.UpstreamConfig{Name: u.Name, Type: u.Type}
		if o := u.OIDCConfig; o != nil {
			redirect := o.RedirectURI
			if redirect == "" {
				redirect = strings.TrimRight(oidc.ResourceURL, "/") + callbackPath
			}
			up.OIDCConfig = &schema.OIDCUpstreamConfig{
				IssuerURL: o.IssuerURL, ClientID: o.ClientID, RedirectURI: redirect, Scopes: o.Scopes,
				AdditionalAuthorizationParams: o.AdditionalAuthorizationParams, SubjectClaim: o.SubjectClaim, AllowPrivateIPs: o.AllowPrivateIPs,
			}
			if r := o.ClientSecretRef; r != nil {
				env := EnvUpstreamClientSecretPrefix + "_" + strings.ToUpper(strings.ReplaceAll(u.Name, "-", "_"))
				up.OIDCConfig.ClientSecretEnvVar = env
				w.Env = append(w.Env, SecretEnv(env, r.Name, r.Key))
			}
		}
		c.Upstreams = append(c.Upstreams, up)
	}
	return w
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

// InlineAuthServer wires a VirtualMCPServer's spec.authServerConfig, the
// same block as an MCPExternalAuthConfig's embeddedAuthServer and the same
// supported subset (several upstreams, as a vMCP takes them), as
// ToolHive's operator does: its configuration (authserver-config.yaml
// beside config.yaml), the Secret volumes and secretKeyRef variables of the
// vmcp container. oidc is the resolved incoming OIDC configuration, nil
// for anonymous incoming auth.
//
// Refusals are ToolHive's: AuthServerConfigValidated=False with reason
// AuthServerConfigInvalid and its messages (the checks of its controller,
// then those of vmcp's auth server integration), and a config that sets
// what hivekeeper does not apply names the fields.
func InlineAuthServer(cfg *thv1.EmbeddedAuthServerConfig, oidc *ResolvedOIDC) (AuthServerWiring, error) {
	if cfg == nil {
		return AuthServerWiring{}, nil
	}
	const base = "spec.authServerConfig"
	refuse := func(format string, a ...any) (AuthServerWiring, error) {
		return AuthServerWiring{}, &InvalidSpecError{Condition: thv1.ConditionAuthServerConfigValidated,
			Reason: thv1.ReasonAuthServerConfigInvalid, Message: fmt.Sprintf(format, a...)}
	}
	spec, raw, err := decodeAuthServer(cfg)
	if err != nil {
		return refuse("%s: %v", base, err)
	}
	if spec.Issuer == "" {
		return refuse("%s.issuer is required", base)
	}
	if u, err := url.Parse(spec.Issuer); err == nil && u.Scheme == "http" && u.Host != "" && !isLoopbackHost(u.Hostname()) && !spec.InsecureAllowHTTP {
		return refuse("%s.issuer %q uses http:// with a non-localhost host; set %s.insecureAllowHTTP: true to allow this for trusted "+
			"in-cluster deployments, or use https:// for production deployments", base, spec.Issuer, base)
	}
	if u := unsupportedAuthServerFields(base, raw); len(u) > 0 {
		return refuse("%s: not supported by hivekeeper: %s", base, strings.Join(u, ", "))
	}
	if len(spec.UpstreamProviders) == 0 {
		return refuse("%s requires at least one upstream provider unless delegateClients, inboundGrants, or a trustedIssuer "+
			"with jwtBearerGrant is configured", base)
	}
	for i, u := range spec.UpstreamProviders {
		if u.OIDCConfig == nil {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(u.OIDCConfig.AdditionalAuthorizationParams)) {
			if slices.Contains(reservedAuthorizationParams, k) {
				return refuse("%s.upstreamProviders[%d].additionalAuthorizationParams: reserved parameter %q is managed by the framework "+
					"and cannot be overridden", base, i, k)
			}
		}
	}
	for i, r := range slices.Concat(spec.SigningKeySecretRefs, spec.HMACSecretRefs) {
		if r.Name == "" || r.Key == "" {
			return refuse("%s: secret reference %d: name and key are required", base, i)
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
	return wireAuthServer(&spec, oidc), nil
}

// reservedAuthorizationParams are the authorization request parameters
// ToolHive's authorization server sets itself, which an upstream's
// additionalAuthorizationParams may not override.
var reservedAuthorizationParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state",
	"code_challenge", "code_challenge_method", "nonce"}

// isLoopbackHost reports whether host is localhost or a loopback address,
// where ToolHive allows an http:// issuer.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
