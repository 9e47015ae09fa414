package wiring

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// This file holds the checks ToolHive's operator makes of an embedded
// authorization server's grants and client settings before it reports a
// config valid or deploys a workload with it; each returns the first
// problem, in ToolHive's words, as ToolHive's checks do.

// authServerBuildFailed begins the refusals ToolHive's operator makes
// while it builds a workload's authorization server configuration.
const authServerBuildFailed = "failed to build embedded auth server config: "

// buildFailureMessage is the message of a refusal of an MCPServer's or
// MCPRemoteProxy's embedded authorization server: one of ToolHive's build
// checks in its words ("Failed to build configuration: " and the check's
// message), any other prefixed with where the config is named.
func buildFailureMessage(where, msg string) string {
	if strings.HasPrefix(msg, authServerBuildFailed) {
		return "Failed to build configuration: " + msg
	}
	return where + msg
}

// anyDelegateClient is the wildcard of allowedDelegateClients: any
// confidential client holding the token exchange grant.
const anyDelegateClient = "*"

// effectiveIssuer is a trusted issuer once the inbound grants' issuer
// policies are folded into it: the policy that applies to it, wherever
// it was written.
type effectiveIssuer struct {
	thv1.TrustedIssuerConfig
}

// effectiveGrants is the server's grant configuration with the legacy
// fields (top-level delegateClients, the policy fields of trustedIssuers)
// and inboundGrants folded into one.
type effectiveGrants struct {
	delegateClients []thv1.DelegateClientConfig
	issuers         []effectiveIssuer
}

// inboundGrantChecks is ToolHive's check of the grants: every JWT bearer
// policy names its maximum assertion age; no two trusted issuers share an
// issuer URL or a name; inboundGrants.tokenExchange and .jwtBearer are not
// combined with the legacy fields they replace, and each of their issuer
// policies names a distinct named trusted issuer; confidential clients are
// not offered over plain HTTP; and the trusted issuers, with their
// policies folded in, are ones the server accepts.
func inboundGrantChecks(c *thv1.EmbeddedAuthServerConfig) error {
	g, err := foldGrants(c)
	if err != nil {
		return err
	}
	if err := confidentialClientTransport(c.AllowConfidentialClientRegistration || len(g.delegateClients) > 0,
		c.InsecureAllowHTTP, c.Issuer, c.InsecureAllowConfidentialOverLoopbackHTTP); err != nil {
		return err
	}
	if err := trustedIssuerChecks(g.issuers, c.Issuer); err != nil {
		return fmt.Errorf("trustedIssuers: %w", err)
	}
	return nil
}

