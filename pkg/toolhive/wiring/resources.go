package wiring

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// RunnerUID is the user and group the runner and vmcp run as.
const RunnerUID int64 = 1000

// ConfigMap builds a ConfigMap whose content checksum annotation is
// computed from the object being built, never from a cache read.
func ConfigMap(meta metav1.ObjectMeta, data map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: data}
	sum := schema.Checksum(cm.Data, cm.Labels, cm.Annotations)
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[schema.ChecksumAnnotation] = sum
	return cm
}

// ServiceAccount builds a ServiceAccount with the pull secrets its pods
// use, as ToolHive's operator copies the proxy's
// (resourceOverrides.proxyDeployment.imagePullSecrets) onto the accounts
// it writes.
func ServiceAccount(meta metav1.ObjectMeta, pullSecrets []corev1.LocalObjectReference) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: meta, ImagePullSecrets: slices.Clone(pullSecrets)}
}

// RoleBinding binds the ClusterRole clusterRole, in the binding's
// namespace only, to the ServiceAccount of the binding's own name. The
// controller creates no Roles: the runner permissions are ClusterRoles the
// chart pre-creates, which it may bind but does not hold.
func RoleBinding(meta metav1.ObjectMeta, clusterRole string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: meta.Name, Namespace: meta.Namespace}},
	}
}

// ServiceSpec describes a Service in front of a workload.
type ServiceSpec struct {
	Meta            metav1.ObjectMeta
	Type            corev1.ServiceType
	PortName        string
	Port            int32
	TargetPort      int32
	Selector        map[string]string
	SessionAffinity string
	// AuthServerTLS adds the embedded authorization server's TLS
	// listener port after the workload's (AuthServerTLSServicePort).
	AuthServerTLS bool
}

// Service builds a Service.
func Service(s ServiceSpec) *corev1.Service {
	svcType := s.Type
	if svcType == "" {
		svcType = corev1.ServiceTypeClusterIP
	}
	return &corev1.Service{
		ObjectMeta: s.Meta,
		Spec: corev1.ServiceSpec{
			Type:            svcType,
			Ports:           servicePorts(s),
			Selector:        s.Selector,
			SessionAffinity: SessionAffinity(s.SessionAffinity),
		},
	}
}

// servicePorts are a workload Service's ports: the workload's, then the
// embedded authorization server's TLS listener when it has one.
func servicePorts(s ServiceSpec) []corev1.ServicePort {
	ports := []corev1.ServicePort{{
		Name:       s.PortName,
		Protocol:   corev1.ProtocolTCP,
		Port:       s.Port,
		TargetPort: intstr.FromInt32(s.TargetPort),
	}}
	if s.AuthServerTLS {
		ports = append(ports, corev1.ServicePort{
			Name:        AuthServerTLSPortName,
			Protocol:    corev1.ProtocolTCP,
			AppProtocol: ptr.To("https"),
			Port:        AuthServerTLSPort,
			TargetPort:  intstr.FromInt32(AuthServerTLSPort),
		})
	}
	return ports
}

