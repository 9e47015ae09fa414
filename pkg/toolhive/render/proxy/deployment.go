package proxy

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Fixed names and values of the proxy runner pod.
const (
	proxyPortName      = "http"
	healthPath         = "/health"
	runConfigVolume    = "runconfig"
	runConfigMountPath = "/etc/runconfig"
)

// proxyDeploymentSpec is everything that varies between the proxy
// Deployments of an MCPServer and an MCPRemoteProxy.
type proxyDeploymentSpec struct {
	// Meta is the Deployment's metadata (labels and annotations already
	// merged with the overrides).
	Meta metav1.ObjectMeta
	// Selector is the workload labels.
	Selector map[string]string
	// Replicas is nil for hands off.
	Replicas *int32
	// TemplateLabels and TemplateAnnotations are the pod template's
	// metadata, already merged with the overrides (operator keys win).
	TemplateLabels      map[string]string
	TemplateAnnotations map[string]string
	RunnerImage         string
	// Args follow the runner's "run" subcommand.
	Args      []string
	ProxyPort int32
	// ReadinessDelay is the readiness probe's initial delay: ToolHive's
	// operator gives a remote proxy longer than an MCPServer.
	ReadinessDelay int32
	Resources      corev1.ResourceRequirements
	// Env is the proxy container's environment, whole and in order.
	Env                []corev1.EnvVar
	ServiceAccountName string
	RunConfigMapName   string
	ImagePullSecrets   []corev1.LocalObjectReference
	// ExtraVolumes and ExtraMounts (e.g. an OIDC CA bundle) are added
	// after the runconfig volume.
	ExtraVolumes []corev1.Volume
	ExtraMounts  []corev1.VolumeMount
	// AuthServerTLS adds the embedded authorization server's TLS
	// listener as a container port (wiring.ContainerPorts).
	AuthServerTLS bool
}

// The probes of the proxy container, as ToolHive's operator sets them: a
// startup probe gives the runner 90 seconds to come up before liveness
// counts.
const (
	readinessDelayMCPServer   int32 = 5
	readinessDelayRemoteProxy int32 = 15
)

// proxyDeployment builds the proxy runner Deployment. The root
// filesystem is read-only and nothing is writable: the runner, in
// ToolHive's Kubernetes runtime, writes no file.
func proxyDeployment(s proxyDeploymentSpec) *appsv1.Deployment {
	volumes := []corev1.Volume{
		{Name: runConfigVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.RunConfigMapName},
		}}},
	}
	volumes = append(volumes, s.ExtraVolumes...)
	mounts := []corev1.VolumeMount{
		{Name: runConfigVolume, MountPath: runConfigMountPath, ReadOnly: true},
	}
	mounts = append(mounts, s.ExtraMounts...)

	args := append([]string{"run"}, s.Args...)
	return &appsv1.Deployment{
		ObjectMeta: s.Meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: s.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: s.Selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: s.TemplateLabels, Annotations: s.TemplateAnnotations},
				Spec: corev1.PodSpec{
					ServiceAccountName: s.ServiceAccountName,
					SecurityContext:    wiring.RestrictedPodSecurityContext(),
					ImagePullSecrets:   s.ImagePullSecrets,
					Containers: []corev1.Container{{
						Name:            naming.ProxyContainerName,
						Image:           s.RunnerImage,
						Args:            args,
						Ports:           wiring.ContainerPorts(proxyPortName, s.ProxyPort, s.AuthServerTLS),
						Env:             s.Env,
						Resources:       s.Resources,
						VolumeMounts:    mounts,
						StartupProbe:    wiring.HTTPProbe(healthPath, proxyPortName, 0, 5, 3, 18),
						LivenessProbe:   wiring.HTTPProbe(healthPath, proxyPortName, 30, 10, 5, 3),
						ReadinessProbe:  wiring.HTTPProbe(healthPath, proxyPortName, s.ReadinessDelay, 5, 3, 3),
						SecurityContext: wiring.RestrictedContainerSecurityContext(),
					}},
					Volumes: volumes,
				},
			},
		},
	}
}
