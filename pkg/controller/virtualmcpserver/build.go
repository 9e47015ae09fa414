package virtualmcpserver

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/runconfig"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Names, keys and values of the VirtualMCPServer contract.
const (
	// app is the app label of every child.
	app = "virtualmcpserver"
	// portName names the container and Service port.
	portName = "http"
	// configVolume is the volume of the configuration ConfigMap, mounted
	// read-only at configMountPath.
	configVolume    = "vmcp-config"
	configMountPath = "/etc/vmcp"
	// envOIDCClientSecret carries an inline config's client secret into
	// the vmcp container; the config names it in clientSecretEnv.
	envOIDCClientSecret = "VMCP_OIDC_CLIENT_SECRET"
	// envName and envNamespace tell vmcp which server it is and where it
	// runs, as ToolHive's operator does.
	envName      = "VMCP_NAME"
	envNamespace = "VMCP_NAMESPACE"
	healthPath   = "/health"
	listenHost   = "0.0.0.0"
)

// gvk is the owner kind of every child.
var gvk = thv1.SchemeGroupVersion.WithKind(thv1.KindVirtualMCPServer)

// serviceAccountName is the vMCP pod's account.
func serviceAccountName(v *thv1.VirtualMCPServer) string {
	if sa, ok := workload.CustomServiceAccount(v.Spec.ServiceAccount); ok {
		return sa
	}
	return workload.VMCPServiceAccountName(v.Name)
}

// serverURL is the in-cluster address clients use.
func serverURL(v *thv1.VirtualMCPServer) string {
	return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", workload.VMCPServiceName(v.Name), v.Namespace, workload.VMCPPort)
}

// backendURL is the MCP endpoint of an MCPServer's proxy, as the vMCP
// reaches it: the proxy Service with the path of what the proxy exposes,
// /mcp for streamable HTTP and /sse for SSE. vmcp connects to exactly this
// URL, so a bare host would miss the endpoint.
func backendURL(s *thv1.MCPServer) string {
	p := "/mcp"
	if workload.MCPServerProxyMode(s) == thv1.TransportSSE {
		p = "/sse"
	}
	return workload.MCPServerAddress(s) + p
}

// env is the vmcp container's environment: who it is, the OIDC client
// secret when there is one, and what config.yaml names by variable
// (backend auth secrets, telemetry).
func env(v *thv1.VirtualMCPServer, oidc workload.OIDCWiring, w configWiring) []corev1.EnvVar {
	return slices.Concat([]corev1.EnvVar{
		{Name: envName, Value: v.Name},
		{Name: envNamespace, Value: v.Namespace},
	}, oidc.Env, w.Env)
}

// args are the vMCP container's arguments. The vMCP listens on loopback
// unless told otherwise, which a Service cannot reach.
func args() []string {
	return []string{
		"serve",
		"--config=" + path.Join(configMountPath, workload.VMCPConfigKey),
		"--host=" + listenHost,
		"--port=" + strconv.Itoa(int(workload.VMCPPort)),
	}
}

// inputs are everything a build depends on: the server, the referenced
// MCPOIDCConfig (nil for anonymous access), the member MCPServers of its
// group (any order) and the vMCP image.
type inputs struct {
	Server   *thv1.VirtualMCPServer
	OIDC     *thv1.MCPOIDCConfig
	Backends []*thv1.MCPServer
	Image    string
	// ServiceAccount is the live account spec.serviceAccount names, from
	// the lister; nil when there is none (see workload.CheckServiceAccount).
	ServiceAccount *corev1.ServiceAccount
	// Refs are the other configs config.yaml is built from.
	Refs configRefs
}

// childSet are the children of one VirtualMCPServer. ServiceAccount is nil
// when the spec names its own.
type childSet struct {
	Config         *corev1.ConfigMap
	ServiceAccount *corev1.ServiceAccount
	Deployment     *appsv1.Deployment
	Service        *corev1.Service
	// Volumes are the pod's volumes as resolved once for this build; the
	// Deployment's pod spec and its hash annotation both come from them.
	Volumes workload.PodVolumes
	// Backends are the names of the aggregated MCPServers, sorted.
	Backends []string
}

