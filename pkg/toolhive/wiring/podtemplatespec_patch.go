package wiring

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// PodTemplateInvalid is the error of a podTemplateSpec no pod can be built
// from: PodTemplateValid=False, and the children are left as they are.
func PodTemplateInvalid(format string, a ...any) error {
	return &InvalidSpecError{
		Condition: thv1.ConditionPodTemplateValid,
		Reason:    thv1.ReasonPodTemplateInvalid,
		Message:   "spec.podTemplateSpec: " + fmt.Sprintf(format, a...),
	}
}

// podTemplateRaw is the template's JSON, nil when there is none (absent,
// empty, or JSON null).
func podTemplateRaw(raw *runtime.RawExtension) []byte {
	if raw == nil || len(raw.Raw) == 0 || string(raw.Raw) == "null" {
		return nil
	}
	return raw.Raw
}

// DecodePodTemplate decodes a podTemplateSpec. It returns nil when there is
// none, and a PodTemplateInvalid error when the JSON is not a pod template
// (a field of the wrong type, say), which is what ToolHive's operator
// refuses too.
func DecodePodTemplate(raw *runtime.RawExtension) (*corev1.PodTemplateSpec, error) {
	b := podTemplateRaw(raw)
	if b == nil {
		return nil, nil
	}
	var tpl corev1.PodTemplateSpec
	if err := json.Unmarshal(b, &tpl); err != nil {
		return nil, PodTemplateInvalid("not a valid pod template: %v", err)
	}
	return &tpl, nil
}

// HashPodTemplateSpec is the hex SHA-256 of the template's JSON re-encoded
// with sorted keys and no insignificant space, "" when there is none. A
// re-encoding of the same template (the API server stores it in its own
// key order) hashes the same.
func HashPodTemplateSpec(raw *runtime.RawExtension) (string, error) {
	b := podTemplateRaw(raw)
	if b == nil {
		return "", nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", PodTemplateInvalid("not JSON: %v", err)
	}
	canonical, err := json.Marshal(v)
	if err != nil {
		return "", PodTemplateInvalid("%v", err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// ApplyPodTemplate merges the user's podTemplateSpec into the pod template
// hivekeeper built, as ToolHive's operator does for the same manifest: a
// strategic merge patch of the user's JSON, as written, onto the built
// template. Lists with a merge key merge by it — containers, init
// containers and volumes by name, env by name, ports by containerPort,
// mounts by mountPath, image pull secrets by name, tolerations by key — so
// the user adds to or overrides entries of the built pod (the proxy
// container is "toolhive"), and every other field the user sets replaces
// the built one. The user's JSON is used as written rather than
// re-encoded, so that a field the user left out never becomes an empty
// list that would clear the built one.
//
// The merged template must keep the selector labels: a Deployment whose
// pods its selector does not match is refused by the API server, and that
// is the user's to fix, not a write to retry.
func ApplyPodTemplate(base corev1.PodTemplateSpec, raw *runtime.RawExtension, selector map[string]string) (corev1.PodTemplateSpec, error) {
	patch := podTemplateRaw(raw)
	if patch == nil {
		return base, nil
	}
	if _, err := DecodePodTemplate(raw); err != nil {
		return base, err
	}
	original, err := json.Marshal(base)
	if err != nil {
		return base, err
	}
	merged, err := strategicpatch.StrategicMergePatch(original, patch, corev1.PodTemplateSpec{})
	if err != nil {
		return base, PodTemplateInvalid("cannot be merged into the pod: %v", err)
	}
	var out corev1.PodTemplateSpec
	if err := json.Unmarshal(merged, &out); err != nil {
		return base, PodTemplateInvalid("the merged pod is not a valid pod template: %v", err)
	}
	for k, v := range selector {
		if out.Labels[k] != v {
			return base, PodTemplateInvalid("metadata.labels[%s] must stay %q: the Deployment selects its pods by it", k, v)
		}
	}
	return out, nil
}

// PodTemplateServiceAccount is the service account a podTemplateSpec
// names, "" when it names none or cannot be decoded (the build reports
// that). The caller looks the account up to check it as it checks
// spec.serviceAccount (CheckServiceAccount).
func PodTemplateServiceAccount(raw *runtime.RawExtension) *string {
	tpl, err := DecodePodTemplate(raw)
	if err != nil || tpl == nil || tpl.Spec.ServiceAccountName == "" {
		return nil
	}
	return &tpl.Spec.ServiceAccountName
}

// SetPodTemplateSpecHash records hash in annotations, returning the map to
// use (allocated when needed). An empty hash sets nothing.
func SetPodTemplateSpecHash(annotations map[string]string, hash string) map[string]string {
	if hash == "" {
		return annotations
	}
	annotations = maps.Clone(annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[naming.AnnotationPodTemplateSpecHash] = hash
	return annotations
}
