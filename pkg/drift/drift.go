package drift

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// Field names reported by the comparators: the "field" label of
// hivekeeper_drift_detections_total. The set is fixed, so the label's
// cardinality is bounded.
const (
	FieldLabels              = "metadata.labels"
	FieldAnnotations         = "metadata.annotations"
	FieldOwner               = "metadata.ownerReferences"
	FieldData                = "data"
	FieldSubjects            = "subjects"
	FieldRoleRef             = "roleRef"
	FieldServiceType         = "spec.type"
	FieldServicePorts        = "spec.ports"
	FieldServiceSelector     = "spec.selector"
	FieldSessionAffinity     = "spec.sessionAffinity"
	FieldReplicas            = "spec.replicas"
	FieldSelector            = "spec.selector"
	FieldTemplateLabels      = "spec.template.metadata.labels"
	FieldTemplateAnnotations = "spec.template.metadata.annotations"
	FieldServiceAccountName  = "spec.template.spec.serviceAccountName"
	FieldPodSecurityContext  = "spec.template.spec.securityContext"
	FieldImagePullSecrets    = "spec.template.spec.imagePullSecrets"
	FieldVolumes             = "spec.template.spec.volumes"
	FieldContainerMissing    = "spec.template.spec.containers"
	FieldContainerImage      = "spec.template.spec.containers.image"
	FieldContainerCommand    = "spec.template.spec.containers.command"
	FieldContainerArgs       = "spec.template.spec.containers.args"
	FieldContainerPorts      = "spec.template.spec.containers.ports"
	FieldContainerEnv        = "spec.template.spec.containers.env"
	FieldContainerResources  = "spec.template.spec.containers.resources"
	FieldContainerMounts     = "spec.template.spec.containers.volumeMounts"
	FieldContainerStartup    = "spec.template.spec.containers.startupProbe"
	FieldContainerLiveness   = "spec.template.spec.containers.livenessProbe"
	FieldContainerReadiness  = "spec.template.spec.containers.readinessProbe"
	FieldContainerSecurity   = "spec.template.spec.containers.securityContext"
)

// semantic compares with equality.Semantic: nil and empty are equal and
// quantities compare by value ("1000m" equals "1").
func semantic(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }

// IsSubset reports whether every key of want is in have with the same value.
// Labels and annotations are compared this way so that keys other writers
// add (deployment.kubernetes.io/revision, kubectl.kubernetes.io/restartedAt,
// injectors, cloud load balancers) are neither drift nor removed.
func IsSubset(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// diffs collects the names of the comparisons that fired.
type diffs []string

func (d *diffs) check(equal bool, field string) {
	if !equal {
		*d = append(*d, field)
	}
}

// DiffMeta compares the metadata this controller sets.
func DiffMeta(wantLabels, haveLabels, wantAnn, haveAnn map[string]string) []string {
	var d diffs
	d.check(IsSubset(wantLabels, haveLabels), FieldLabels)
	d.check(IsSubset(wantAnn, haveAnn), FieldAnnotations)
	return d
}

// DiffConfigMap compares a ConfigMap: metadata as a subset, data exactly
// (hivekeeper owns every key of its ConfigMaps).
func DiffConfigMap(want, have *corev1.ConfigMap) []string {
	d := diffs(DiffMeta(want.Labels, have.Labels, want.Annotations, have.Annotations))
	d.check(semantic(want.Data, have.Data), FieldData)
	return d
}

// DiffServiceAccount compares a ServiceAccount's labels, and its image
// pull secrets when hivekeeper sets some: as ToolHive's operator, it
// leaves an account's pull secrets (and its secrets) to other controllers
// (OpenShift's, say) when it has none to set.
func DiffServiceAccount(want, have *corev1.ServiceAccount) []string {
	d := diffs(DiffMeta(want.Labels, have.Labels, want.Annotations, have.Annotations))
	d.check(len(want.ImagePullSecrets) == 0 || semantic(want.ImagePullSecrets, have.ImagePullSecrets), FieldImagePullSecrets)
	return d
}

// DiffRoleBinding compares a RoleBinding. A different roleRef cannot be
// patched (it is immutable); RoleBindingNeedsRecreate reports it.
func DiffRoleBinding(want, have *rbacv1.RoleBinding) []string {
	d := diffs(DiffMeta(want.Labels, have.Labels, want.Annotations, have.Annotations))
	d.check(semantic(want.Subjects, have.Subjects), FieldSubjects)
	d.check(want.RoleRef == have.RoleRef, FieldRoleRef)
	return d
}

// RoleBindingNeedsRecreate reports a drift only deletion can repair.
func RoleBindingNeedsRecreate(want, have *rbacv1.RoleBinding) bool {
	return want.RoleRef != have.RoleRef
}

// normPorts projects Service ports onto the fields hivekeeper sets, with the
// server's protocol default applied; nodePort is compared only when set.
func normServicePorts(ports []corev1.ServicePort, keepNodePort bool) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(ports))
	for i, p := range ports {
		out[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: p.TargetPort}
		if out[i].Protocol == "" {
			out[i].Protocol = corev1.ProtocolTCP
		}
		if keepNodePort {
			out[i].NodePort = p.NodePort
		}
	}
	return out
}