// foldGrants folds the legacy grant fields and inboundGrants into one
// configuration, refusing what cannot be folded with ToolHive's messages.
func foldGrants(c *thv1.EmbeddedAuthServerConfig) (effectiveGrants, error) {
	for i, ti := range c.TrustedIssuers {
		if ti.JWTBearerGrant != nil && ti.JWTBearerGrant.MaxAssertionAge == "" {
			return effectiveGrants{}, fmt.Errorf("trustedIssuers[%d].jwtBearerGrant.maxAssertionAge is required", i)
		}
	}
	if c.InboundGrants != nil && c.InboundGrants.JWTBearer != nil {
		for i, p := range c.InboundGrants.JWTBearer.IssuerPolicies {
			if p.MaxAssertionAge == "" {
				return effectiveGrants{}, fmt.Errorf("inboundGrants.jwtBearer.issuerPolicies[%d].maxAssertionAge is required", i)
			}
		}
	}
	g := effectiveGrants{delegateClients: c.DelegateClients}
	byURL, byName := map[string]int{}, map[string]int{}
	legacyExchange, legacyJWTBearer := len(c.DelegateClients) > 0, false
	for i, ti := range c.TrustedIssuers {
		if prev, ok := byURL[ti.IssuerURL]; ok {
			return g, fmt.Errorf("trustedIssuers[%d].issuerUrl duplicates trustedIssuers[%d].issuerUrl", i, prev)
		}
		byURL[ti.IssuerURL] = i
		if ti.Name != "" {
			if prev, ok := byName[ti.Name]; ok {
				return g, fmt.Errorf("trustedIssuers[%d].name duplicates trustedIssuers[%d].name %q", i, prev, ti.Name)
			}
			byName[ti.Name] = i
		}
		legacyExchange = legacyExchange || ti.ExpectedAudience != "" || ti.ActorClaim != "" || len(ti.AllowedActors) > 0 ||
			ti.ActorMatcher != "" || len(ti.AllowedDelegateClients) > 0 || ti.AllowMayAct
		legacyJWTBearer = legacyJWTBearer || ti.JWTBearerGrant != nil
		g.issuers = append(g.issuers, effectiveIssuer{ti})
	}
	in := c.InboundGrants
	if in == nil {
		return g, nil
	}
	// resolve finds the trusted issuer an issuer policy at path names.
	resolve := func(seen map[string]int, ref, path string) (int, error) {
		if ref == "" {
			return 0, fmt.Errorf("%s.issuerRef is required", path)
		}
		if prev, ok := seen[ref]; ok {
			return 0, fmt.Errorf("%s.issuerRef duplicates issuer policy [%d] for %q", path, prev, ref)
		}
		i, ok := byName[ref]
		if !ok {
			return 0, fmt.Errorf("%s.issuerRef references unknown or unnamed trusted issuer %q", path, ref)
		}
		return i, nil
	}
	if te := in.TokenExchange; te != nil {
		if legacyExchange {
			return g, fmt.Errorf("inboundGrants.tokenExchange conflicts with legacy delegateClients or RFC 8693 policy in trustedIssuers")
		}
		g.delegateClients = te.DelegateClients
		seen := map[string]int{}
		for i, p := range te.IssuerPolicies {
			at, err := resolve(seen, p.IssuerRef, fmt.Sprintf("inboundGrants.tokenExchange.issuerPolicies[%d]", i))
			if err != nil {
				return g, err
			}
			seen[p.IssuerRef] = i
			ti := &g.issuers[at]
			ti.ExpectedAudience, ti.ActorClaim, ti.AllowedActors, ti.ActorMatcher = p.ExpectedAudience, p.ActorClaim, p.AllowedActors, p.ActorMatcher
			ti.AllowedDelegateClients, ti.AllowMayAct = p.AllowedDelegateClients, p.AllowMayAct
		}
	}
	if jb := in.JWTBearer; jb != nil {
		if legacyJWTBearer {
			return g, fmt.Errorf("inboundGrants.jwtBearer conflicts with legacy trustedIssuers[*].jwtBearerGrant")
		}
		seen := map[string]int{}
		for i, p := range jb.IssuerPolicies {
			at, err := resolve(seen, p.IssuerRef, fmt.Sprintf("inboundGrants.jwtBearer.issuerPolicies[%d]", i))
			if err != nil {
				return g, err
			}
			seen[p.IssuerRef] = i
			grant := p.JWTBearerGrantConfig
			g.issuers[at].JWTBearerGrant = &grant
		}
	}
	return g, nil
}

// confidentialTransport is the cause ToolHive names when confidential
// clients would cross cleartext HTTP.
const confidentialTransport = "client credentials, authorization codes and tokens would cross cleartext HTTP"

// confidentialClientTransport is ToolHive's check that confidential
// clients (dynamic registration of them, or any delegate client) are only
// offered over https, or over http on a loopback issuer when
// insecureAllowConfidentialOverLoopbackHTTP says so.
func confidentialClientTransport(confidential, insecureAllowHTTP bool, issuer string, loopbackOptIn bool) error {
	const who = "confidential clients (allow_confidential_client_registration or delegate clients) "
	if !confidential {
		return nil
	}
	if insecureAllowHTTP {
		return fmt.Errorf(who + "cannot be combined with insecure_allow_http: " + confidentialTransport)
	}
	u, err := url.Parse(issuer)
	if err != nil {
		return fmt.Errorf("confidential clients require a valid issuer URL")
	}
	if u.Scheme != "http" {
		return nil
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("confidential clients require a valid issuer URL")
	}
	loopback := isLoopbackHostPort(u.Host)
	switch {
	case loopbackOptIn && !loopback:
		return fmt.Errorf(who + "cannot use the loopback HTTP opt-in with a non-loopback issuer: " + confidentialTransport)
	case !loopbackOptIn && loopback:
		return fmt.Errorf(who + "cannot be combined with a plain-HTTP loopback issuer unless " +
			"insecure_allow_confidential_over_loopback_http is set: " + confidentialTransport)
	case !loopback:
		return fmt.Errorf(who + "cannot use a plain-HTTP non-loopback issuer: " + confidentialTransport)
	}
	return nil
}

