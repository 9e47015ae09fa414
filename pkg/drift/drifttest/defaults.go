// Package drifttest models what the API server does to a child
// hivekeeper writes before a comparator sees it again: the JSON round
// trip, its defaults, and the marks other controllers leave. The parity
// tests feed every built child through it and expect no drift.
package drifttest

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// RoundTrip returns obj after a JSON encode and decode, as it comes back
// from the API server: empty slices become nil, quantities canonical.
func RoundTrip[T any](obj *T) *T {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("round trip: %v", err))
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("round trip: %v", err))
	}
	return &out
}

// DefaultDeployment applies the API server's defaults and the marks other
// controllers leave on a Deployment.
func DefaultDeployment(d *appsv1.Deployment) {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations["deployment.kubernetes.io/revision"] = "3"
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
	}}
	defaultPodTemplate(&d.Spec.Template)
}

// DefaultStatefulSet applies the API server's defaults and the marks other
// controllers leave on a StatefulSet.
func DefaultStatefulSet(s *appsv1.StatefulSet) {
	if s.Spec.Replicas == nil {
		s.Spec.Replicas = ptr.To[int32](1)
	}
	s.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}}
	s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
	for i := range s.Spec.VolumeClaimTemplates {
		c := &s.Spec.VolumeClaimTemplates[i]
		c.APIVersion, c.Kind = "v1", "PersistentVolumeClaim"
		c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		c.Status.Phase = corev1.ClaimPending
	}
	defaultPodTemplate(&s.Spec.Template)
}

// defaultPodTemplate applies the API server's pod defaults and the marks
// other controllers leave on a pod template.
func defaultPodTemplate(t *corev1.PodTemplateSpec) {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-20T10:00:00Z"
	p := &t.Spec
	p.RestartPolicy = corev1.RestartPolicyAlways
	p.DNSPolicy = corev1.DNSClusterFirst
	p.SchedulerName = corev1.DefaultSchedulerName
	p.TerminationGracePeriodSeconds = ptr.To[int64](30)
	if p.SecurityContext == nil {
		p.SecurityContext = &corev1.PodSecurityContext{}
	}
	for i := range p.Volumes {
		defaultVolume(&p.Volumes[i])
	}
	for i := range p.InitContainers {
		defaultContainer(&p.InitContainers[i])
	}
	for i := range p.Containers {
		defaultContainer(&p.Containers[i])
	}
}

// defaultContainer applies the API server's container defaults: the pull
// policy when none is set, the termination message, the ports' protocol,
// probe and fieldRef defaults.
func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullAlways
	}
	c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	for j := range c.Ports {
		if c.Ports[j].Protocol == "" {
			c.Ports[j].Protocol = corev1.ProtocolTCP
		}
	}
	c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	for _, pr := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
		if pr == nil {
			continue
		}
		// The API server's probe defaults.
		for _, f := range []struct {
			field *int32
			def   int32
		}{{&pr.SuccessThreshold, 1}, {&pr.TimeoutSeconds, 1}, {&pr.PeriodSeconds, 10}, {&pr.FailureThreshold, 3}} {
			if *f.field == 0 {
				*f.field = f.def
			}
		}
		if pr.HTTPGet != nil && pr.HTTPGet.Scheme == "" {
			pr.HTTPGet.Scheme = corev1.URISchemeHTTP
		}
	}
	for j := range c.Env {
		if fr := c.Env[j].ValueFrom; fr != nil && fr.FieldRef != nil && fr.FieldRef.APIVersion == "" {
			fr.FieldRef.APIVersion = "v1"
		}
	}
}

// defaultVolume applies the volume source defaults of the API server.
func defaultVolume(v *corev1.Volume) {
	mode := func(m **int32) {
		if *m == nil {
			*m = ptr.To[int32](420)
		}
	}
	fieldRefs := func(items []corev1.DownwardAPIVolumeFile) {
		for i := range items {
			if fr := items[i].FieldRef; fr != nil && fr.APIVersion == "" {
				fr.APIVersion = "v1"
			}
		}
	}
	switch {
	case v.ConfigMap != nil:
		mode(&v.ConfigMap.DefaultMode)
	case v.Secret != nil:
		mode(&v.Secret.DefaultMode)
	case v.DownwardAPI != nil:
		mode(&v.DownwardAPI.DefaultMode)
		fieldRefs(v.DownwardAPI.Items)
	case v.Projected != nil:
		mode(&v.Projected.DefaultMode)
		for i := range v.Projected.Sources {
			s := &v.Projected.Sources[i]
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
				s.ServiceAccountToken.ExpirationSeconds = ptr.To[int64](3600)
			}
			if s.DownwardAPI != nil {
				fieldRefs(s.DownwardAPI.Items)
			}
		}
	case v.HostPath != nil:
		if v.HostPath.Type == nil {
			v.HostPath.Type = ptr.To(corev1.HostPathUnset)
		}
	case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
		if v.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode == nil {
			v.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
	}
}

// DefaultService applies the API server's Service defaults (type,
// session affinity, port protocols and target ports, allocated IPs and
// node ports, affinity config) and a cloud provider's annotation. The
// builders leave type and sessionAffinity empty for some kinds
// (EmbeddingServer, MCPRegistry): a comparator that read them raw would
// patch those Services on every sync, so the live copy here must carry
// what a real server fills in.
func DefaultService(s *corev1.Service) {
	if s.Spec.Type == "" {
		s.Spec.Type = corev1.ServiceTypeClusterIP
	}
	if s.Spec.SessionAffinity == "" {
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	s.Spec.ClusterIP = "10.96.12.34"
	s.Spec.ClusterIPs = []string{"10.96.12.34"}
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	if s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		for i := range s.Spec.Ports {
			if s.Spec.Ports[i].NodePort == 0 {
				s.Spec.Ports[i].NodePort = 30000 + int32(i)
			}
		}
	}
	if s.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"] = "nlb"
}

// ForeignLabel and ForeignAnnotation are the marks AddForeignMarks leaves.
const (
	ForeignLabel      = "argocd.argoproj.io/instance"
	ForeignAnnotation = "example.com/injected"
)

// AddForeignMarks adds a label and an annotation of another writer (a
// GitOps tool, an injector) to obj, as they appear on live children of any
// kind: a comparator must treat neither as drift.
func AddForeignMarks(obj metav1.Object) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ForeignLabel] = "team-a-apps"
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[ForeignAnnotation] = "true"
	obj.SetAnnotations(ann)
}