// DiffService compares the Service fields hivekeeper sets. clusterIP(s),
// ipFamilies, sessionAffinityConfig and allocated nodePorts are server
// defaults and are never compared.
func DiffService(want, have *corev1.Service) []string {
	d := diffs(DiffMeta(want.Labels, have.Labels, want.Annotations, have.Annotations))
	d.check(serviceType(want) == serviceType(have), FieldServiceType)
	d.check(semantic(normServicePorts(want.Spec.Ports, false), normServicePorts(have.Spec.Ports, false)), FieldServicePorts)
	d.check(semantic(want.Spec.Selector, have.Spec.Selector), FieldServiceSelector)
	d.check(sessionAffinity(want) == sessionAffinity(have), FieldSessionAffinity)
	return d
}

func serviceType(s *corev1.Service) corev1.ServiceType {
	if s.Spec.Type == "" {
		return corev1.ServiceTypeClusterIP
	}
	return s.Spec.Type
}

func sessionAffinity(s *corev1.Service) corev1.ServiceAffinity {
	if s.Spec.SessionAffinity == "" {
		return corev1.ServiceAffinityNone
	}
	return s.Spec.SessionAffinity
}

// DiffDeployment compares the Deployment fields hivekeeper sets. A nil
// desired replicas means hands off: the live count is not compared.
func DiffDeployment(want, have *appsv1.Deployment) []string {
	d := diffs(DiffMeta(want.Labels, have.Labels, want.Annotations, have.Annotations))
	if want.Spec.Replicas != nil {
		d.check(*want.Spec.Replicas == ptr.Deref(have.Spec.Replicas, 1), FieldReplicas)
	}
	d.check(semantic(want.Spec.Selector, have.Spec.Selector), FieldSelector)
	wt, ht := &want.Spec.Template, &have.Spec.Template
	d.check(IsSubset(wt.Labels, ht.Labels), FieldTemplateLabels)
	d.check(IsSubset(wt.Annotations, ht.Annotations), FieldTemplateAnnotations)
	d = append(d, DiffPodSpec(&wt.Spec, &ht.Spec)...)
	return d
}

// DeploymentNeedsRecreate reports a drift only deletion can repair: the
// selector is immutable.
func DeploymentNeedsRecreate(want, have *appsv1.Deployment) bool {
	return !semantic(want.Spec.Selector, have.Spec.Selector)
}

// DiffPodSpec compares the pod spec fields hivekeeper sets. Containers are
// matched by name; containers, volumes and fields others add are not drift.
func DiffPodSpec(want, have *corev1.PodSpec) []string {
	var d diffs
	d.check(want.ServiceAccountName == have.ServiceAccountName, FieldServiceAccountName)
	d.check(semantic(want.SecurityContext, have.SecurityContext) || want.SecurityContext == nil, FieldPodSecurityContext)
	d.check(semantic(want.ImagePullSecrets, have.ImagePullSecrets), FieldImagePullSecrets)
	d.check(semantic(NormalizeVolumes(want.Volumes), NormalizeVolumes(have.Volumes)), FieldVolumes)
	for i := range want.Containers {
		wc := &want.Containers[i]
		hc := findContainer(have.Containers, wc.Name)
		if hc == nil {
			d = append(d, FieldContainerMissing)
			continue
		}
		d.check(wc.Image == hc.Image, FieldContainerImage)
		d.check(semantic(wc.Command, hc.Command), FieldContainerCommand)
		d.check(semantic(wc.Args, hc.Args), FieldContainerArgs)
		d.check(semantic(normContainerPorts(wc.Ports), normContainerPorts(hc.Ports)), FieldContainerPorts)
		d.check(semantic(normEnv(wc.Env), normEnv(hc.Env)), FieldContainerEnv)
		d.check(semantic(wc.Resources, hc.Resources), FieldContainerResources)
		d.check(semantic(wc.VolumeMounts, hc.VolumeMounts), FieldContainerMounts)
		d.check(semantic(normProbe(wc.StartupProbe), normProbe(hc.StartupProbe)), FieldContainerStartup)
		d.check(semantic(normProbe(wc.LivenessProbe), normProbe(hc.LivenessProbe)), FieldContainerLiveness)
		d.check(semantic(normProbe(wc.ReadinessProbe), normProbe(hc.ReadinessProbe)), FieldContainerReadiness)
		d.check(semantic(wc.SecurityContext, hc.SecurityContext), FieldContainerSecurity)
	}
	return d
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func normContainerPorts(ports []corev1.ContainerPort) []corev1.ContainerPort {
	out := make([]corev1.ContainerPort, len(ports))
	for i, p := range ports {
		out[i] = p
		if out[i].Protocol == "" {
			out[i].Protocol = corev1.ProtocolTCP
		}
	}
	return out
}

// normEnv applies the server's fieldRef.apiVersion default ("v1"): a
// comparison that missed it once caused a perpetual update loop.
func normEnv(env []corev1.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, len(env))
	for i, e := range env {
		out[i] = e
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.APIVersion == "" {
			vf := e.ValueFrom.DeepCopy()
			vf.FieldRef.APIVersion = "v1"
			out[i].ValueFrom = vf
		}
	}
	return out
}

