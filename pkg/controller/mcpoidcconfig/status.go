package mcpoidcconfig

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// maxNamedReferrers caps how many referrers a DeletionBlocked message names:
// a condition message is limited to 32768 bytes and a config shared by
// thousands of workloads would otherwise make the status patch fail.
const maxNamedReferrers = 20

// validate re-checks what the CRD schema already enforces (defence in depth
// for objects stored before the schema tightened) plus the URL rules the
// schema cannot express. It returns every problem found, in field order, so
// the message names all of them at once.
func validate(spec *thv1.MCPOIDCConfigSpec) []string {
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

// configHash is the hex SHA-256 of the spec's JSON encoding. encoding/json
// writes struct fields in declaration order and the spec has no maps, so
// the encoding is canonical: the hash changes exactly when a modelled spec
// field does.
func configHash(spec *thv1.MCPOIDCConfigSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// referrers recomputes, in full, the workloads that reference the config
// key ("<ns>/<name>") from the reference index of every workload kind,
// sorted by kind then name. It costs O(referrers), never O(namespace). An
// empty result is nil so that it encodes like an unset status field.
func (c *Controller) referrers(key string) ([]thv1.WorkloadReference, error) {
	var refs []thv1.WorkloadReference
	for _, w := range c.workloads {
		names, err := index.Referrers(w.indexer, index.ByOIDCConfig, key)
		if err != nil {
			return nil, fmt.Errorf("reading %s referrers of %s: %w", w.kind, key, err)
		}
		for _, n := range names {
			refs = append(refs, thv1.WorkloadReference{Kind: w.kind, Name: n})
		}
	}
	slices.SortFunc(refs, func(a, b thv1.WorkloadReference) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return refs, nil
}

// referrerList renders referrers as "Kind/name, Kind/name", naming at most
// maxNamedReferrers of them.
func referrerList(refs []thv1.WorkloadReference) string {
	var b strings.Builder
	for i, r := range refs {
		if i == maxNamedReferrers {
			fmt.Fprintf(&b, " and %d more", len(refs)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.Kind + "/" + r.Name)
	}
	return b.String()
}
