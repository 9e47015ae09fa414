package wiring

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// OIDC wiring constants.
const (
	// EnvOIDCClientSecret carries an inline config's client secret into the
	// proxy container from its Secret; it never enters a ConfigMap.
	EnvOIDCClientSecret = "TOOLHIVE_OIDC_CLIENT_SECRET"
	// CABundleVolumePrefix and CABundleMountRoot name and place an OIDC CA
	// bundle volume: oidc-ca-bundle-<configmap> at /config/certs/<configmap>.
	CABundleVolumePrefix = "oidc-ca-bundle-"
	CABundleMountRoot    = "/config/certs"
	// DefaultCAKey is the ConfigMap key of a CA bundle when none is named.
	DefaultCAKey = "ca.crt"

	serviceAccountDir       = "/var/run/secrets/kubernetes.io/serviceaccount"
	defaultKubernetesIssuer = "https://kubernetes.default.svc"
)

// ResolvedOIDC is an MCPOIDCConfig combined with a workload's reference:
// every value the proxy or the vMCP needs, with ToolHive's defaults
// applied (the issuer and cluster-auth paths of service-account tokens,
// the resource URL). The RunConfig and the vMCP config are both mapped
// from it, each in ToolHive's own encoding.
type ResolvedOIDC struct {
	Issuer                          string
	Audience                        string
	JWKSURL                         string
	IntrospectionURL                string
	ClientID                        string
	CABundlePath                    string
	JWKSAuthTokenPath               string
	ResourceURL                     string
	JWKSAllowPrivateIP              bool
	ProtectedResourceAllowPrivateIP bool
	InsecureAllowHTTP               bool
	Scopes                          []string
	// HasClientSecret is true when the secret reaches the pod as an env
	// variable from a secretKeyRef.
	HasClientSecret bool
}

// RunConfig maps the resolved config onto the runner's token validator.
// The runner has no protected-resource private-IP switch at this release.
func (r *ResolvedOIDC) RunConfig() *schema.OIDCConfig {
	if r == nil {
		return nil
	}
	return &schema.OIDCConfig{
		Issuer:            r.Issuer,
		Audience:          r.Audience,
		JWKSURL:           r.JWKSURL,
		ClientID:          r.ClientID,
		CACertPath:        r.CABundlePath,
		AuthTokenFile:     r.JWKSAuthTokenPath,
		AllowPrivateIP:    r.JWKSAllowPrivateIP,
		InsecureAllowHTTP: r.InsecureAllowHTTP,
		IntrospectionURL:  r.IntrospectionURL,
		ResourceURL:       r.ResourceURL,
		Scopes:            r.Scopes,
	}
}

// OIDCWiring is what an MCPOIDCConfig reference contributes to a proxy or
// a vMCP: the resolved values, and the volumes, mounts and env they need.
type OIDCWiring struct {
	Resolved *ResolvedOIDC
	Volumes  []corev1.Volume
	Mounts   []corev1.VolumeMount
	Env      []corev1.EnvVar
}

// CABundleVolume returns the volume and mount of a CA bundle ConfigMap,
// as ToolHive's operator builds them: only the bundle's key is projected,
// and the reference's optional is not carried.
func CABundleVolume(ref *thv1.ConfigMapKeyRef, key string) (corev1.Volume, corev1.VolumeMount) {
	name := CABundleVolumePrefix + ref.Name
	return corev1.Volume{
			Name: name,
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
				Items:                []corev1.KeyToPath{{Key: key, Path: key}},
			}},
		}, corev1.VolumeMount{
			Name: name, MountPath: path.Join(CABundleMountRoot, ref.Name), ReadOnly: true,
		}
}

// ServiceResourceURL is the resource URL ToolHive's operator advertises
// when a reference names none: http://<name>.<ns>.svc.cluster.local:<port>.
func ServiceResourceURL(name, namespace string, port int32) string {
	return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", name, namespace, port)
}

// OIDC maps a referenced MCPOIDCConfig and the workload's reference onto
// a proxy or vMCP. cfg and ref may be nil (no authentication).
// defaultResourceURL applies when the reference names no resource URL;
// secretEnv is the env variable that carries an inline client secret
// (the runner and vmcp read different ones).
func OIDC(cfg *thv1.MCPOIDCConfig, ref *thv1.OIDCConfigReference, defaultResourceURL, secretEnv string) OIDCWiring {
	if cfg == nil || ref == nil {
		return OIDCWiring{}
	}
	r := &ResolvedOIDC{
		Audience:    ref.Audience,
		ResourceURL: ref.ResourceURL,
		Scopes:      ref.Scopes,
	}
	if r.ResourceURL == "" {
		r.ResourceURL = defaultResourceURL
	}
	var w OIDCWiring
	switch {
	case cfg.Spec.Type == thv1.OIDCConfigTypeInline && cfg.Spec.Inline != nil:
		in := cfg.Spec.Inline
		r.Issuer = in.Issuer
		r.JWKSURL = in.JWKSURL
		r.IntrospectionURL = in.IntrospectionURL
		r.ClientID = in.ClientID
		r.JWKSAuthTokenPath = in.JWKSAuthTokenPath
		r.JWKSAllowPrivateIP = in.JWKSAllowPrivateIP
		r.ProtectedResourceAllowPrivateIP = in.ProtectedResourceAllowPrivateIP
		r.InsecureAllowHTTP = in.InsecureAllowHTTP
		if in.CABundleRef != nil && in.CABundleRef.ConfigMapRef != nil && in.CABundleRef.ConfigMapRef.Name != "" {
			cm := in.CABundleRef.ConfigMapRef
			key := cm.Key
			if key == "" {
				key = DefaultCAKey
			}
			vol, mount := CABundleVolume(cm, key)
			w.Volumes = append(w.Volumes, vol)
			w.Mounts = append(w.Mounts, mount)
			r.CABundlePath = path.Join(mount.MountPath, key)
		}
		if in.ClientSecretRef != nil {
			r.HasClientSecret = true
			w.Env = append(w.Env, SecretEnv(secretEnv, in.ClientSecretRef.Name, in.ClientSecretRef.Key))
		}
	case cfg.Spec.Type == thv1.OIDCConfigTypeKubernetesServiceAccount:
		k := cfg.Spec.KubernetesServiceAccount
		if k == nil {
			k = &thv1.KubernetesServiceAccountOIDCConfig{}
		}
		r.Issuer = k.Issuer
		if r.Issuer == "" {
			r.Issuer = defaultKubernetesIssuer
		}
		r.JWKSURL = k.JWKSURL
		r.IntrospectionURL = k.IntrospectionURL
		if ptr.Deref(k.UseClusterAuth, true) {
			// Reach the API server with the pod's own identity and CA;
			// the JWKS URL is discovered from the issuer, as ToolHive does.
			r.CABundlePath = serviceAccountDir + "/ca.crt"
			r.JWKSAuthTokenPath = serviceAccountDir + "/token"
			r.JWKSAllowPrivateIP = true
		}
	}
	w.Resolved = r
	return w
}

// ApplyTo sets the runner's OIDC fields of rc: the token validator, and
// the CA bundle and JWKS token paths repeated at the top level.
func (w OIDCWiring) ApplyTo(rc *schema.RunConfig) {
	if w.Resolved == nil {
		return
	}
	rc.OIDCConfig = w.Resolved.RunConfig()
	rc.ThvCABundle = w.Resolved.CABundlePath
	rc.JWKSAuthTokenFile = w.Resolved.JWKSAuthTokenPath
}
