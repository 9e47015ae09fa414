// Package registry translates an MCPRegistry into its children as
// ToolHive's operator builds them: the registry server's configuration in
// a ConfigMap (with ToolHive's content checksum), the registry API's
// ServiceAccount and the RoleBinding of its permissions, its Deployment
// (the configuration, the spec's volumes and, with pgpassSecretRef, a
// PostgreSQL password file prepared by an init container) and its
// Service. They carry ToolHive's labels; hivekeeper watches the
// Deployment and Service by them, the others with every ConfigMap,
// ServiceAccount and RoleBinding.
package registry

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The registry API's contract, ToolHive's values.
const (
	portName       = "http"
	healthPort     = 8081
	livenessPath   = "/health"
	readinessPath  = "/readiness"
	serveCommand   = "serve"
	cpuRequest     = "100m"
	memoryRequest  = "128Mi"
	cpuLimit       = "500m"
	memoryLimit    = "512Mi"
	livenessDelay  = 30
	livenessPeriod = 10
	readyDelay     = 5
	readyPeriod    = 5
)

var gvk = thv1.SchemeGroupVersion.WithKind(thv1.KindMCPRegistry)

// Input is what a build depends on besides the registry: the image and
// the ClusterRole its account is bound to, from the controller's flags.
type Input struct {
	Image       string
	ClusterRole string
	// PullSecrets are the operator-wide pull secrets
	// (--default-image-pull-secrets), after spec.imagePullSecrets.
	PullSecrets []corev1.LocalObjectReference
	// TemplateServiceAccount is the live account the podTemplateSpec
	// names as serviceAccountName, from the lister; nil when it names
	// none or there is no such account (see wiring.CheckServiceAccount).
	TemplateServiceAccount *corev1.ServiceAccount
}

// Output are the children of one MCPRegistry.
type Output struct {
	ConfigMap      *corev1.ConfigMap
	ServiceAccount *corev1.ServiceAccount
	RoleBinding    *rbacv1.RoleBinding
	Deployment     *appsv1.Deployment
	Service        *corev1.Service
}

// Build computes the children of an MCPRegistry. It is pure, and the
// comparators compare the live children with exactly these objects. A
// spec ToolHive's operator refuses (an invalid podTemplateSpec, reserved
// volume or init container names, colliding mount paths, an incomplete
// pgpassSecretRef) is an InvalidSpecError and builds nothing.
func Build(r *thv1.MCPRegistry, in Input) (*Output, error) {
	n, ns := r.Name, r.Namespace
	owner := naming.OwnerRef(r, gvk)
	meta := func(name string, labels, annotations map[string]string) metav1.ObjectMeta {
		return naming.ObjectMeta(name, ns, labels, annotations, owner)
	}
	pullSecrets := wiring.MergePullSecrets(r.Spec.ImagePullSecrets, in.PullSecrets)
	user, err := wiring.DecodePodTemplate(r.Spec.PodTemplateSpec)
	if err != nil {
		return nil, err
	}
	volumes, mounts, err := userVolumes(&r.Spec)
	if err != nil {
		return nil, err
	}
	// The template starts the pod, and spec.volumes are added to it: the
	// pod may reach the node through neither, nor run as another
	// workload's account (this registry's API account is its own).
	if user != nil {
		if err := wiring.CheckPodSecurity(wiring.PodTemplateField, &user.Spec); err != nil {
			return nil, err
		}
	}
	if err := wiring.CheckVolumes("spec.volumes", volumes); err != nil {
		return nil, err
	}
	if err := wiring.CheckTemplateServiceAccount(in.TemplateServiceAccount, r.UID, naming.RegistryAPIAccountName(n)); err != nil {
		return nil, err
	}
	if err := validate(&r.Spec, user, volumes, mounts); err != nil {
		return nil, err
	}
	templateHash, err := wiring.HashPodTemplateSpec(r.Spec.PodTemplateSpec)
	if err != nil {
		return nil, err
	}

	apiName, account := naming.RegistryAPIName(n), naming.RegistryAPIAccountName(n)
	apiLabels, accountLabels := naming.RegistryLabels(n, apiName), naming.RegistryLabels(n, account)
	out := &Output{
		// Unlabelled, as ToolHive's operator writes it: ConfigMaps are
		// watched whole (framework.Scope.KubeAll).
		ConfigMap: &corev1.ConfigMap{
			ObjectMeta: meta(naming.RegistryConfigMapName(n), nil,
				map[string]string{schema.ChecksumAnnotation: wiring.ConfigHash([]byte(r.Spec.ConfigYAML))}),
			Data: map[string]string{naming.RegistryConfigKey: r.Spec.ConfigYAML},
		},
		ServiceAccount: &corev1.ServiceAccount{ObjectMeta: meta(account, accountLabels, nil), ImagePullSecrets: pullSecrets},
		RoleBinding:    wiring.RoleBinding(meta(account, accountLabels, nil), in.ClusterRole),
	}

	selector := naming.RegistrySelectorLabels(n)
	pod := defaultPod(r, in.Image, slices.Clone(pullSecrets), apiLabels, volumes, mounts)
	if user != nil {
		if pod, err = mergePodTemplate(pod, *user); err != nil {
			return nil, err
		}
		for k, v := range selector {
			if pod.Labels[k] != v {
				return nil, wiring.PodTemplateInvalid("metadata.labels[%s] must stay %q: the Deployment selects its pods by it", k, v)
			}
		}
	}
	out.Deployment = &appsv1.Deployment{
		ObjectMeta: meta(apiName, apiLabels, wiring.SetPodTemplateSpecHash(nil, templateHash)),
		Spec: appsv1.DeploymentSpec{
			// Left out: the API server's default, 1, at creation; after
			// that the count is whoever scales it (ToolHive's operator
			// keeps it too, for autoscalers).
			Replicas: nil,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: pod,
		},
	}
	out.Service = &corev1.Service{
		ObjectMeta: meta(apiName, apiLabels, nil),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector,
			Ports: []corev1.ServicePort{{Name: portName, Port: naming.RegistryAPIPort,
				TargetPort: intstr.FromInt32(naming.RegistryAPIPort), Protocol: corev1.ProtocolTCP}},
		},
	}
	return out, nil
}