// ContainerPorts are a workload container's ports: the workload's own
// (name, port), then the embedded authorization server's TLS listener
// when authServerTLS is set.
func ContainerPorts(name string, port int32, authServerTLS bool) []corev1.ContainerPort {
	ports := []corev1.ContainerPort{{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
	if authServerTLS {
		ports = append(ports, corev1.ContainerPort{Name: AuthServerTLSPortName, ContainerPort: AuthServerTLSPort, Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// SessionAffinity maps the spec value (default ClientIP) to the Service's.
func SessionAffinity(v string) corev1.ServiceAffinity {
	if v == thv1.SessionAffinityNone {
		return corev1.ServiceAffinityNone
	}
	return corev1.ServiceAffinityClientIP
}

// Resources parses the spec's quantities. An invalid quantity is an error
// the caller turns into a condition, never a panic (resource.MustParse
// would panic).
func Resources(r thv1.ResourceRequirements) (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	parse := func(side string, l thv1.ResourceList) (corev1.ResourceList, error) {
		var list corev1.ResourceList
		for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: l.CPU, corev1.ResourceMemory: l.Memory} {
			if v == "" {
				continue
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return nil, fmt.Errorf("resources.%s.%s %q is not a valid quantity: %w", side, name, v, err)
			}
			if list == nil {
				list = corev1.ResourceList{}
			}
			list[name] = q
		}
		return list, nil
	}
	var err error
	if out.Limits, err = parse("limits", r.Limits); err != nil {
		return out, err
	}
	if out.Requests, err = parse("requests", r.Requests); err != nil {
		return out, err
	}
	return out, nil
}

// RestrictedContainerSecurityContext is the restricted security context of
// the proxy container: not privileged, non-root, no privilege escalation,
// read-only root filesystem, no capabilities, the runtime's default
// seccomp profile, every field as ToolHive's operator sets it.
func RestrictedContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(RunnerUID),
		RunAsGroup:               ptr.To(RunnerUID),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// RestrictedPodSecurityContext is the pod-level half of the restricted
// profile.
func RestrictedPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(RunnerUID),
		RunAsGroup:     ptr.To(RunnerUID),
		FSGroup:        ptr.To(RunnerUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// HTTPProbe is a probe on path at the named port. Every field the API
// server would default is set explicitly, so the live probe equals the
// built one.
func HTTPProbe(path, port string, initialDelay, period, timeout, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path:   path,
			Port:   intstr.FromString(port),
			Scheme: corev1.URISchemeHTTP,
		}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		TimeoutSeconds:      timeout,
		SuccessThreshold:    1,
		FailureThreshold:    failures,
	}
}

// runnerDefaultEnv are added to the proxy container only when the env does
// not already name them, so an override can replace any of them.
var runnerDefaultEnv = []corev1.EnvVar{
	{Name: "XDG_CONFIG_HOME", Value: "/tmp"},
	{Name: "HOME", Value: "/tmp"},
	{Name: "TOOLHIVE_RUNTIME", Value: "kubernetes"},
	{Name: "UNSTRUCTURED_LOGS", Value: "false"},
}

// OverrideEnv is spec.resourceOverrides.proxyDeployment.env as variables
// of the proxy container.
func OverrideEnv(overrides []thv1.NameValue) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, o := range overrides {
		env = append(env, corev1.EnvVar{Name: o.Name, Value: o.Value})
	}
	return env
}

// RequiredEnv appends what the runner needs to env, as ToolHive's operator
// does last: each of runnerDefaultEnv that env does not name, in that
// order, then each of usage (UsageMetrics.WorkloadEnv) that env does not
// name, then TOOLHIVE_SECRETS_PROVIDER=environment when a variable is a
// secret the runner resolves through that provider (TOOLHIVE_SECRET_*),
// even if env sets the provider already: the last value is the one the
// container gets.
func RequiredEnv(env []corev1.EnvVar, usage []corev1.EnvVar) []corev1.EnvVar {
	seen := map[string]bool{}
	secrets := false
	for _, e := range env {
		seen[e.Name] = true
		secrets = secrets || (strings.HasPrefix(e.Name, EnvSecretPrefix) && e.Name != EnvSecretsProvider)
	}
	out := slices.Clone(env)
	for _, d := range slices.Concat(runnerDefaultEnv, usage) {
		if !seen[d.Name] {
			out = append(out, d)
		}
	}
	if secrets {
		out = append(out, corev1.EnvVar{Name: EnvSecretsProvider, Value: SecretsProviderFromEnv})
	}
	return out
}

// SecretEnv is a variable of the proxy container holding one Secret key,
// the only way secret values reach a pod: never in a ConfigMap.
func SecretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

// CopyInt32 returns a copy of p (nil stays nil), so that a built object
// never shares a pointer with the cached custom resource it came from.
func CopyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