// isLoopbackHostPort is isLoopbackHost of a host with or without a port
// (brackets of an IPv6 literal removed).
func isLoopbackHostPort(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	return isLoopbackHost(strings.TrimPrefix(strings.TrimSuffix(h, "]"), "["))
}

// actorClaimsNotInExtra are the claims the server reads into fields of
// its own, which an issuer's actorClaim therefore cannot name.
var actorClaimsNotInExtra = []string{"sub", "iss", "aud", "exp", "iat", "nbf", "jti", "name", "email", "scope", "scp", "may_act"}

// trustedIssuerChecks is ToolHive's structural check of the trusted
// issuers (the run configuration's key names in its messages): an
// expected audience unless the issuer only serves the JWT bearer grant,
// never the server's own issuer or one configured twice, an actor claim
// the server can read, a delegation policy whose allowed delegate clients
// are set and not a wildcard mixed with names or with allowMayAct, and a
// JWT bearer grant with a positive maximum age and subject bindings each
// with its resources.
func trustedIssuerChecks(issuers []effectiveIssuer, self string) error {
	seen := map[string]bool{}
	for _, ti := range issuers {
		at := fmt.Sprintf("issuer_url %q: ", ti.IssuerURL)
		if err := trustedIssuerURL(ti.IssuerURL, ti.InsecureAllowHTTP); err != nil {
			return err
		}
		if ti.JWKSURL != "" {
			if err := jwksURL(ti.JWKSURL, ti.InsecureAllowHTTP, ti.AllowPrivateIPs); err != nil {
				return fmt.Errorf("jwks_url: %w", err)
			}
		}
		if ti.AllowPrivateIPs && ti.JWKSURL == "" {
			return fmt.Errorf("allow_private_ips requires jwks_url to be set explicitly")
		}
		if ti.ExpectedAudience == "" && ti.JWTBearerGrant == nil {
			return errors.New(at + "expected_audience is required when JWT-bearer grant is disabled")
		}
		if ti.IssuerURL == self {
			return errors.New(at + "must not equal the authorization server's own issuer; self-issued tokens are already handled separately")
		}
		if seen[ti.IssuerURL] {
			return fmt.Errorf("issuer_url configured more than once")
		}
		seen[ti.IssuerURL] = true
		if ti.ActorClaim != "" && slices.Contains(actorClaimsNotInExtra, ti.ActorClaim) {
			return fmt.Errorf(at+"actor_claim %q is not supported "+
				`(use "client_id" or a non-registered claim such as "azp", "appid", "cid")`, ti.ActorClaim)
		}
		if err := delegationPolicy(ti, at); err != nil {
			return err
		}
		if err := jwtBearerPolicy(ti, at); err != nil {
			return err
		}
		if ti.AllowMayAct && slices.Contains(ti.AllowedDelegateClients, anyDelegateClient) {
			return fmt.Errorf(at+"allow_may_act must not be enabled when allowed_delegate_clients contains the wildcard %q", anyDelegateClient)
		}
	}
	return nil
}

// trustedIssuerURL is ToolHive's check of a trusted issuer's URL: an
// absolute https URL (http with insecureAllowHTTP) without query,
// fragment or credentials.
func trustedIssuerURL(issuer string, insecureAllowHTTP bool) error {
	if issuer == "" {
		return fmt.Errorf("issuer_url is required")
	}
	u, err := url.Parse(issuer)
	switch {
	case err != nil:
		return fmt.Errorf("invalid URL")
	case u.Scheme == "":
		return fmt.Errorf("scheme is required")
	case u.Hostname() == "":
		return fmt.Errorf("host is required")
	case u.RawQuery != "":
		return fmt.Errorf("must not contain query component")
	case u.Fragment != "":
		return fmt.Errorf("must not contain fragment component")
	case u.User != nil:
		return fmt.Errorf("must not contain userinfo (credentials in the URL)")
	case u.Scheme != "https" && (u.Scheme != "http" || !insecureAllowHTTP):
		return fmt.Errorf("scheme must be https (or http with insecure_allow_http)")
	}
	return nil
}