// normProbe applies the server's probe defaults.
func normProbe(p *corev1.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	n := p.DeepCopy()
	if n.TimeoutSeconds == 0 {
		n.TimeoutSeconds = 1
	}
	if n.PeriodSeconds == 0 {
		n.PeriodSeconds = 10
	}
	if n.SuccessThreshold == 0 {
		n.SuccessThreshold = 1
	}
	if n.FailureThreshold == 0 {
		n.FailureThreshold = 3
	}
	if n.HTTPGet != nil && n.HTTPGet.Scheme == "" {
		n.HTTPGet.Scheme = corev1.URISchemeHTTP
	}
	return n
}

// defaultVolumeMode is the API server's default for ConfigMap, Secret,
// projected and downward API volume file modes (0644).
const defaultVolumeMode int32 = 0o644

// NormalizeVolumes returns a copy of volumes with the API server's
// defaults applied (defaultMode 420 and the like), so a built and a live
// volume list compare equal.
func NormalizeVolumes(vols []corev1.Volume) []corev1.Volume {
	out := make([]corev1.Volume, len(vols))
	for i := range vols {
		v := vols[i].DeepCopy()
		switch {
		case v.ConfigMap != nil:
			if v.ConfigMap.DefaultMode == nil {
				v.ConfigMap.DefaultMode = ptr.To(defaultVolumeMode)
			}
		case v.Secret != nil:
			if v.Secret.DefaultMode == nil {
				v.Secret.DefaultMode = ptr.To(defaultVolumeMode)
			}
		case v.Projected != nil:
			if v.Projected.DefaultMode == nil {
				v.Projected.DefaultMode = ptr.To(defaultVolumeMode)
			}
			for j := range v.Projected.Sources {
				if sat := v.Projected.Sources[j].ServiceAccountToken; sat != nil && sat.ExpirationSeconds == nil {
					sat.ExpirationSeconds = ptr.To[int64](3600)
				}
				if da := v.Projected.Sources[j].DownwardAPI; da != nil {
					for k := range da.Items {
						if fr := da.Items[k].FieldRef; fr != nil && fr.APIVersion == "" {
							fr.APIVersion = "v1"
						}
					}
				}
			}
		case v.DownwardAPI != nil:
			if v.DownwardAPI.DefaultMode == nil {
				v.DownwardAPI.DefaultMode = ptr.To(defaultVolumeMode)
			}
			for j := range v.DownwardAPI.Items {
				if fr := v.DownwardAPI.Items[j].FieldRef; fr != nil && fr.APIVersion == "" {
					fr.APIVersion = "v1"
				}
			}
		case v.HostPath != nil:
			// A podTemplateSpec's host path volume.
			if v.HostPath.Type == nil {
				v.HostPath.Type = ptr.To(corev1.HostPathUnset)
			}
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			if v.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode == nil {
				v.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
			}
		}
		out[i] = *v
	}
	return out
}

// FieldRules is reported when a Role's rules differ.
const FieldRules = "rules"

// DiffRole compares a Role: metadata as a subset, rules exactly.
func DiffRole(want, have *rbacv1.Role) []string {
	d := diffs(DiffMeta(want.Labels, have.Labels, want.Annotations, have.Annotations))
	d.check(semantic(want.Rules, have.Rules), FieldRules)
	return d
}

// FieldServiceAccountPullSecrets is reported when a ServiceAccount's image
// pull secrets differ from the ones hivekeeper sets.
const FieldServiceAccountPullSecrets = "imagePullSecrets"

// DiffServiceAccountWithPullSecrets is DiffServiceAccount for an account
// hivekeeper gives image pull secrets (an MCPRegistry's, as ToolHive's
// operator does): the list is compared when hivekeeper sets one, and left
// to others when it sets none.
func DiffServiceAccountWithPullSecrets(want, have *corev1.ServiceAccount) []string {
	d := diffs(DiffServiceAccount(want, have))
	if len(want.ImagePullSecrets) > 0 {
		d.check(semantic(want.ImagePullSecrets, have.ImagePullSecrets), FieldServiceAccountPullSecrets)
	}
	return d
}

// DiffDeploymentWholePod compares a Deployment whose pod hivekeeper builds
// whole, a podTemplateSpec merged in (an MCPRegistry's):
// DiffDeploymentWithPodTemplate, with the init containers, scheduling
// fields and pull policies compared by value whether or not a template is
// there (see diffWholePodSpec).
func DiffDeploymentWholePod(want, have *appsv1.Deployment) []string {
	d := diffs(DiffDeploymentWithPodTemplate(want, have))
	for _, f := range diffWholePodSpec(&want.Spec.Template.Spec, &have.Spec.Template.Spec) {
		if !slices.Contains(d, f) {
			d = append(d, f)
		}
	}
	return d
}
