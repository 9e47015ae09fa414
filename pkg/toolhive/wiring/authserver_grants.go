package wiring

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// EnvDelegateClientSecretPrefix + "_" + the client's position in its list
// is the variable of a delegate client's secret: the position, not the
// client ID, so no client ID chooses a variable's name.
const EnvDelegateClientSecretPrefix = "TOOLHIVE_DELEGATE_CLIENT_SECRET"

// delegateClientEnvName is the variable of the delegate client at index i.
func delegateClientEnvName(i int) string {
	return fmt.Sprintf("%s_%d", EnvDelegateClientSecretPrefix, i)
}

// clone is a copy of list that is nil when list is empty, as ToolHive's
// operator copies the lists it writes: one without omitempty is then
// written null.
func clone(list []string) []string { return append([]string(nil), list...) }

// listOf is a copy of list that is [] when list is empty, as ToolHive's
// operator converts the lists it builds element by element.
func listOf(list []string) []string { return append(make([]string, 0, len(list)), list...) }

// delegationConfig writes the server's delegation settings as ToolHive's
// operator does, after its checks and with its messages: the inbound
// grants, the delegate clients (each secret a variable, by position), and
// the trusted issuers.
func delegationConfig(spec *embeddedAuthServerSpec, c *schema.EmbeddedAuthServerConfig) error {
	if err := maxAssertionAgesSet(spec); err != nil {
		return err
	}
	grants, err := inboundGrants(spec.InboundGrants)
	if err != nil {
		return err
	}
	c.InboundGrants = grants
	if len(spec.DelegateClients) > 0 {
		if c.DelegateClients, err = delegateClients(spec.DelegateClients); err != nil {
			return err
		}
	}
	for i, ti := range spec.TrustedIssuers {
		out := schema.TrustedIssuer{Name: ti.Name, IssuerURL: ti.IssuerURL, ExpectedAudience: ti.ExpectedAudience, JWKSURL: ti.JWKSURL,
			InsecureAllowHTTP: ti.InsecureAllowHTTP, AllowPrivateIPs: ti.AllowPrivateIPs, ActorClaim: ti.ActorClaim,
			AllowedActors: clone(ti.AllowedActors), ActorMatcher: ti.ActorMatcher, AllowedDelegateClients: clone(ti.AllowedDelegateClients),
			AllowMayAct: ti.AllowMayAct}
		if g := ti.JWTBearerGrant; g != nil {
			age, err := assertionAge(fmt.Sprintf("trustedIssuers[%d].jwtBearerGrant", i), g.MaxAssertionAge)
			if err != nil {
				return err
			}
			out.JWTBearerGrant = &schema.JWTBearerGrant{MaxAssertionAge: age, SubjectBindings: subjectBindings(g.SubjectBindings),
				AcceptedAudiences: clone(g.AcceptedAudiences)}
		}
		if ti.CABundleRef != nil {
			out.CAFilePath = caBundleFilePath(AuthServerIssuerCAMountPath, i)
		}
		c.TrustedIssuers = append(c.TrustedIssuers, out)
	}
	return nil
}

// maxAssertionAgesSet is ToolHive's first check of the JWT bearer grants:
// each names its maximum assertion age.
func maxAssertionAgesSet(spec *embeddedAuthServerSpec) error {
	for i, ti := range spec.TrustedIssuers {
		if ti.JWTBearerGrant != nil && ti.JWTBearerGrant.MaxAssertionAge == "" {
			return fmt.Errorf("trustedIssuers[%d].jwtBearerGrant.maxAssertionAge is required", i)
		}
	}
	if g := spec.InboundGrants; g != nil && g.JWTBearer != nil {
		for i, p := range g.JWTBearer.IssuerPolicies {
			if p.MaxAssertionAge == "" {
				return fmt.Errorf("inboundGrants.jwtBearer.issuerPolicies[%d].maxAssertionAge is required", i)
			}
		}
	}
	return nil
}

// assertionAge is a maximum assertion age as ToolHive writes it, the
// duration as Go prints it ("5m" is "5m0s").
func assertionAge(field, age string) (string, error) {
	d, err := time.ParseDuration(age)
	if err != nil {
		return "", fmt.Errorf("%s.maxAssertionAge %q is not a duration", field, age)
	}
	return d.String(), nil
}

// subjectBindings are a JWT bearer grant's subjects and their resources;
// [] for none, as ToolHive writes them.
func subjectBindings(in []thv1.JWTBearerSubjectBinding) []schema.JWTBearerSubjectBinding {
	out := make([]schema.JWTBearerSubjectBinding, len(in))
	for i, b := range in {
		out[i] = schema.JWTBearerSubjectBinding{Subject: b.Subject, AllowedResources: clone(b.AllowedResources)}
	}
	return out
}

// delegateClients are static delegate clients as ToolHive writes them,
// each secret the variable of its position; a client without a complete
// Secret reference is refused with its message.
func delegateClients(in []thv1.DelegateClientConfig) ([]schema.DelegateClient, error) {
	out := make([]schema.DelegateClient, len(in))
	for i, d := range in {
		if r := d.ClientSecretRef; r == nil || r.Name == "" || r.Key == "" {
			return nil, fmt.Errorf("delegateClients[%d].clientSecretRef.name and clientSecretRef.key are required", i)
		}
		out[i] = schema.DelegateClient{ClientID: d.ClientID, ClientSecretEnvVar: delegateClientEnvName(i),
			Scopes: clone(d.Scopes), Audiences: clone(d.Audiences)}
	}
	return out, nil
}