// jwksURL is ToolHive's check of a trusted issuer's JWKS URL: a host, no
// fragment or credentials, https (http with insecureAllowHTTP), and no
// private or loopback address literal unless allowPrivateIPs.
func jwksURL(raw string, insecureAllowHTTP, allowPrivateIPs bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("invalid URL")
	case u.Hostname() == "":
		return fmt.Errorf("host is required")
	case u.Fragment != "":
		return fmt.Errorf("must not contain fragment component")
	case u.User != nil:
		return fmt.Errorf("must not contain userinfo (credentials in the URL)")
	case u.Scheme != "https" && (u.Scheme != "http" || !insecureAllowHTTP):
		return fmt.Errorf("must use HTTPS, got %q", u.Scheme)
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && !allowPrivateIPs && (ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified()) {
		return fmt.Errorf("must not point to a private or loopback address")
	}
	return nil
}

// delegationPolicy checks the token exchange (RFC 8693) policy of a
// trusted issuer; at names it.
func delegationPolicy(ti effectiveIssuer, at string) error {
	signal := ti.ActorClaim != "" || ti.ActorMatcher != "" || ti.AllowMayAct || len(ti.AllowedActors) > 0
	switch {
	case ti.ExpectedAudience == "" && !signal:
		return nil
	case ti.ExpectedAudience == "":
		return errors.New(at + "expected_audience is required when actor_claim, actor_matcher, allow_may_act, or allowed_actors is set")
	case len(ti.AllowedDelegateClients) == 0:
		return fmt.Errorf(at+"allowed_delegate_clients is required; set it to [%q] to permit any ToolHive "+
			"confidential client holding the token-exchange grant, or list specific client IDs to bind "+
			"delegation to them — an issuer with no entries can never authorize a delegated exchange", anyDelegateClient)
	case slices.Contains(ti.AllowedDelegateClients, ""):
		return errors.New(at + "allowed_delegate_clients must not contain an empty client ID")
	case slices.Contains(ti.AllowedDelegateClients, anyDelegateClient) && len(ti.AllowedDelegateClients) > 1:
		return fmt.Errorf(at+"allowed_delegate_clients must not combine the wildcard %q with specific client IDs", anyDelegateClient)
	case ti.AllowMayAct && slices.Contains(ti.AllowedDelegateClients, anyDelegateClient):
		return fmt.Errorf(at+"allow_may_act must not be enabled when allowed_delegate_clients contains the wildcard %q", anyDelegateClient)
	}
	return nil
}

// jwtBearerPolicy checks the JWT bearer (RFC 7523) policy of a trusted
// issuer; at names it.
func jwtBearerPolicy(ti effectiveIssuer, at string) error {
	p := ti.JWTBearerGrant
	if p == nil {
		return nil
	}
	if age, err := time.ParseDuration(p.MaxAssertionAge); err != nil || age <= 0 {
		return errors.New(at + "jwt_bearer_grant.max_assertion_age must be a positive duration")
	}
	if len(p.SubjectBindings) == 0 {
		return errors.New(at + "jwt_bearer_grant.subject_bindings is required")
	}
	subjects := map[string]bool{}
	for _, b := range p.SubjectBindings {
		switch {
		case b.Subject == "" || b.Subject == anyDelegateClient:
			return errors.New(at + "jwt_bearer_grant.subject_bindings contains an empty or wildcard subject")
		case subjects[b.Subject]:
			return fmt.Errorf(at+"jwt_bearer_grant.subject_bindings contains duplicate subject %q", b.Subject)
		case len(b.AllowedResources) == 0:
			return fmt.Errorf(at+"jwt_bearer_grant subject %q has no allowed_resources", b.Subject)
		}
		subjects[b.Subject] = true
		for _, r := range b.AllowedResources {
			if r == "" || r == anyDelegateClient {
				return fmt.Errorf(at+"jwt_bearer_grant subject %q has an empty or wildcard resource", b.Subject)
			}
		}
	}
	if slices.Contains(p.AcceptedAudiences, "") {
		return errors.New(at + "jwt_bearer_grant.accepted_audiences must not contain an empty value")
	}
	return nil
}

