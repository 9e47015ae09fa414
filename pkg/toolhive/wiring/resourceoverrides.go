package wiring

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// ValidateOverrideEnv rejects proxy environment names the API server would
// refuse on the Deployment ('=') or the runner could not pass on (CR, LF):
// caught here they become a condition, not a rejected write retried forever.
func ValidateOverrideEnv(env []thv1.NameValue) error {
	for _, e := range env {
		if err := schema.ValidateEnvName(e.Name); err != nil {
			return &InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec,
				Message: "spec.resourceOverrides.proxyDeployment.env: " + err.Error()}
		}
	}
	return nil
}

// Overrides are a proxy workload's resourceOverrides unpacked, nil-safe.
// Maps are copies, so a built object never shares one with the cache.
type Overrides struct {
	DeploymentLabels      map[string]string
	DeploymentAnnotations map[string]string
	TemplateLabels        map[string]string
	TemplateAnnotations   map[string]string
	Env                   []thv1.NameValue
	ImagePullSecrets      []corev1.LocalObjectReference
	ServiceLabels         map[string]string
	ServiceAnnotations    map[string]string
}

// UnpackOverrides reads resourceOverrides and validates the proxy env names.
func UnpackOverrides(ro *thv1.ResourceOverrides) (Overrides, error) {
	var o Overrides
	if ro == nil {
		return o, nil
	}
	if d := ro.ProxyDeployment; d != nil {
		o.DeploymentLabels, o.DeploymentAnnotations = maps.Clone(d.Labels), maps.Clone(d.Annotations)
		o.Env, o.ImagePullSecrets = d.Env, d.ImagePullSecrets
		if pt := d.PodTemplateMetadataOverrides; pt != nil {
			o.TemplateLabels, o.TemplateAnnotations = maps.Clone(pt.Labels), maps.Clone(pt.Annotations)
		}
	}
	if s := ro.ProxyService; s != nil {
		o.ServiceLabels, o.ServiceAnnotations = maps.Clone(s.Labels), maps.Clone(s.Annotations)
	}
	return o, ValidateOverrideEnv(o.Env)
}