// defaultPod is the registry API's pod before the user's podTemplateSpec:
// the labels, the hash of the whole spec (any change rolls the pod), the
// account, the container reading the configuration, the spec's pull
// secrets, volumes and mounts, and the pgpass wiring.
func defaultPod(r *thv1.MCPRegistry, image string, pullSecrets []corev1.LocalObjectReference, labels map[string]string, volumes []corev1.Volume, mounts []corev1.VolumeMount) corev1.PodTemplateSpec {
	n := r.Name
	c := corev1.Container{
		Name:  naming.RegistryAPIContainerName,
		Image: image,
		Args:  []string{serveCommand, "--config=" + path.Join(naming.RegistryConfigMountPath, naming.RegistryConfigKey)},
		Ports: []corev1.ContainerPort{{ContainerPort: naming.RegistryAPIPort, Name: portName, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuRequest), corev1.ResourceMemory: resource.MustParse(memoryRequest)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit), corev1.ResourceMemory: resource.MustParse(memoryLimit)},
		},
		LivenessProbe:  probe(livenessPath, livenessDelay, livenessPeriod),
		ReadinessProbe: probe(readinessPath, readyDelay, readyPeriod),
		VolumeMounts:   []corev1.VolumeMount{{Name: naming.RegistryConfigVolume, MountPath: naming.RegistryConfigMountPath, ReadOnly: true}},
	}
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      labels,
			Annotations: map[string]string{naming.AnnotationRegistryConfigHash: wiring.ConfigHash(r.Spec)},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: naming.RegistryAPIAccountName(n),
			ImagePullSecrets:   pullSecrets,
			Volumes: []corev1.Volume{{Name: naming.RegistryConfigVolume, VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: naming.RegistryConfigMapName(n)}},
			}}},
		},
	}
	// A volume or mount whose name is taken is left out, as ToolHive's
	// operator leaves it out.
	for _, v := range volumes {
		if !slices.ContainsFunc(pod.Spec.Volumes, func(o corev1.Volume) bool { return o.Name == v.Name }) {
			pod.Spec.Volumes = append(pod.Spec.Volumes, v)
		}
	}
	for _, m := range mounts {
		if !slices.ContainsFunc(c.VolumeMounts, func(o corev1.VolumeMount) bool { return o.Name == m.Name }) {
			c.VolumeMounts = append(c.VolumeMounts, m)
		}
	}
	if ref := r.Spec.PGPassSecretRef; ref != nil && ref.Name != "" && ref.Key != "" {
		addPGPass(&pod.Spec, &c, ref.Name, ref.Key)
	}
	pod.Spec.Containers = []corev1.Container{c}
	return pod
}

// probe is an HTTP probe of the registry API's health listener, by port
// number, with ToolHive's timings; the rest is the API server's defaults.
func probe(path string, delay, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(healthPort)}},
		InitialDelaySeconds: delay,
		PeriodSeconds:       period,
	}
}

