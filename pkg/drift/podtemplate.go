package drift

import (
	"bytes"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"

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

// DeploymentPatchWithPodTemplateAndVolumesHash is
// DeploymentPatchWithPodTemplate for a Deployment that also carries, or
// carried, naming.AnnotationPodVolumesHash: both hash annotations are
// hivekeeper's and removed when unwanted.
func DeploymentPatchWithPodTemplateAndVolumesHash(want, have *appsv1.Deployment, adopt bool) ([]byte, error) {
	return deploymentPatchWithPodTemplate(want, have, []string{naming.AnnotationPodTemplateSpecHash, naming.AnnotationPodVolumesHash}, adopt)
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
