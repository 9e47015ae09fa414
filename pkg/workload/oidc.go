package workload

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/runconfig"
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

	serviceAccountDir         = "/var/run/secrets/kubernetes.io/serviceaccount"
	defaultKubernetesIssuer   = "https://kubernetes.default.svc"
	defaultKubernetesJWKSPath = "/openid/v1/jwks"
)

// OIDCWiring is what an MCPOIDCConfig reference contributes to a proxy:
// the RunConfig block, and the volumes, mounts and env it needs.
type OIDCWiring struct {
	RunConfig *runconfig.OIDCConfig
	Volumes   []corev1.Volume
	Mounts    []corev1.VolumeMount
	Env       []corev1.EnvVar
}

// CABundleVolume returns the volume and mount of a CA bundle ConfigMap.
func CABundleVolume(configMap string) (corev1.Volume, corev1.VolumeMount) {
	name := CABundleVolumePrefix + configMap
	return corev1.Volume{
			Name: name,
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
			}},
		}, corev1.VolumeMount{
			Name: name, MountPath: path.Join(CABundleMountRoot, configMap), ReadOnly: true,
		}
}

// OIDC maps a referenced MCPOIDCConfig and the workload's reference onto
// the proxy. cfg and ref may be nil (no authentication).
func OIDC(cfg *thv1.MCPOIDCConfig, ref *thv1.OIDCConfigReference) OIDCWiring {
	if cfg == nil || ref == nil {
		return OIDCWiring{}
	}
	rc := &runconfig.OIDCConfig{
		Audience:    ref.Audience,
		ResourceURL: ref.ResourceURL,
		Scopes:      ref.Scopes,
	}
	var w OIDCWiring
	switch {
	case cfg.Spec.Type == thv1.OIDCConfigTypeInline && cfg.Spec.Inline != nil:
		in := cfg.Spec.Inline
		rc.Issuer = in.Issuer
		rc.JWKSURL = in.JWKSURL
		rc.IntrospectionURL = in.IntrospectionURL
		rc.ClientID = in.ClientID
		rc.AuthTokenFile = in.JWKSAuthTokenPath
		rc.AllowPrivateIP = in.JWKSAllowPrivateIP
		rc.InsecureAllowHTTP = in.InsecureAllowHTTP
		if in.CABundleRef != nil && in.CABundleRef.ConfigMapRef != nil && in.CABundleRef.ConfigMapRef.Name != "" {
			cm := in.CABundleRef.ConfigMapRef
			key := cm.Key
			if key == "" {
				key = DefaultCAKey
			}
			vol, mount := CABundleVolume(cm.Name)
			w.Volumes = append(w.Volumes, vol)
			w.Mounts = append(w.Mounts, mount)
			rc.CACertPath = path.Join(mount.MountPath, key)
		}
		if in.ClientSecretRef != nil {
			w.Env = append(w.Env, corev1.EnvVar{
				Name: EnvOIDCClientSecret,
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: in.ClientSecretRef.Name},
					Key:                  in.ClientSecretRef.Key,
				}},
			})
		}
	case cfg.Spec.KubernetesServiceAccount != nil:
		k := cfg.Spec.KubernetesServiceAccount
		rc.Issuer = k.Issuer
		if rc.Issuer == "" {
			rc.Issuer = defaultKubernetesIssuer
		}
		rc.JWKSURL = k.JWKSURL
		rc.IntrospectionURL = k.IntrospectionURL
		if ptr.Deref(k.UseClusterAuth, true) {
			// Reach the API server with the pod's own identity and CA.
			rc.CACertPath = serviceAccountDir + "/ca.crt"
			rc.AuthTokenFile = serviceAccountDir + "/token"
			rc.AllowPrivateIP = true
			if rc.JWKSURL == "" && rc.Issuer == defaultKubernetesIssuer {
				rc.JWKSURL = defaultKubernetesIssuer + defaultKubernetesJWKSPath
			}
		}
	}
	w.RunConfig = rc
	return w
}
