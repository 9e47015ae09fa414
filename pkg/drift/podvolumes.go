package drift

import (
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// FieldPodVolumesHash is the drift field reported when the pod volumes hash
// annotation differs.
const FieldPodVolumesHash = "metadata.annotations[" + naming.AnnotationPodVolumesHash + "]"

// PodVolumesPrune is the prune list of a Deployment that carries the pod
// volumes hash: hivekeeper owns the key and removes it when unwanted.
var PodVolumesPrune = []string{naming.AnnotationPodVolumesHash}

// DiffDeploymentByVolumesHash compares a Deployment whose volumes are
// represented by AnnotationPodVolumesHash. Everything DiffDeployment
// compares is compared, except the volume list and the containers' mounts:
// those are compared through the hash alone, which also fires when the
// live object still carries a hash that is no longer wanted. It reads both
// objects without changing them.
func DiffDeploymentByVolumesHash(want, have *appsv1.Deployment) []string {
	d := diffs(DiffDeployment(withoutPodVolumes(want), withoutPodVolumes(have)))
	wh, wok := want.Annotations[naming.AnnotationPodVolumesHash]
	hh, hok := have.Annotations[naming.AnnotationPodVolumesHash]
	d.check(wok == hok && wh == hh, FieldPodVolumesHash)
	return d
}

// withoutPodVolumes is a shallow copy of d without volumes, container
// mounts and the hash annotation; the slices and maps it changes are
// copies, so d (possibly a cached object) is untouched.
func withoutPodVolumes(d *appsv1.Deployment) *appsv1.Deployment {
	c := *d
	if _, ok := c.Annotations[naming.AnnotationPodVolumesHash]; ok {
		c.Annotations = maps.Clone(c.Annotations)
		delete(c.Annotations, naming.AnnotationPodVolumesHash)
	}
	c.Spec.Template.Spec.Volumes = nil
	c.Spec.Template.Spec.Containers = slices.Clone(c.Spec.Template.Spec.Containers)
	for i := range c.Spec.Template.Spec.Containers {
		c.Spec.Template.Spec.Containers[i].VolumeMounts = nil
	}
	return &c
}