// Build computes every child of a VirtualMCPServer. It is pure: the same
// inputs give the same objects, and the drift comparators compare against
// exactly these objects. A volume that cannot be resolved fails the whole
// build, so the live Deployment is never replaced by a pod with some of
// its volumes missing.
func build(in inputs) (*childSet, error) {
	v := in.Server
	n, ns := v.Name, v.Namespace
	labels := workload.Labels(app, n)
	owner := workload.OwnerRef(v, gvk)
	meta := func(name string, l, a map[string]string) metav1.ObjectMeta {
		return workload.ObjectMeta(name, ns, l, a, owner)
	}

	if err := workload.CheckServiceAccount(in.ServiceAccount, v.UID, workload.VMCPServiceAccountName(n)); err != nil {
		return nil, err
	}
	var oidc workload.OIDCWiring
	if v.Spec.IncomingAuth.Type == thv1.IncomingAuthOIDC {
		if v.Spec.IncomingAuth.OIDCConfigRef == nil {
			return nil, &workload.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec,
				Message: "spec.incomingAuth: type oidc requires oidcConfigRef"}
		}
		oidc = workload.OIDC(in.OIDC, v.Spec.IncomingAuth.OIDCConfigRef, workload.ServiceResourceURL(n, ns, workload.VMCPPort), envOIDCClientSecret)
	}
	backends := backendsOf(in.Backends)
	config, wiring, err := renderConfig(v, oidc, backends, in.Refs)
	if err != nil {
		return nil, err
	}
	cm := workload.ConfigMap(meta(workload.VMCPConfigMapName(n), labels, nil), map[string]string{workload.VMCPConfigKey: config})

	vols, err := podVolumes(v, cm.Name, oidc, wiring)
	if err != nil {
		return nil, err
	}

	d := &childSet{Config: cm, Volumes: vols}
	for _, b := range backends {
		d.Backends = append(d.Backends, b.Name)
	}
	// Naming the account hivekeeper creates anyway keeps it, rather than
	// deleting it as stale under the pod that uses it.
	if sa, custom := workload.CustomServiceAccount(v.Spec.ServiceAccount); !custom || sa == workload.VMCPServiceAccountName(n) {
		d.ServiceAccount = workload.ServiceAccount(meta(workload.VMCPServiceAccountName(n), labels, nil))
	}
	d.Deployment = &appsv1.Deployment{
		ObjectMeta: meta(n, labels, workload.SetPodVolumesHash(nil, vols.Hash)),
		Spec: appsv1.DeploymentSpec{
			Replicas: workload.CopyInt32(v.Spec.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{workload.AnnotationVMCPConfigChecksum: cm.Annotations[runconfig.ChecksumAnnotation]},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: serviceAccountName(v),
					SecurityContext:    workload.RestrictedPodSecurityContext(),
					Containers: []corev1.Container{{
						Name:  workload.VMCPContainerName,
						Image: in.Image,
						Args:  args(),
						Ports: []corev1.ContainerPort{{
							Name: portName, ContainerPort: workload.VMCPPort, Protocol: corev1.ProtocolTCP,
						}},
						Env:             env(v, oidc, wiring),
						VolumeMounts:    vols.Mounts,
						LivenessProbe:   workload.HTTPProbe(healthPath, portName, 30, 10),
						ReadinessProbe:  workload.HTTPProbe(healthPath, portName, 5, 5),
						SecurityContext: workload.RestrictedContainerSecurityContext(),
					}},
					Volumes: vols.Volumes,
				},
			},
		},
	}
	d.Service = workload.Service(workload.ServiceSpec{
		Meta:            meta(workload.VMCPServiceName(n), labels, nil),
		Type:            corev1.ServiceType(v.Spec.ServiceType),
		PortName:        portName,
		Port:            workload.VMCPPort,
		TargetPort:      workload.VMCPPort,
		Selector:        labels,
		SessionAffinity: v.Spec.SessionAffinity,
	})
	return d, nil
}

// podVolumes resolves the pod's volumes once: the configuration volume,
// the OIDC and telemetry CA bundles, and the user's podTemplateSpec volumes with the
// mounts of the vmcp container. All of them feed the hash annotation.
func podVolumes(v *thv1.VirtualMCPServer, configMap string, oidc workload.OIDCWiring, w configWiring) (workload.PodVolumes, error) {
	invalid := func(err error) error {
		return &workload.InvalidSpecError{Condition: thv1.ConditionPodTemplateValid, Reason: thv1.ReasonPodTemplateInvalid,
			Message: "spec.podTemplateSpec: " + err.Error()}
	}
	userVols, userMounts, err := userVolumes(v.Spec.PodTemplateSpec)
	if err != nil {
		return workload.PodVolumes{}, err
	}
	vols := []corev1.Volume{{Name: configVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
	}}}}
	mounts := []corev1.VolumeMount{{Name: configVolume, MountPath: configMountPath, ReadOnly: true}}
	vols = slices.Concat(vols, oidc.Volumes, w.Volumes, userVols)
	mounts = slices.Concat(mounts, oidc.Mounts, w.Mounts, userMounts)
	pv, err := workload.NewPodVolumes(vols, mounts)
	if err != nil {
		return workload.PodVolumes{}, invalid(err)
	}
	return pv, nil
}

// userVolumes decodes the volumes of a podTemplateSpec and the mounts of
// its vmcp container. Fields of other kinds are left for the pod template
// to carry later; only volumes are applied today.
func userVolumes(raw *runtime.RawExtension) ([]corev1.Volume, []corev1.VolumeMount, error) {
	tpl, err := workload.DecodePodTemplate(raw)
	if err != nil || tpl == nil {
		return nil, nil, err
	}
	var mounts []corev1.VolumeMount
	for _, c := range tpl.Spec.Containers {
		if c.Name == workload.VMCPContainerName {
			mounts = append(mounts, c.VolumeMounts...)
		}
	}
	return tpl.Spec.Volumes, mounts, nil
}

// backend is one aggregated MCPServer in config.yaml.
type backend struct {
	// Name is the MCPServer's name.
	Name string `json:"name"`
	// URL is the address of its proxy Service.
	URL string `json:"url"`
	// Transport is what its proxy exposes (streamable-http or sse).
	Transport string `json:"transport"`
}

// backendsOf maps the member MCPServers to backends, sorted by name so the
// rendered configuration does not depend on index order. Servers being
// deleted are left out: their proxy is going away.
func backendsOf(servers []*thv1.MCPServer) []backend {
	out := make([]backend, 0, len(servers))
	for _, s := range servers {
		if s.DeletionTimestamp != nil {
			continue
		}
		out = append(out, backend{Name: s.Name, URL: backendURL(s), Transport: workload.MCPServerProxyMode(s)})
	}
	slices.SortFunc(out, func(a, b backend) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