// delegateClientEnv are the secretKeyRef variables of the delegate
// clients: those of the token exchange grant when it is configured, the
// top-level ones otherwise, as ToolHive's operator chooses them.
func delegateClientEnv(spec *embeddedAuthServerSpec) []corev1.EnvVar {
	clients := spec.DelegateClients
	if g := spec.InboundGrants; g != nil && g.TokenExchange != nil {
		clients = g.TokenExchange.DelegateClients
	}
	var env []corev1.EnvVar
	for i, d := range clients {
		if r := d.ClientSecretRef; r != nil {
			env = append(env, SecretEnv(delegateClientEnvName(i), r.Name, r.Key))
		}
	}
	return env
}

// inboundGrants is the inboundGrants block as ToolHive writes it.
func inboundGrants(g *thv1.InboundGrantsConfig) (*schema.InboundGrants, error) {
	if g == nil {
		return nil, nil
	}
	out := &schema.InboundGrants{}
	for _, a := range g.SPIFFEClientAuth {
		out.SPIFFEClientAuth = append(out.SPIFFEClientAuth, schema.SPIFFEClientAuth{TrustDomainRef: a.TrustDomainRef,
			PrincipalPattern: a.PrincipalPattern, ClientID: a.ClientID, Methods: listOf(a.Methods), Resources: clone(a.Resources),
			Audiences: clone(a.Audiences), Scopes: clone(a.Scopes), GrantTypes: []string{spiffeGrantTokenExchange}})
	}
	if te := g.TokenExchange; te != nil {
		clients, err := delegateClients(te.DelegateClients)
		if err != nil {
			return nil, err
		}
		out.TokenExchange = &schema.TokenExchangeGrant{DelegateClients: clients,
			IssuerPolicies: make([]schema.TokenExchangeIssuerPolicy, len(te.IssuerPolicies))}
		for i, p := range te.IssuerPolicies {
			out.TokenExchange.IssuerPolicies[i] = schema.TokenExchangeIssuerPolicy{IssuerRef: p.IssuerRef, ExpectedAudience: p.ExpectedAudience,
				ActorClaim: p.ActorClaim, AllowedActors: clone(p.AllowedActors), ActorMatcher: p.ActorMatcher,
				AllowedDelegateClients: clone(p.AllowedDelegateClients), AllowMayAct: p.AllowMayAct}
		}
	}
	if jb := g.JWTBearer; jb != nil {
		out.JWTBearer = &schema.JWTBearerInboundGrant{IssuerPolicies: make([]schema.JWTBearerIssuerPolicy, len(jb.IssuerPolicies))}
		for i, p := range jb.IssuerPolicies {
			if p.MaxAssertionAge == "" {
				return nil, fmt.Errorf("jwtBearer.issuerPolicies[%d].maxAssertionAge is required", i)
			}
			age, err := assertionAge(fmt.Sprintf("inboundGrants.jwtBearer.issuerPolicies[%d]", i), p.MaxAssertionAge)
			if err != nil {
				return nil, err
			}
			out.JWTBearer.IssuerPolicies[i] = schema.JWTBearerIssuerPolicy{IssuerRef: p.IssuerRef, MaxAssertionAge: age,
				SubjectBindings: subjectBindings(p.SubjectBindings), AcceptedAudiences: clone(p.AcceptedAudiences)}
		}
	}
	return out, nil
}

// spiffeGrantTokenExchange is the one grant a SPIFFE client may use,
// which ToolHive's operator always writes.
const spiffeGrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"

// Where ToolHive's operator mounts a SPIFFE trust domain's file bundle:
// its ConfigMap key as bundle.json in a directory of its own, by
// position, readable by all (a public key set).
const (
	AuthServerSPIFFEBundleVolumePrefix       = "authserver-spiffe-bundle-"
	AuthServerSPIFFEBundleMountPath          = "/etc/toolhive/authserver/spiffe-bundles"
	spiffeBundleFile                         = "bundle.json"
	spiffeBundleMode                   int32 = 0o444
)

// spiffeTrustDomains are the trust domains as ToolHive writes them, a
// file source as the path of its mounted bundle.
func spiffeTrustDomains(in []thv1.SPIFFETrustDomainConfig) []schema.SPIFFETrustDomain {
	var out []schema.SPIFFETrustDomain
	for i, d := range in {
		src := schema.SPIFFEBundleSource{Type: d.BundleSource.Type}
		if e := d.BundleSource.Endpoint; e != nil {
			src.Endpoint = &schema.SPIFFEBundleEndpoint{URL: e.URL, Profile: e.Profile}
		}
		if d.BundleSource.File != nil {
			src.File = &schema.SPIFFEFileBundle{Path: fmt.Sprintf("%s/%d/%s", AuthServerSPIFFEBundleMountPath, i, spiffeBundleFile)}
		}
		if d.BundleSource.WorkloadAPI != nil {
			src.WorkloadAPI = &schema.SPIFFEWorkloadAPIBundle{}
		}
		out = append(out, schema.SPIFFETrustDomain{Name: d.Name, TrustDomain: d.TrustDomain, Methods: listOf(d.Methods), BundleSource: src})
	}
	return out
}

// spiffeBundleVolume is the ConfigMap volume of the file bundle of the
// trust domain at index i, and its mount.
func spiffeBundleVolume(i int, f *thv1.SPIFFEFileBundleSourceConfig) (corev1.Volume, corev1.VolumeMount) {
	name := fmt.Sprintf("%s%d", AuthServerSPIFFEBundleVolumePrefix, i)
	mode := spiffeBundleMode
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: f.ConfigMapName},
			Items:                []corev1.KeyToPath{{Key: f.ConfigMapKey, Path: spiffeBundleFile}}, DefaultMode: &mode,
		}}}, corev1.VolumeMount{
			Name: name, MountPath: fmt.Sprintf("%s/%d", AuthServerSPIFFEBundleMountPath, i), ReadOnly: true,
		}
}
