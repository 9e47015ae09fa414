package workload

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// ConditionFlippedTo reports whether condType is now status (with a new
// reason or a new status) when it was not before. Warning events are
// recorded on such transitions only, so a persistent problem produces one
// event, not one per sync.
func ConditionFlippedTo(old, cur []metav1.Condition, condType string, status metav1.ConditionStatus) bool {
	n := meta.FindStatusCondition(cur, condType)
	if n == nil || n.Status != status {
		return false
	}
	o := meta.FindStatusCondition(old, condType)
	return o == nil || o.Status != status || o.Reason != n.Reason
}

// InvalidSpecError is user input a builder cannot build from. The sync
// turns it into a condition and a Warning event and does not retry:
// retrying cannot fix user input, the next spec change will.
type InvalidSpecError struct {
	// Condition is the condition type that reports it.
	Condition string
	// Reason is the condition and event reason.
	Reason string
	// Message explains what is wrong, naming the field.
	Message string
}

func (e *InvalidSpecError) Error() string { return e.Message }

// CustomServiceAccount returns the service account a spec names, and
// whether it names one. An empty name counts as none, so the controller's
// own account is used rather than a pod without one.
func CustomServiceAccount(sa *string) (string, bool) {
	if sa == nil || *sa == "" {
		return "", false
	}
	return *sa, true
}

// CopyInt32 returns a copy of p (nil stays nil), so that a built object
// never shares a pointer with the cached custom resource it came from.
func CopyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

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
