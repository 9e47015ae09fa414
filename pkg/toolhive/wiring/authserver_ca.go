package wiring

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// AuthServerCABundle is one CA bundle an embedded authorization server
// names: an upstream's (oidcConfig or oauth2Config caBundleRef) or a
// trusted issuer's. Field is how ToolHive's operator names it in its
// messages, by position and the upstream's name or the issuer's URL.
type AuthServerCABundle struct {
	Field  string
	Issuer bool
	Ref    *thv1.CABundleSource
}

// upstreamCABundle is the CA bundle reference of an upstream's block, nil
// for none.
func upstreamCABundle(u thv1.UpstreamProviderConfig) *thv1.CABundleSource {
	switch {
	case u.OIDCConfig != nil:
		return u.OIDCConfig.CABundleRef
	case u.OAuth2Config != nil:
		return u.OAuth2Config.CABundleRef
	}
	return nil
}

// AuthServerCABundles are the CA bundles cfg names, the upstreams' first,
// then the trusted issuers', each list in its order: the order ToolHive's
// operator checks them and hashes their content in.
func AuthServerCABundles(cfg *thv1.EmbeddedAuthServerConfig) []AuthServerCABundle {
	if cfg == nil {
		return nil
	}
	var out []AuthServerCABundle
	for i, u := range cfg.UpstreamProviders {
		if ref := upstreamCABundle(u); ref != nil {
			out = append(out, AuthServerCABundle{Field: fmt.Sprintf("upstreamProviders[%d] (%q) caBundleRef", i, u.Name), Ref: ref})
		}
	}
	for i, ti := range cfg.TrustedIssuers {
		if ti.CABundleRef != nil {
			out = append(out, AuthServerCABundle{Field: fmt.Sprintf("trustedIssuers[%d] (%q) caBundleRef", i, ti.IssuerURL), Issuer: true, Ref: ti.CABundleRef})
		}
	}
	return out
}

// CABundleRefProblem is what ToolHive's operator refuses of an embedded
// authorization server's CA bundle reference before it reads the
// ConfigMap (its messages): a reference without a ConfigMap name, or an
// optional one, which would start the server without the trust roots it
// needs. "" when the reference can be read.
func CABundleRefProblem(ref *thv1.CABundleSource) string {
	switch {
	case ref.ConfigMapRef == nil:
		return "configMapRef must be specified in caBundleRef"
	case ref.ConfigMapRef.Name == "":
		return "configMapRef.name must be specified"
	case ref.ConfigMapRef.Optional != nil && *ref.ConfigMapRef.Optional:
		return "caBundleRef.configMapRef.optional must be false or omitted"
	}
	return ""
}

// CABundleKey is the ConfigMap key a CA bundle reference names, ca.crt
// unless it names one.
func CABundleKey(ref *thv1.ConfigMapKeyRef) string {
	if ref.Key == "" {
		return DefaultCAKey
	}
	return ref.Key
}

// CheckPEMCertificates is ToolHive's check of a CA bundle's content (its
// messages): one or more PEM blocks, each a certificate that parses, and
// nothing else.
func CheckPEMCertificates(value []byte) error {
	rest := value
	n := 0
	for len(bytes.TrimSpace(rest)) > 0 {
		block, next := pem.Decode(rest)
		switch {
		case block == nil:
			return fmt.Errorf("contains non-PEM certificate data")
		case block.Type != "CERTIFICATE":
			return fmt.Errorf("contains PEM block of type %q, expected CERTIFICATE", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("contains an invalid certificate: %w", err)
		}
		n++
		rest = next
	}
	if n == 0 {
		return fmt.Errorf("certificate data is empty")
	}
	return nil
}

// AuthServerCAChecksum is the pod template annotation's value
// (AuthServerCAChecksumAnnotation) for bundles and their content, in the
// same order: the SHA-256, in hex, of each upstream bundle followed by a
// NUL, then a marker and each trusted issuer's bundle followed by a NUL,
// as ToolHive's operator hashes them. "" without bundles, and then the
// annotation is not written.
func AuthServerCAChecksum(bundles []AuthServerCABundle, content [][]byte) string {
	if len(bundles) == 0 {
		return ""
	}
	h := sha256.New()
	marker := false
	for i, b := range bundles {
		if b.Issuer && !marker {
			h.Write([]byte("trustedIssuers\x00"))
			marker = true
		}
		h.Write(content[i])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// caBundleVolume is the ConfigMap volume of the CA bundle of the upstream
// or trusted issuer at index i (prefix and base say which), its key as
// ca.crt, and its mount as that one file.
func caBundleVolume(prefix, base string, i int, ref *thv1.ConfigMapKeyRef) (corev1.Volume, corev1.VolumeMount) {
	name := fmt.Sprintf("%s%d", prefix, i)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
			Items:                []corev1.KeyToPath{{Key: CABundleKey(ref), Path: authServerCAFile}},
		}}}, corev1.VolumeMount{
			Name: name, MountPath: caBundleFilePath(base, i), SubPath: authServerCAFile, ReadOnly: true,
		}
}

// caBundleVolumes are the CA bundles' volumes and mounts: the upstreams'
// first, then the trusted issuers', as ToolHive's operator mounts them
// after the server's other files. A reference without a ConfigMap name is
// refused with its message.
func caBundleVolumes(spec *embeddedAuthServerSpec) ([]corev1.Volume, []corev1.VolumeMount, error) {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	add := func(field string, i int, ref *thv1.CABundleSource, prefix, base string) error {
		if ref == nil {
			return nil
		}
		if ref.ConfigMapRef == nil || ref.ConfigMapRef.Name == "" {
			return fmt.Errorf("%s[%d].caBundleRef.configMapRef.name is required", field, i)
		}
		v, m := caBundleVolume(prefix, base, i, ref.ConfigMapRef)
		vols, mounts = append(vols, v), append(mounts, m)
		return nil
	}
	for i, u := range spec.UpstreamProviders {
		if err := add("upstreamProviders", i, u.caBundleRef(), AuthServerUpstreamCAVolumePrefix, AuthServerUpstreamCAMountPath); err != nil {
			return nil, nil, err
		}
	}
	for i, ti := range spec.TrustedIssuers {
		if err := add("trustedIssuers", i, ti.CABundleRef, AuthServerIssuerCAVolumePrefix, AuthServerIssuerCAMountPath); err != nil {
			return nil, nil, err
		}
	}
	return vols, mounts, nil
}