// maxRedirectURILength is the longest redirect URI ToolHive's
// authorization server accepts.
const maxRedirectURILength = 2048

// forceConfidentialRedirectURIs is ToolHive's check of
// forceConfidentialRedirectUris: only with
// allowConfidentialClientRegistration, each an absolute https URI
// without a fragment, never a loopback one (a loopback client is public).
func forceConfidentialRedirectURIs(uris []string, allowConfidential bool) error {
	if len(uris) == 0 {
		return nil
	}
	if !allowConfidential {
		return fmt.Errorf("force_confidential_redirect_uris requires allow_confidential_client_registration to be true")
	}
	for _, uri := range uris {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("force_confidential_redirect_uris: %q: %s", uri, fmt.Sprintf(format, a...))
		}
		if len(uri) > maxRedirectURILength {
			return bad("redirect_uri too long (maximum %d characters)", maxRedirectURILength)
		}
		u, err := url.Parse(uri)
		if err != nil {
			return bad("invalid redirect_uri format: %v", err)
		}
		if r, err := url.ParseRequestURI(uri); err != nil || r.Scheme == "" || u.Fragment != "" {
			return bad("redirect_uri must be an absolute URI without a fragment")
		}
		host := u.Hostname()
		loopback := host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(host).IsLoopback()
		if u.Scheme != "https" && (u.Scheme != "http" || !loopback) {
			return bad("redirect_uri must use http (for loopback) or https scheme")
		}
		if isLoopbackHost(host) {
			return fmt.Errorf("force_confidential_redirect_uris: %q must not be a loopback redirect URI; "+
				"a loopback client is a public client by construction and must not be issued a secret", uri)
		}
	}
	return nil
}

// defaultScopesSupported are the scopes ToolHive's authorization server
// supports when it is given none.
var defaultScopesSupported = []string{"openid", "profile", "email", "offline_access"}

// runtimeGrantChecks is the last check ToolHive's operator makes before it
// deploys a workload with the server: the server's own validation of its
// delegate clients and trusted issuers against the scopes and audiences
// the workload gives it (scopes, audiences: the configuration's
// scopes_supported and allowed_audiences), which the server would
// otherwise fail at start. Each delegate client has an id that is unique
// and not a URL (a client metadata document's), scopes among those
// supported, and audiences among those allowed; a trusted issuer's JWT
// bearer grant accepts no audience that is a resource's.
func runtimeGrantChecks(c *thv1.EmbeddedAuthServerConfig, scopes, audiences []string) error {
	if len(c.DelegateClients) == 0 && len(c.TrustedIssuers) == 0 && c.InboundGrants == nil && len(c.SPIFFETrustDomains) == 0 {
		return nil
	}
	g, err := foldGrants(c)
	if err != nil {
		return nil // refused before, with its message
	}
	if err := delegateClientChecks(g.delegateClients, scopes, audiences); err != nil {
		return fmt.Errorf("invalid embedded auth server delegate clients or trusted issuers: %w", err)
	}
	for _, ti := range g.issuers {
		if ti.JWTBearerGrant == nil {
			continue
		}
		for _, a := range ti.JWTBearerGrant.AcceptedAudiences {
			if slices.Contains(audiences, a) {
				return fmt.Errorf("invalid embedded auth server delegate clients or trusted issuers: issuer_url %q: "+
					"jwt_bearer_grant.accepted_audiences value %q must not also be a configured resource audience (allowed_audiences); "+
					"accepted_audiences identifies this authorization server, not a resource, or a resource-scoped access token "+
					"could be replayed as a JWT-bearer assertion", ti.IssuerURL, a)
			}
		}
	}
	if err := spiffePermissionChecks(c.InboundGrants, scopes, audiences); err != nil {
		return fmt.Errorf("invalid embedded auth server delegate clients or trusted issuers: %w", err)
	}
	return nil
}

