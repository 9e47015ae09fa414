// Package embedding translates an EmbeddingServer into its children as
// ToolHive's operator builds them: a StatefulSet running Hugging Face's
// text embeddings server (the model and port as arguments, the token from
// a Secret, a volume claim template for the model cache) and the Service
// in front of it. Both carry ToolHive's labels and nothing of hivekeeper's
// own, so either operator finds the other's children as its own.
package embedding

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Defaults of ToolHive's operator for what the spec leaves unset (the
// schema defaults the rest).
const (
	defaultCacheSize    = "10Gi"
	defaultReplicas     = int32(1)
	portName            = "http"
	healthPath          = "/health"
	envModelID          = "MODEL_ID"
	envHFToken          = "HF_TOKEN"
	envHFHome           = "HF_HOME"
	argModelID          = "--model-id"
	argPort             = "--port"
	livenessDelay       = 60
	livenessPeriod      = 30
	livenessTimeout     = 10
	readinessDelay      = 30
	readinessPeriod     = 10
	readinessTimeout    = 5
	probeFailures       = 3
	defaultPullPolicy   = corev1.PullIfNotPresent
	defaultAccessMode   = corev1.ReadWriteOnce
	modelCacheClaimName = naming.EmbeddingModelCacheVolume
)

var gvk = thv1.SchemeGroupVersion.WithKind(thv1.KindEmbeddingServer)

// Output are the children of one EmbeddingServer.
type Output struct {
	StatefulSet *appsv1.StatefulSet
	Service     *corev1.Service
}

// Build computes the children of an EmbeddingServer. It is pure, and the
// comparators compare the live children with exactly these objects. A
// spec no child can be built from (a quantity that does not parse, a
// podTemplateSpec that is not a pod template or changes the selector
// labels, gives the pod access to the node or another workload's account)
// is an InvalidSpecError and builds nothing. templateSA is the live
// account the podTemplateSpec names as serviceAccountName, from the
// lister; nil when it names none or there is no such account.
func Build(e *thv1.EmbeddingServer, pullSecrets []corev1.LocalObjectReference, templateSA *corev1.ServiceAccount) (*Output, error) {
	// The template is merged into the pod: it may not reach the node, nor
	// name an account hivekeeper made for a workload (an EmbeddingServer
	// has none of its own).
	if err := wiring.CheckPodTemplate(e.Spec.PodTemplateSpec); err != nil {
		return nil, err
	}
	if err := wiring.CheckTemplateServiceAccount(templateSA, e.UID, ""); err != nil {
		return nil, err
	}
	labels := naming.EmbeddingServerLabels(e.Name)
	owner := naming.OwnerRef(e, gvk)
	ro := e.Spec.ResourceOverrides
	if ro == nil {
		ro = &thv1.EmbeddingResourceOverrides{}
	}
	c, err := container(e)
	if err != nil {
		return nil, err
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: naming.ObjectMeta(e.Name, e.Namespace, labels, nil, owner),
		Spec: appsv1.StatefulSetSpec{
			Replicas:    replicas(e),
			ServiceName: e.Name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{ImagePullSecrets: slices.Clone(pullSecrets), Containers: []corev1.Container{c}},
			},
		},
	}
	if o := ro.StatefulSet; o != nil {
		// The pod's labels, with podTemplateMetadataOverrides', are also
		// the StatefulSet's selector and labels: ToolHive's operator
		// builds all three from one label set, and the selector cannot
		// change in place, so a StatefulSet either operator made must be
		// the other's as it stands.
		if pt := o.PodTemplateMetadataOverrides; pt != nil {
			podLabels := naming.MergeOperatorWins(labels, pt.Labels)
			sts.Spec.Template.Labels, sts.Spec.Selector.MatchLabels = podLabels, podLabels
			sts.Spec.Template.Annotations = nonEmpty(maps.Clone(pt.Annotations))
		}
		sts.Labels = naming.MergeOperatorWins(sts.Spec.Template.Labels, o.Labels)
		sts.Annotations = nonEmpty(maps.Clone(o.Annotations))
	}
	if cacheEnabled(e) {
		claim, err := cacheClaim(e, labels, ro.PersistentVolumeClaim)
		if err != nil {
			return nil, err
		}
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim}
	}
	// The user's podTemplateSpec is merged last, into the pod built above,
	// as ToolHive's operator merges it (a strategic merge patch).
	if sts.Spec.Template, err = wiring.ApplyPodTemplate(sts.Spec.Template, e.Spec.PodTemplateSpec, sts.Spec.Selector.MatchLabels); err != nil {
		return nil, err
	}
	return &Output{StatefulSet: sts, Service: service(e, labels, owner, ro.Service)}, nil
}

// replicas is spec.replicas, 1 when unset; always written, so a count set
// by someone else is put back, as ToolHive's operator does.
func replicas(e *thv1.EmbeddingServer) *int32 {
	n := defaultReplicas
	if e.Spec.Replicas != nil {
		n = *e.Spec.Replicas
	}
	return &n
}

