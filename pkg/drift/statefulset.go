package drift

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Fields of a StatefulSet, and of a pod's init containers, reported by the
// comparators below.
const (
	FieldServiceName          = "spec.serviceName"
	FieldVolumeClaimTemplates = "spec.volumeClaimTemplates"
	FieldInitContainers       = "spec.template.spec.initContainers"
	FieldImagePullPolicy      = "spec.template.spec.containers.imagePullPolicy"
)

// DiffStatefulSet compares the StatefulSet fields hivekeeper sets: the
// metadata as a subset, the replicas, the selector, the Service name and
// the volume claim templates (the last three immutable: see
// StatefulSetNeedsRecreate), and the pod template as DiffDeployment
// compares a Deployment's, with the init containers, the scheduling
// fields a podTemplateSpec can set and the pull policies the builder sets.
func DiffStatefulSet(want, have *appsv1.StatefulSet) []string {
	d := diffs(DiffMeta(want.Labels, have.Labels, want.Annotations, have.Annotations))
	if want.Spec.Replicas != nil {
		d.check(*want.Spec.Replicas == ptr.Deref(have.Spec.Replicas, 1), FieldReplicas)
	}
	d.check(semantic(want.Spec.Selector, have.Spec.Selector), FieldSelector)
	d.check(want.Spec.ServiceName == have.Spec.ServiceName, FieldServiceName)
	d.check(semantic(claimTemplates(want.Spec.VolumeClaimTemplates), claimTemplates(have.Spec.VolumeClaimTemplates)), FieldVolumeClaimTemplates)
	wt, ht := &want.Spec.Template, &have.Spec.Template
	d.check(IsSubset(wt.Labels, ht.Labels), FieldTemplateLabels)
	d.check(IsSubset(wt.Annotations, ht.Annotations), FieldTemplateAnnotations)
	return append(d, diffWholePodSpec(&wt.Spec, &ht.Spec)...)
}

// diffWholePodSpec is DiffPodSpec for a pod hivekeeper builds whole, a
// podTemplateSpec merged in without a hash annotation standing for it (as
// ToolHive's operator builds an EmbeddingServer's and an MCPRegistry's):
// besides what DiffPodSpec compares, the init containers, the scheduling
// fields and the pull policies set are compared by value. None of them is
// defaulted by the API server once set.
func diffWholePodSpec(want, have *corev1.PodSpec) []string {
	d := diffs(DiffPodSpec(want, have))
	d.check(semantic(want.NodeSelector, have.NodeSelector), FieldNodeSelector)
	d.check(semantic(want.Tolerations, have.Tolerations), FieldTolerations)
	d.check(semantic(want.Affinity, have.Affinity), FieldAffinity)
	for i := range want.Containers {
		wc := &want.Containers[i]
		if hc := findContainer(have.Containers, wc.Name); hc != nil && wc.ImagePullPolicy != "" {
			d.check(wc.ImagePullPolicy == hc.ImagePullPolicy, FieldImagePullPolicy)
		}
	}
	init := DiffPodSpec(&corev1.PodSpec{Containers: want.InitContainers}, &corev1.PodSpec{Containers: have.InitContainers})
	d.check(len(init) == 0 && len(want.InitContainers) == len(have.InitContainers), FieldInitContainers)
	return d
}

// claimTemplate is what hivekeeper sets of a volume claim template: the
// API server adds the volume mode, a status and sometimes the type.
type claimTemplate struct {
	Name         string
	Labels       map[string]string
	Annotations  map[string]string
	AccessModes  []corev1.PersistentVolumeAccessMode
	Requests     corev1.ResourceList
	StorageClass *string
}

func claimTemplates(pvcs []corev1.PersistentVolumeClaim) []claimTemplate {
	out := make([]claimTemplate, len(pvcs))
	for i, p := range pvcs {
		out[i] = claimTemplate{Name: p.Name, Labels: p.Labels, Annotations: p.Annotations, AccessModes: p.Spec.AccessModes,
			Requests: p.Spec.Resources.Requests, StorageClass: p.Spec.StorageClassName}
	}
	return out
}

// StatefulSetNeedsRecreate reports a drift only deletion can repair: the
// selector, the Service name and the volume claim templates cannot change
// in place. The claims the old StatefulSet made are kept (the StatefulSet
// controller never deletes them), so a new one finds its volumes again.
func StatefulSetNeedsRecreate(want, have *appsv1.StatefulSet) bool {
	return !semantic(want.Spec.Selector, have.Spec.Selector) || want.Spec.ServiceName != have.Spec.ServiceName ||
		!semantic(claimTemplates(want.Spec.VolumeClaimTemplates), claimTemplates(have.Spec.VolumeClaimTemplates))
}

// StatefulSetPatch is the owned-field patch of a StatefulSet whose pod
// hivekeeper builds whole: the metadata and template metadata merge key
// by key, the pod spec is the built one with every key the live pod has
// and the built one lacks sent as null (a field the API server defaults
// comes back with its default, which is what the built pod means).
func StatefulSetPatch(want, have *appsv1.StatefulSet, adopt bool) ([]byte, error) {
	podSpec, err := wholePodSpecPatch(&want.Spec.Template.Spec, &have.Spec.Template.Spec)
	if err != nil {
		return nil, err
	}
	spec := map[string]any{
		"template": map[string]any{
			"metadata": map[string]any{
				"labels":      mapPatch(want.Spec.Template.Labels, have.Spec.Template.Labels, nil, false),
				"annotations": mapPatch(want.Spec.Template.Annotations, have.Spec.Template.Annotations, nil, false),
			},
			"spec": podSpec,
		},
	}
	if want.Spec.Replicas != nil {
		spec["replicas"] = *want.Spec.Replicas
	}
	return json.Marshal(map[string]any{"metadata": metaPatch(want, have, nil, adopt), "spec": spec})
}

// wholePodSpecPatch is want as a merge patch over have: every key of have
// that want lacks, at every depth where both are objects, is null.
func wholePodSpecPatch(want, have *corev1.PodSpec) (map[string]any, error) {
	w, err := toMap(want)
	if err != nil {
		return nil, err
	}
	h, err := toMap(have)
	if err != nil {
		return nil, err
	}
	nullMissing(w, h)
	return w, nil
}