// delegateClientChecks is the server's check of its static delegate
// clients, in its words.
func delegateClientChecks(clients []thv1.DelegateClientConfig, scopes, audiences []string) error {
	if len(scopes) == 0 {
		scopes = defaultScopesSupported
	}
	seen := map[string]bool{}
	for _, d := range clients {
		id := d.ClientID
		switch {
		case id == "":
			return fmt.Errorf("delegate_clients: client_id is required")
		case seen[id]:
			return fmt.Errorf("delegate_clients: duplicate client_id %q", id)
		case isClientMetadataURL(id):
			return fmt.Errorf("delegate_clients: client_id %q looks like a CIMD client metadata URL, "+
				"which collides with CIMD client resolution — pre-provisioned delegate "+
				"clients must use an opaque, non-URL client_id", id)
		case len(d.Scopes) == 0:
			return fmt.Errorf("delegate_clients: client_id %q: scopes is required", id)
		}
		seen[id] = true
		for _, s := range d.Scopes {
			if !slices.Contains(scopes, s) {
				return fmt.Errorf("delegate_clients[%s].scopes contains %q which is not in scopes_supported", id, s)
			}
		}
		if len(d.Audiences) == 0 {
			return fmt.Errorf("delegate_clients: client_id %q: audiences is required unless token_exchange.exchange_refresh_tokens is set", id)
		}
		for _, a := range d.Audiences {
			if !slices.Contains(audiences, a) {
				return fmt.Errorf("delegate_clients: client_id %q: audience %q is not in allowed_audiences", id, a)
			}
		}
	}
	return nil
}

// isClientMetadataURL says whether a client id has the shape of a client
// metadata document's URL: https, or http on a loopback host.
func isClientMetadataURL(id string) bool {
	if strings.HasPrefix(id, "https://") {
		return true
	}
	if !strings.HasPrefix(id, "http://") {
		return false
	}
	u, err := url.Parse(id)
	return err == nil && isLoopbackHostPort(u.Host)
}

// spiffePrincipalChecks is ToolHive's check of inboundGrants'
// spiffeClientAuth entries: each principalPattern a SPIFFE ID with a path
// or with a terminal /* wildcard, each resource an absolute http(s) URI
// without a fragment, listed once; then no two patterns that overlap
// (one SPIFFE ID would match two entries).
func spiffePrincipalChecks(in *thv1.InboundGrantsConfig) error {
	if in == nil {
		return nil
	}
	patterns := make([]string, len(in.SPIFFEClientAuth))
	for i, a := range in.SPIFFEClientAuth {
		p, err := spiffePattern(a.PrincipalPattern)
		if err != nil {
			return fmt.Errorf("inboundGrants.spiffeClientAuth[%d].principalPattern: %w", i, err)
		}
		patterns[i] = p
		if err := resourceIndicators(a.Resources, fmt.Sprintf("inboundGrants.spiffeClientAuth[%d].resources", i)); err != nil {
			return err
		}
	}
	for i := range patterns {
		for j := i + 1; j < len(patterns); j++ {
			if spiffePatternsOverlap(patterns[i], patterns[j]) {
				return fmt.Errorf("inboundGrants.spiffeClientAuth[%d].principalPattern %q overlaps spiffeClientAuth[%d].principalPattern %q",
					i, in.SPIFFEClientAuth[i].PrincipalPattern, j, in.SPIFFEClientAuth[j].PrincipalPattern)
			}
		}
	}
	return nil
}

// spiffePattern checks a principal pattern and returns it as compared.
func spiffePattern(p string) (string, error) {
	if p == "" {
		return "", errors.New("is required")
	}
	wildcard := strings.HasSuffix(p, "/*")
	if strings.Contains(p, "*") && (!wildcard || strings.Count(p, "*") != 1) {
		return "", errors.New("must use only a terminal /* wildcard")
	}
	base := strings.TrimSuffix(p, "/*")
	path, err := spiffeIDPath(base)
	if err != nil {
		return "", fmt.Errorf("must be a SPIFFE ID: %w", err)
	}
	if path == "" && !wildcard {
		return "", errors.New("must include a path or terminal /* wildcard")
	}
	if wildcard {
		return base + "/*", nil
	}
	return base, nil
}