// container is the embedding server's container: the model and port as
// arguments before the spec's own, the model also as MODEL_ID, the
// Hugging Face token from its Secret, the spec's env, and HF_HOME on the
// cache volume when there is one.
func container(e *thv1.EmbeddingServer) (corev1.Container, error) {
	port := naming.EmbeddingServerPort(e)
	env := []corev1.EnvVar{{Name: envModelID, Value: e.Spec.Model}}
	if r := e.Spec.HFTokenSecretRef; r != nil {
		env = append(env, wiring.SecretEnv(envHFToken, r.Name, r.Key))
	}
	for _, v := range e.Spec.Env {
		if err := schema.ValidateEnvName(v.Name); err != nil {
			return corev1.Container{}, invalid("spec.env: %v", err)
		}
		env = append(env, corev1.EnvVar{Name: v.Name, Value: v.Value})
	}
	c := corev1.Container{
		Name:            naming.EmbeddingContainerName,
		Image:           e.Spec.Image,
		Args:            append([]string{argModelID, e.Spec.Model, argPort, strconv.Itoa(int(port))}, e.Spec.Args...),
		Env:             env,
		ImagePullPolicy: pullPolicy(e),
		Ports:           []corev1.ContainerPort{{Name: portName, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		LivenessProbe:   probe(port, livenessDelay, livenessPeriod, livenessTimeout),
		ReadinessProbe:  probe(port, readinessDelay, readinessPeriod, readinessTimeout),
	}
	if cacheEnabled(e) {
		c.VolumeMounts = []corev1.VolumeMount{{Name: naming.EmbeddingModelCacheVolume, MountPath: naming.EmbeddingModelCachePath}}
		c.Env = append(c.Env, corev1.EnvVar{Name: envHFHome, Value: naming.EmbeddingModelCachePath})
	}
	res, err := wiring.Resources(e.Spec.Resources)
	if err != nil {
		return corev1.Container{}, invalid("spec.%v", err)
	}
	c.Resources = res
	return c, nil
}

func pullPolicy(e *thv1.EmbeddingServer) corev1.PullPolicy {
	if e.Spec.ImagePullPolicy != "" {
		return corev1.PullPolicy(e.Spec.ImagePullPolicy)
	}
	return defaultPullPolicy
}

// probe is an HTTP probe of /health on the server's port, by number, with
// ToolHive's timings; success threshold and scheme are the API server's
// defaults, which the comparators apply.
func probe(port int32, delay, period, timeout int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: healthPath, Port: intstr.FromInt32(port)}},
		InitialDelaySeconds: delay,
		PeriodSeconds:       period,
		TimeoutSeconds:      timeout,
		FailureThreshold:    probeFailures,
	}
}

func cacheEnabled(e *thv1.EmbeddingServer) bool {
	return e.Spec.ModelCache != nil && e.Spec.ModelCache.Enabled
}

// cacheClaim is the model cache's volume claim template: the spec's size
// (10Gi by default), access mode (ReadWriteOnce) and storage class, with
// the children's labels and the persistentVolumeClaim overrides.
func cacheClaim(e *thv1.EmbeddingServer, labels map[string]string, o *thv1.ResourceMetadataOverrides) (corev1.PersistentVolumeClaim, error) {
	mc := e.Spec.ModelCache
	size := mc.Size
	if size == "" {
		size = defaultCacheSize
	}
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return corev1.PersistentVolumeClaim{}, invalid("spec.modelCache.size %q is not a valid quantity: %v", size, err)
	}
	mode := defaultAccessMode
	if mc.AccessMode != "" {
		mode = corev1.PersistentVolumeAccessMode(mc.AccessMode)
	}
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: modelCacheClaimName, Labels: maps.Clone(labels)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{mode},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
			StorageClassName: copyString(mc.StorageClassName),
		},
	}
	if o != nil {
		claim.Labels = naming.MergeOperatorWins(labels, o.Labels)
		claim.Annotations = nonEmpty(maps.Clone(o.Annotations))
	}
	return claim, nil
}

// service is the Service in front of the server: its name, the server's
// port by number, the children's labels as selector, and the service
// overrides.
func service(e *thv1.EmbeddingServer, labels map[string]string, owner metav1.OwnerReference, o *thv1.ResourceMetadataOverrides) *corev1.Service {
	port := naming.EmbeddingServerPort(e)
	svc := &corev1.Service{
		ObjectMeta: naming.ObjectMeta(e.Name, e.Namespace, labels, nil, owner),
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports: []corev1.ServicePort{{
				Name: portName, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	if o != nil {
		svc.Labels = naming.MergeOperatorWins(labels, o.Labels)
		svc.Annotations = nonEmpty(maps.Clone(o.Annotations))
	}
	return svc
}

func invalid(format string, a ...any) error {
	return &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: fmt.Sprintf(format, a...)}
}

// nonEmpty is m, or nil when it has no key: an empty map is no metadata.
func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func copyString(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