// The pgpass wiring: a Secret volume is mounted root-owned and its file
// mode cannot be changed in place, while libpq refuses a password file
// others can read. So an init container copies the Secret's key to an
// emptyDir with mode 0600, as the server's user, and the server reads it
// there through PGPASSFILE.
const (
	pgpassSecretVolume = "pgpass-secret"
	pgpassVolume       = "pgpass"
	pgpassInit         = "setup-pgpass"
	pgpassInitImage    = "cgr.dev/chainguard/busybox:latest"
	pgpassFile         = ".pgpass"
	pgpassSecretDir    = "/secret"
	pgpassDir          = "/pgpass"
	pgpassAppPath      = "/home/appuser/.pgpass"
	envPGPassFile      = "PGPASSFILE"
)

func addPGPass(pod *corev1.PodSpec, c *corev1.Container, secret, key string) {
	pod.Volumes = append(pod.Volumes,
		corev1.Volume{Name: pgpassSecretVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: pgpassFile}},
		}}},
		corev1.Volume{Name: pgpassVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name:  pgpassInit,
		Image: pgpassInitImage,
		Command: []string{"sh", "-c", fmt.Sprintf("cp %s/%s %s/%s && chmod 0600 %s/%s",
			pgpassSecretDir, pgpassFile, pgpassDir, pgpassFile, pgpassDir, pgpassFile)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: pgpassSecretVolume, MountPath: pgpassSecretDir, ReadOnly: true},
			{Name: pgpassVolume, MountPath: pgpassDir},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		},
	})
	if !slices.ContainsFunc(c.VolumeMounts, func(o corev1.VolumeMount) bool { return o.Name == pgpassVolume }) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: pgpassVolume, MountPath: pgpassAppPath, SubPath: pgpassFile, ReadOnly: true})
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: envPGPassFile, Value: pgpassAppPath})
}

// userVolumes decodes spec.volumes and spec.volumeMounts.
func userVolumes(s *thv1.MCPRegistrySpec) ([]corev1.Volume, []corev1.VolumeMount, error) {
	volumes := make([]corev1.Volume, len(s.Volumes))
	for i, raw := range s.Volumes {
		if err := json.Unmarshal(raw.Raw, &volumes[i]); err != nil {
			return nil, nil, validationFailed("invalid volumes: volumes[%d]: %v", i, err)
		}
	}
	mounts := make([]corev1.VolumeMount, len(s.VolumeMounts))
	for i, raw := range s.VolumeMounts {
		if err := json.Unmarshal(raw.Raw, &mounts[i]); err != nil {
			return nil, nil, validationFailed("invalid volumeMounts: volumeMounts[%d]: %v", i, err)
		}
	}
	return volumes, mounts, nil
}

// validate refuses what ToolHive's operator refuses before it builds: a
// volume (of the spec or the template) or, with pgpassSecretRef, an init
// container of the template taking a name the operator uses; two mounts of
// the registry API container (built, the spec's, the template's) at one
// path; a pgpassSecretRef without a name or key.
func validate(s *thv1.MCPRegistrySpec, user *corev1.PodTemplateSpec, volumes []corev1.Volume, mounts []corev1.VolumeMount) error {
	reserved := []string{naming.RegistryConfigVolume}
	if s.PGPassSecretRef != nil {
		reserved = append(reserved, pgpassSecretVolume, pgpassVolume)
	}
	names := make([]string, 0, len(volumes))
	for _, v := range volumes {
		names = append(names, v.Name)
	}
	var userMounts []corev1.VolumeMount
	if user != nil {
		for _, v := range user.Spec.Volumes {
			names = append(names, v.Name)
		}
		if s.PGPassSecretRef != nil && slices.ContainsFunc(user.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == pgpassInit }) {
			return validationFailed("init container name '%s' is reserved by the operator when pgpassSecretRef is set", pgpassInit)
		}
		if i := slices.IndexFunc(user.Spec.Containers, func(c corev1.Container) bool { return c.Name == naming.RegistryAPIContainerName }); i >= 0 {
			userMounts = user.Spec.Containers[i].VolumeMounts
		}
	}
	for _, name := range names {
		if slices.Contains(reserved, name) {
			return validationFailed("volume name '%s' is reserved by the operator", name)
		}
	}
	paths := []string{naming.RegistryConfigMountPath}
	if s.PGPassSecretRef != nil {
		paths = append(paths, pgpassAppPath)
	}
	for _, m := range slices.Concat(mounts, userMounts) {
		if slices.Contains(paths, m.MountPath) {
			return validationFailed("duplicate mount path '%s'", m.MountPath)
		}
		paths = append(paths, m.MountPath)
	}
	if ref := s.PGPassSecretRef; ref != nil && ref.Name == "" {
		return validationFailed("pgpassSecretRef.name is required")
	} else if ref != nil && ref.Key == "" {
		return validationFailed("pgpassSecretRef.key is required")
	}
	return nil
}

func validationFailed(format string, a ...any) error {
	return &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonValidationFailed,
		Message: "Spec validation failed: " + fmt.Sprintf(format, a...)}
}
