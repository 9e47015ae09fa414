package wiring

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PullSecretRefs turns Secret names (--default-image-pull-secrets) into
// references, trimmed, dropping empty names, as ToolHive's operator reads
// TOOLHIVE_DEFAULT_IMAGE_PULL_SECRETS. None gives nil.
func PullSecretRefs(names []string) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, corev1.LocalObjectReference{Name: n})
		}
	}
	return out
}

// MergePullSecrets is the pull secret list ToolHive's operator gives a
// workload's pods and accounts: the workload's own first, then the
// operator-wide defaults, each name once (the workload's entry wins). Both
// empty give nil, so a cluster without defaults writes what it wrote
// before they existed.
func MergePullSecrets(own, defaults []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	if len(defaults) == 0 {
		if len(own) == 0 {
			return nil
		}
		defaults = nil
	}
	out := make([]corev1.LocalObjectReference, 0, len(own)+len(defaults))
	seen := make(map[string]bool, len(own)+len(defaults))
	for _, l := range [][]corev1.LocalObjectReference{own, defaults} {
		for _, ref := range l {
			if !seen[ref.Name] {
				seen[ref.Name] = true
				out = append(out, ref)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
