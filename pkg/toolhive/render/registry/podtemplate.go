package registry

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// mergePodTemplate merges the user's podTemplateSpec into the built pod as
// ToolHive's operator merges an MCPRegistry's (not the strategic merge of
// its other kinds): the user's template is the start and keeps every field
// it sets; what the built pod has fills only what the user left unset.
//
//   - labels and annotations: the built keys, the user's winning;
//   - service account: the built one unless the user names one;
//   - containers and init containers, by name: a user container of a
//     built name is completed field by field (mergeContainer), user
//     containers come first, built ones the user does not name after;
//   - volumes: the user's, then the built ones of other names;
//   - image pull secrets: the user's list whole if it has one.
func mergePodTemplate(built, user corev1.PodTemplateSpec) (corev1.PodTemplateSpec, error) {
	out := *user.DeepCopy()
	out.Labels = mergeMaps(built.Labels, out.Labels)
	out.Annotations = mergeMaps(built.Annotations, out.Annotations)
	if out.Spec.ServiceAccountName == "" {
		out.Spec.ServiceAccountName = built.Spec.ServiceAccountName
	}
	out.Spec.Containers = mergeContainers(built.Spec.Containers, out.Spec.Containers)
	out.Spec.InitContainers = mergeContainers(built.Spec.InitContainers, out.Spec.InitContainers)
	out.Spec.Volumes = appendUnnamed(out.Spec.Volumes, built.Spec.Volumes, func(v corev1.Volume) string { return v.Name })
	if len(out.Spec.ImagePullSecrets) == 0 {
		out.Spec.ImagePullSecrets = built.Spec.ImagePullSecrets
	}
	return out, nil
}

// mergeMaps is built overlaid by user; nil when both are empty.
func mergeMaps(built, user map[string]string) map[string]string {
	if len(built) == 0 && len(user) == 0 {
		return nil
	}
	out := maps.Clone(built)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, user)
	return out
}

func mergeContainers(built, user []corev1.Container) []corev1.Container {
	if len(user) == 0 {
		return built
	}
	out := make([]corev1.Container, 0, len(user)+len(built))
	for _, u := range user {
		if i := slices.IndexFunc(built, func(b corev1.Container) bool { return b.Name == u.Name }); i >= 0 {
			u = mergeContainer(built[i], u)
		}
		out = append(out, u)
	}
	return appendUnnamed(out, built, func(c corev1.Container) string { return c.Name })
}

// mergeContainer completes the user's container with the built one's
// values where the user set none: image, command, arguments, working
// directory, resources, probes, security context and pull policy; and
// appends the built ports (unless their name or number is taken), env
// variables and mounts (unless their name is taken).
func mergeContainer(built, user corev1.Container) corev1.Container {
	out := user
	fill := func(unset bool, set func()) {
		if unset {
			set()
		}
	}
	fill(out.Image == "", func() { out.Image = built.Image })
	fill(len(out.Command) == 0, func() { out.Command = built.Command })
	fill(len(out.Args) == 0, func() { out.Args = built.Args })
	fill(out.WorkingDir == "", func() { out.WorkingDir = built.WorkingDir })
	fill(len(out.Resources.Requests) == 0 && len(out.Resources.Limits) == 0, func() { out.Resources = built.Resources })
	fill(out.LivenessProbe == nil, func() { out.LivenessProbe = built.LivenessProbe })
	fill(out.ReadinessProbe == nil, func() { out.ReadinessProbe = built.ReadinessProbe })
	fill(out.StartupProbe == nil, func() { out.StartupProbe = built.StartupProbe })
	fill(out.SecurityContext == nil, func() { out.SecurityContext = built.SecurityContext })
	fill(out.ImagePullPolicy == "", func() { out.ImagePullPolicy = built.ImagePullPolicy })
	for _, p := range built.Ports {
		taken := slices.ContainsFunc(out.Ports, func(u corev1.ContainerPort) bool {
			return (p.Name != "" && u.Name == p.Name) || u.ContainerPort == p.ContainerPort
		})
		if !taken {
			out.Ports = append(out.Ports, p)
		}
	}
	out.Env = appendUnnamed(out.Env, built.Env, func(e corev1.EnvVar) string { return e.Name })
	out.VolumeMounts = appendUnnamed(out.VolumeMounts, built.VolumeMounts, func(m corev1.VolumeMount) string { return m.Name })
	return out
}

// appendUnnamed appends to user the entries of built whose name user does
// not have. The user's list is copied, never appended to in place.
func appendUnnamed[T any](user, built []T, name func(T) string) []T {
	if len(built) == 0 {
		return user
	}
	out := slices.Clone(user)
	for _, b := range built {
		if !slices.ContainsFunc(user, func(u T) bool { return name(u) == name(b) }) {
			out = append(out, b)
		}
	}
	return out
}
