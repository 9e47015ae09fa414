package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// FieldPodTemplateSpecHash is the drift field reported when the hash
// annotation differs, and the ones for the scheduling fields compared by
// value (as ToolHive's operator compares them).
const (
	FieldPodTemplateSpecHash = "metadata.annotations[" + naming.AnnotationPodTemplateSpecHash + "]"
	FieldNodeSelector        = "spec.template.spec.nodeSelector"
	FieldTolerations         = "spec.template.spec.tolerations"
	FieldAffinity            = "spec.template.spec.affinity"
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

// hasPodTemplateSpec reports whether a Deployment carries (or is to carry)
// a user podTemplateSpec.
func hasPodTemplateSpec(d *appsv1.Deployment) bool {
	_, ok := d.Annotations[naming.AnnotationPodTemplateSpecHash]
	return ok
}

// DiffDeploymentWithPodTemplate compares a Deployment that may carry a
// user podTemplateSpec. Everything DiffDeployment compares is compared on
// the merged pod, so a template that overrides a field hivekeeper sets
// (the proxy container's env, resources, security context, ...) is
// compared by value; what only the template sets is compared through the
// hash annotation, which also fires when a template that is gone left its
// hash; and the scheduling fields are compared by value, as ToolHive's
// operator does, so an edit of the live Deployment is put back.
func DiffDeploymentWithPodTemplate(want, have *appsv1.Deployment) []string {
	d := diffs(DiffDeployment(want, have))
	wh, wok := want.Annotations[naming.AnnotationPodTemplateSpecHash]
	hh, hok := have.Annotations[naming.AnnotationPodTemplateSpecHash]
	d.check(wok == hok && wh == hh, FieldPodTemplateSpecHash)
	if wok || hok {
		ws, hs := &want.Spec.Template.Spec, &have.Spec.Template.Spec
		d.check(semantic(ws.NodeSelector, hs.NodeSelector), FieldNodeSelector)
		d.check(semantic(ws.Tolerations, hs.Tolerations), FieldTolerations)
		d.check(semantic(ws.Affinity, hs.Affinity), FieldAffinity)
	}
	return d
}

// DeploymentPatchWithPodTemplate is DeploymentPatch for a Deployment that
// carries, or carried, a user podTemplateSpec. Any pod spec field the
// template can set, hivekeeper then owns: a field the live pod has and the
// desired one lacks (the template dropped its nodeSelector, or a key of
// the pod's securityContext) is sent as null, which a merge patch needs
// to remove it. A field the API server
// defaults comes back with its default, which is what the desired pod
// means by leaving it out. The hash annotation is removed with the
// template.
func DeploymentPatchWithPodTemplate(want, have *appsv1.Deployment, adopt bool) ([]byte, error) {
	return deploymentPatchWithPodTemplate(want, have, []string{naming.AnnotationPodTemplateSpecHash}, adopt)
}

// deploymentPatchWithPodTemplate is DeploymentPatchWithPodTemplate with the
// annotation keys hivekeeper owns and removes when unwanted.
func deploymentPatchWithPodTemplate(want, have *appsv1.Deployment, prune []string, adopt bool) ([]byte, error) {
	body, err := DeploymentPatch(want, have, prune, adopt)
	if err != nil || (!hasPodTemplateSpec(want) && !hasPodTemplateSpec(have)) {
		return body, err
	}
	wantSpec, err := toMap(want.Spec.Template.Spec)
	if err != nil {
		return nil, err
	}
	haveSpec, err := toMap(have.Spec.Template.Spec)
	if err != nil {
		return nil, err
	}
	nullMissing(wantSpec, haveSpec)
	patch, err := decodeMap(body)
	if err != nil {
		return nil, err
	}
	patch["spec"].(map[string]any)["template"].(map[string]any)["spec"] = wantSpec
	return json.Marshal(patch)
}

// nullMissing sets to null every key of have that want lacks, at every
// depth where both are objects: a merge patch merges nested objects key by
// key (a template's pod securityContext.supplementalGroups would outlive
// the template otherwise), while lists are replaced whole and need
// nothing.
func nullMissing(want, have map[string]any) {
	for k, hv := range have {
		wv, ok := want[k]
		if !ok {
			want[k] = nil
			continue
		}
		wm, wok := wv.(map[string]any)
		hm, hok := hv.(map[string]any)
		if wok && hok {
			nullMissing(wm, hm)
		}
	}
}

// toMap is v's JSON as a generic map.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeMap(b)
}

// decodeMap decodes a JSON object keeping numbers as written, so a
// re-encoded patch carries exactly the values it was built with.
func decodeMap(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	return m, dec.Decode(&m)
}

// WithPodTemplateSpec returns a copy of Deployment ops for a kind whose
// podTemplateSpec is merged into its Deployment's pod
// (DiffDeploymentWithPodTemplate, DeploymentPatchWithPodTemplate).
func WithPodTemplateSpec(ops framework.ChildOps[*appsv1.Deployment]) framework.ChildOps[*appsv1.Deployment] {
	ops.Diff = DiffDeploymentWithPodTemplate
	ops.PatchBody = DeploymentPatchWithPodTemplate
	return ops
}

// DiffDeploymentWithPodTemplateByVolumesHash is DiffDeploymentWithPodTemplate
// for a Deployment whose built volumes are also represented by
// AnnotationPodVolumesHash (the vMCP's, as ToolHive's operator builds it):
// the volume list and mounts are compared through the two hashes alone —
// the built ones through the volumes hash, the template's through the
// template hash — never by the live, API-server-defaulted values.
func DiffDeploymentWithPodTemplateByVolumesHash(want, have *appsv1.Deployment) []string {
	d := diffs(DiffDeploymentWithPodTemplate(withoutPodVolumes(want), withoutPodVolumes(have)))
	wh, wok := want.Annotations[naming.AnnotationPodVolumesHash]
	hh, hok := have.Annotations[naming.AnnotationPodVolumesHash]
	d.check(wok == hok && wh == hh, FieldPodVolumesHash)
	return d
}

// WithPodTemplateSpecAndVolumesHash returns a copy of Deployment ops for a
// kind whose podTemplateSpec is merged into its pod and whose built volumes
// are hashed: both annotations are compared and pruned when unwanted.
func WithPodTemplateSpecAndVolumesHash(ops framework.ChildOps[*appsv1.Deployment]) framework.ChildOps[*appsv1.Deployment] {
	ops.Diff = DiffDeploymentWithPodTemplateByVolumesHash
	ops.PatchBody = func(want, have *appsv1.Deployment, adopt bool) ([]byte, error) {
		return deploymentPatchWithPodTemplate(want, have, []string{naming.AnnotationPodTemplateSpecHash, naming.AnnotationPodVolumesHash}, adopt)
	}
	return ops
}
