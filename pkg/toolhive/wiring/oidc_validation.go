package wiring

import (
	"fmt"
	"net/url"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// ValidateOIDCConfig re-checks what the CRD schema already enforces (defence in depth
// for objects stored before the schema tightened) plus the URL rules the
// schema cannot express. It returns every problem found, in field order, so
// the message names all of them at once.
func ValidateOIDCConfig(cfg *thv1.MCPOIDCConfig) []string {
	spec := &cfg.Spec
	var errs []string
	switch spec.Type {
	case thv1.OIDCConfigTypeInline:
		if spec.Inline == nil {
			return []string{"spec.inline must be set when type is inline"}
		}
		if spec.KubernetesServiceAccount != nil {
			errs = append(errs, "spec.kubernetesServiceAccount must be absent when type is inline")
		}
		in := spec.Inline
		if in.Issuer == "" {
			errs = append(errs, "spec.inline.issuer is required")
		} else if err := checkURL(in.Issuer, in.InsecureAllowHTTP); err != nil {
			errs = append(errs, fmt.Sprintf("spec.inline.issuer %q: %v", in.Issuer, err))
		}
		if in.JWKSURL != "" {
			if err := checkURL(in.JWKSURL, in.InsecureAllowHTTP); err != nil {
				errs = append(errs, fmt.Sprintf("spec.inline.jwksUrl %q: %v", in.JWKSURL, err))
			}
		}
	case thv1.OIDCConfigTypeKubernetesServiceAccount:
		if spec.KubernetesServiceAccount == nil {
			return []string{"spec.kubernetesServiceAccount must be set when type is kubernetesServiceAccount"}
		}
		if spec.Inline != nil {
			errs = append(errs, "spec.inline must be absent when type is kubernetesServiceAccount")
		}
		// This block has no insecureAllowHTTP: the cluster's issuer is
		// always served over TLS. An empty issuer means the schema default.
		sa := spec.KubernetesServiceAccount
		if sa.Issuer != "" {
			if err := checkURL(sa.Issuer, false); err != nil {
				errs = append(errs, fmt.Sprintf("spec.kubernetesServiceAccount.issuer %q: %v", sa.Issuer, err))
			}
		}
		if sa.JWKSURL != "" {
			if err := checkURL(sa.JWKSURL, false); err != nil {
				errs = append(errs, fmt.Sprintf("spec.kubernetesServiceAccount.jwksUrl %q: %v", sa.JWKSURL, err))
			}
		}
	default:
		errs = append(errs, fmt.Sprintf("spec.type %q must be %q or %q", spec.Type,
			thv1.OIDCConfigTypeKubernetesServiceAccount, thv1.OIDCConfigTypeInline))
	}
	return errs
}

// checkURL accepts an absolute https URL with a host, or http when
// allowHTTP is set. Tokens are validated against these endpoints, so a
// relative or schemeless value would only fail later, inside the proxy.
func checkURL(raw string, allowHTTP bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.Scheme == "" || u.Hostname() == "" {
		return fmt.Errorf("must be an absolute URL with scheme and host")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if allowHTTP {
			return nil
		}
		return fmt.Errorf("http is allowed only with insecureAllowHTTP")
	}
	return fmt.Errorf("scheme %q is not https", u.Scheme)
}
