package drift

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// The patch bodies below are JSON merge patches that carry only what
// hivekeeper owns. Maps merge key by key, so labels and annotations other
// writers added survive; lists hivekeeper owns (rules, ports, containers,
// volumes) are replaced whole, which is how a removed entry is removed.
// A key hivekeeper owns outright but no longer wants is sent as null.

// mapPatch returns want plus a null for each key of have in prune that want
// no longer has (or for every extra key of have when pruneAll).
func mapPatch(want, have map[string]string, prune []string, pruneAll bool) map[string]any {
	out := make(map[string]any, len(want))
	for k, v := range want {
		out[k] = v
	}
	for k := range have {
		if _, ok := want[k]; ok {
			continue
		}
		if pruneAll {
			out[k] = nil
			continue
		}
		for _, p := range prune {
			if p == k {
				out[k] = nil
			}
		}
	}
	return out
}

func metaPatch(want, have metav1.Object, pruneAnnotations []string, adopt bool) map[string]any {
	md := map[string]any{
		"labels":      mapPatch(want.GetLabels(), have.GetLabels(), nil, false),
		"annotations": mapPatch(want.GetAnnotations(), have.GetAnnotations(), pruneAnnotations, false),
	}
	if adopt {
		// Keep the owners already there (non-controller references of
		// others) and add ours.
		refs := append([]metav1.OwnerReference{}, have.GetOwnerReferences()...)
		refs = append(refs, want.GetOwnerReferences()...)
		md["ownerReferences"] = refs
	}
	return md
}

// ConfigMapPatch is the owned-field patch of a ConfigMap. hivekeeper owns
// every data key, so keys it no longer renders are removed.
func ConfigMapPatch(want, have *corev1.ConfigMap, adopt bool) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": metaPatch(want, have, nil, adopt),
		"data":     mapPatch(want.Data, have.Data, nil, true),
	})
}

// ServiceAccountPatch is the owned-field patch of a ServiceAccount: its
// image pull secrets only when hivekeeper sets some (DiffServiceAccount).
func ServiceAccountPatch(want, have *corev1.ServiceAccount, adopt bool) ([]byte, error) {
	body := map[string]any{"metadata": metaPatch(want, have, nil, adopt)}
	if len(want.ImagePullSecrets) > 0 {
		body["imagePullSecrets"] = want.ImagePullSecrets
	}
	return json.Marshal(body)
}

// RoleBindingPatch is the owned-field patch of a RoleBinding.
func RoleBindingPatch(want, have *rbacv1.RoleBinding, adopt bool) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": metaPatch(want, have, nil, adopt), "subjects": want.Subjects})
}

// ServicePatch is the owned-field patch of a Service. Allocated node ports
// are carried over by port name so that a patch never reallocates them.
func ServicePatch(want, have *corev1.Service, adopt bool) ([]byte, error) {
	ports := make([]corev1.ServicePort, len(want.Spec.Ports))
	for i, p := range want.Spec.Ports {
		ports[i] = p
		for _, hp := range have.Spec.Ports {
			if hp.Name == p.Name && p.NodePort == 0 && serviceType(want) != corev1.ServiceTypeClusterIP {
				ports[i].NodePort = hp.NodePort
			}
		}
	}
	spec := map[string]any{
		"type":            serviceType(want),
		"ports":           ports,
		"selector":        mapPatch(want.Spec.Selector, have.Spec.Selector, nil, true),
		"sessionAffinity": want.Spec.SessionAffinity,
	}
	if want.Spec.SessionAffinity == corev1.ServiceAffinityNone {
		// The server rejects an affinity config without ClientIP affinity.
		spec["sessionAffinityConfig"] = nil
	}
	return json.Marshal(map[string]any{"metadata": metaPatch(want, have, nil, adopt), "spec": spec})
}

// DeploymentPatch is the owned-field patch of a Deployment. prune names
// annotation keys hivekeeper owns (hash annotations) that must be removed,
// on the Deployment and on its pod template, once hivekeeper stops setting
// them. spec.replicas is sent only when hivekeeper owns the count.
func DeploymentPatch(want, have *appsv1.Deployment, prune []string, adopt bool) ([]byte, error) {
	spec := map[string]any{
		"template": map[string]any{
			"metadata": map[string]any{
				"labels":      mapPatch(want.Spec.Template.Labels, have.Spec.Template.Labels, nil, false),
				"annotations": mapPatch(want.Spec.Template.Annotations, have.Spec.Template.Annotations, prune, false),
			},
			"spec": want.Spec.Template.Spec,
		},
	}
	if want.Spec.Replicas != nil {
		spec["replicas"] = *want.Spec.Replicas
	}
	return json.Marshal(map[string]any{"metadata": metaPatch(want, have, prune, adopt), "spec": spec})
}

// RolePatch is the owned-field patch of a Role.
func RolePatch(want, have *rbacv1.Role, adopt bool) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": metaPatch(want, have, nil, adopt), "rules": want.Rules})
}

// ServiceAccountPatchWithPullSecrets is ServiceAccountPatch with the image
// pull secrets hivekeeper sets, when it sets any.
func ServiceAccountPatchWithPullSecrets(want, have *corev1.ServiceAccount, adopt bool) ([]byte, error) {
	body := map[string]any{"metadata": metaPatch(want, have, nil, adopt)}
	if len(want.ImagePullSecrets) > 0 {
		body["imagePullSecrets"] = want.ImagePullSecrets
	}
	return json.Marshal(body)
}

// DeploymentPatchWholePod is DeploymentPatch for a Deployment whose pod
// hivekeeper builds whole (DiffDeploymentWholePod): the pod spec keys the
// live pod has and the built one lacks are sent as null, so that an init
// container, volume or scheduling field the spec no longer asks for goes;
// the podTemplateSpec hash goes with the template.
func DeploymentPatchWholePod(want, have *appsv1.Deployment, adopt bool) ([]byte, error) {
	body, err := DeploymentPatch(want, have, []string{naming.AnnotationPodTemplateSpecHash}, adopt)
	if err != nil {
		return nil, err
	}
	podSpec, err := wholePodSpecPatch(&want.Spec.Template.Spec, &have.Spec.Template.Spec)
	if err != nil {
		return nil, err
	}
	patch, err := decodeMap(body)
	if err != nil {
		return nil, err
	}
	patch["spec"].(map[string]any)["template"].(map[string]any)["spec"] = podSpec
	return json.Marshal(patch)
}