// spiffeIDPath checks that id is a SPIFFE ID (spiffe://, a trust domain
// of lower-case letters, digits, dots, dashes and underscores, and a path
// of non-empty segments of letters, digits, dots, dashes and underscores,
// none "." or "..") and returns its path, with the SPIFFE ID
// specification's wording of what is wrong.
func spiffeIDPath(id string) (string, error) {
	const scheme = "spiffe://"
	switch {
	case id == "":
		return "", errors.New("cannot be empty")
	case !strings.HasPrefix(id, scheme):
		return "", errors.New("scheme is missing or invalid")
	}
	rest := id[len(scheme):]
	td, path, _ := strings.Cut(rest, "/")
	for _, c := range []byte(td) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", errors.New("trust domain characters are limited to lowercase letters, numbers, dots, dashes, and underscores")
		}
	}
	if td == "" {
		return "", errors.New("trust domain is missing")
	}
	if len(rest) == len(td) {
		return "", nil
	}
	segments := strings.Split(path, "/")
	for i, seg := range segments {
		switch seg {
		case "":
			if i == len(segments)-1 {
				return "", errors.New("path cannot have a trailing slash")
			}
			return "", errors.New("path cannot contain empty segments")
		case ".", "..":
			return "", errors.New("path cannot contain dot segments")
		}
		for _, c := range []byte(seg) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
				return "", errors.New("path segment characters are limited to letters, numbers, dots, dashes, and underscores")
			}
		}
	}
	return "/" + path, nil
}

// spiffePatternsOverlap says whether one SPIFFE ID could match both
// patterns (each a SPIFFE ID or one ending in /*).
func spiffePatternsOverlap(a, b string) bool {
	aw, bw := strings.HasSuffix(a, "/*"), strings.HasSuffix(b, "/*")
	ap, bp := strings.TrimSuffix(a, "*"), strings.TrimSuffix(b, "*")
	switch {
	case !aw && !bw:
		return a == b
	case aw && bw:
		return strings.HasPrefix(ap, bp) || strings.HasPrefix(bp, ap)
	case aw:
		return strings.HasPrefix(b, ap)
	default:
		return strings.HasPrefix(a, bp)
	}
}

// resourceIndicators is ToolHive's check of RFC 8707 resource
// indicators: distinct, non-empty, absolute http(s) URIs with a host and
// no credentials or fragment.
func resourceIndicators(values []string, field string) error {
	if err := distinctValues(values, field); err != nil {
		return err
	}
	for _, v := range values {
		u, err := url.ParseRequestURI(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil || u.Fragment != "" || strings.Contains(v, "#") {
			return fmt.Errorf("%s: resource indicator %q must be an absolute HTTP(S) URI without a fragment", field, v)
		}
	}
	return nil
}

// distinctValues is ToolHive's check that a list holds no empty and no
// repeated value, in its words.
func distinctValues(values []string, field string) error {
	seen := map[string]bool{}
	for _, v := range values {
		switch {
		case v == "":
			return fmt.Errorf("%s must not contain an empty value", field)
		case seen[v]:
			return fmt.Errorf("%s: duplicate value %q", field, v)
		}
		seen[v] = true
	}
	return nil
}

// spiffePermissionChecks is the server's check of what a SPIFFE client may
// obtain: resources among the allowed audiences, audiences and scopes set
// and distinct, scopes among those supported.
func spiffePermissionChecks(in *thv1.InboundGrantsConfig, scopes, audiences []string) error {
	if in == nil {
		return nil
	}
	if len(scopes) == 0 {
		scopes = defaultScopesSupported
	}
	distinct := func(values []string, field string) error {
		if len(values) == 0 {
			return fmt.Errorf("%s is required", field)
		}
		return distinctValues(values, field)
	}
	for i, a := range in.SPIFFEClientAuth {
		at := fmt.Sprintf("inbound_grants.spiffe_client_auth[%d]", i)
		if len(a.Resources) > 0 {
			if err := resourceIndicators(a.Resources, at+".resources"); err != nil {
				return err
			}
			for _, r := range a.Resources {
				if !slices.Contains(audiences, r) {
					return fmt.Errorf("%s.resources: resource %q is not allowed by allowed_audiences", at, r)
				}
			}
		}
		if err := distinct(a.Audiences, at+".audiences"); err != nil {
			return err
		}
		if err := distinct(a.Scopes, at+".scopes"); err != nil {
			return err
		}
		for _, sc := range a.Scopes {
			if !slices.Contains(scopes, sc) {
				return fmt.Errorf("%s.scopes contains %q which is not in scopes_supported", at, sc)
			}
		}
	}
	return nil
}
