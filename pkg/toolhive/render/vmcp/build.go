package vmcp

import (
	"cmp"
	"path"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Names, keys and values of the VirtualMCPServer contract.
const (
	// portName names the container and Service port.
	portName   = "http"
	healthPath = "/health"
	listenHost = "0.0.0.0"
)

// vmcpGVK is the owner kind of every child.
var vmcpGVK = thv1.SchemeGroupVersion.WithKind(thv1.KindVirtualMCPServer)

// serviceAccountName is the vMCP pod's account.
func serviceAccountName(v *thv1.VirtualMCPServer) string {
	if sa, ok := wiring.CustomServiceAccount(v.Spec.ServiceAccount); ok {
		return sa
	}
	return naming.VMCPServiceAccountName(v.Name)
}

// backendURL is the MCP endpoint of an MCPServer's proxy, as the vMCP
// reaches it: the proxy Service with the path of what the proxy exposes,
// /mcp for streamable HTTP and /sse for SSE. vmcp connects to exactly this
// URL, so a bare host would miss the endpoint.
func backendURL(s *thv1.MCPServer) string {
	p := "/mcp"
	if naming.MCPServerProxyMode(s) == thv1.TransportSSE {
		p = "/sse"
	}
	return naming.MCPServerAddress(s) + p
}

// env is the vmcp container's environment: who it is, the OIDC client
// secret when there is one, what config.yaml names by variable (backend
// auth secrets, telemetry), and the Redis password of session storage.
// Secrets come only as secretKeyRefs.
func env(v *thv1.VirtualMCPServer, oidc wiring.OIDCWiring, w configWiring) []corev1.EnvVar {
	return slices.Concat([]corev1.EnvVar{
		{Name: naming.EnvVMCPName, Value: v.Name},
		{Name: naming.EnvVMCPNamespace, Value: v.Namespace},
	}, oidc.Env, w.Env, w.SessionEnv)
}

// args are the vMCP container's arguments. The vMCP listens on loopback
// unless told otherwise, which a Service cannot reach.
func args() []string {
	return []string{
		"serve",
		"--config=" + path.Join(naming.VMCPConfigMountPath, naming.VMCPConfigKey),
		"--host=" + listenHost,
		"--port=" + strconv.Itoa(int(naming.VMCPPort)),
	}
}

// Input is everything a build depends on besides the server: the
// configs its references resolve to (nil or empty for a reference it
// does not make), the members of its group, what the controller is
// configured with, and the live account the spec names.
type Input struct {
	// OIDC is spec.incomingAuth's MCPOIDCConfig, nil for anonymous access.
	OIDC      *thv1.MCPOIDCConfig
	Authz     *thv1.MCPAuthzConfig
	Telemetry *thv1.MCPTelemetryConfig
	// Tools are the MCPToolConfigs of spec.config.aggregation.tools, by name.
	Tools map[string]*thv1.MCPToolConfig
	// ExtAuth are the MCPExternalAuthConfigs of spec.outgoingAuth, by name.
	ExtAuth map[string]*thv1.MCPExternalAuthConfig
	// CompositeTools are the VirtualMCPCompositeToolDefinitions of
	// spec.config.compositeToolRefs, by name.
	CompositeTools map[string]*thv1.VirtualMCPCompositeToolDefinition
	// Members are the members of the group of every backend kind, kind by
	// kind (see memberBackend); their order within a kind does not matter.
	Members []any
	// MemberAuth are the MCPExternalAuthConfigs the members name in their
	// own externalAuthConfigRef, by name; a missing one is absent (its
	// backend is left out, see resolveBackendAuth).
	MemberAuth map[string]*thv1.MCPExternalAuthConfig
	Image      string
	// DefaultRedis is the Redis a vMCP without one of its own falls back
	// to (--default-redis-*); nil for none.
	DefaultRedis *wiring.DefaultRedis
	// ServiceAccount is the live account spec.serviceAccount names, from
	// the lister; nil when there is none (see wiring.CheckServiceAccount).
	ServiceAccount *corev1.ServiceAccount
	// EmbeddingService is the URL of the ready EmbeddingServer
	// spec.embeddingServerRef names, "" without a reference.
	EmbeddingService string
}

// Output are the children of one VirtualMCPServer, and what the build
// found out about its backends. ServiceAccount is nil when the spec names
// its own.
type Output struct {
	Config         *corev1.ConfigMap
	ServiceAccount *corev1.ServiceAccount
	Deployment     *appsv1.Deployment
	Service        *corev1.Service
	// Volumes are the pod's volumes as resolved once for this build; the
	// Deployment's pod spec and its hash annotation both come from them.
	Volumes wiring.PodVolumes
	// Backends are the names of the aggregated members, sorted.
	Backends []string
	// Dropped names the members left out because their outgoing auth
	// could not be built, sorted.
	Dropped []string
	// AuthConditions are the outgoing auth conditions to report.
	AuthConditions []AuthCondition
}

// Build computes every child of a VirtualMCPServer. It is pure: the same
// inputs give the same objects, and the drift comparators compare against
// exactly these objects. A volume that cannot be resolved fails the whole
// build, so the live Deployment is never replaced by a pod with some of
// its volumes missing.
func Build(v *thv1.VirtualMCPServer, in Input) (*Output, error) {
	n, ns := v.Name, v.Namespace
	labels := naming.Labels(naming.AppVirtualMCPServer, n)
	owner := naming.OwnerRef(v, vmcpGVK)
	meta := func(name string, l, a map[string]string) metav1.ObjectMeta {
		return naming.ObjectMeta(name, ns, l, a, owner)
	}

	if err := wiring.CheckServiceAccount(in.ServiceAccount, v.UID, naming.VMCPServiceAccountName(n)); err != nil {
		return nil, err
	}
	var oidc wiring.OIDCWiring
	if v.Spec.IncomingAuth.Type == thv1.IncomingAuthOIDC {
		if v.Spec.IncomingAuth.OIDCConfigRef == nil {
			return nil, &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec,
				Message: "spec.incomingAuth: type oidc requires oidcConfigRef"}
		}
		oidc = wiring.OIDC(in.OIDC, v.Spec.IncomingAuth.OIDCConfigRef, wiring.ServiceResourceURL(n, ns, naming.VMCPPort), naming.EnvVMCPOIDCClientSecret)
	}
	// The template is checked first, as ToolHive's operator does, so that
	// a template no pod can be built from is reported as such.
	templateHash, err := wiring.HashPodTemplateSpec(v.Spec.PodTemplateSpec)
	if err != nil {
		return nil, err
	}
	if _, err := wiring.DecodePodTemplate(v.Spec.PodTemplateSpec); err != nil {
		return nil, err
	}
	config, cw, err := renderConfig(v, oidc, backendsOf(in.Members), in)
	if err != nil {
		return nil, err
	}
	data := map[string]string{naming.VMCPConfigKey: config}
	if cw.AuthServerConfig != "" {
		data[naming.VMCPAuthServerConfigKey] = cw.AuthServerConfig
	}
	cm := wiring.ConfigMap(meta(naming.VMCPConfigMapName(n), labels, nil), data)

	vols, err := podVolumes(cm.Name, oidc, cw)
	if err != nil {
		return nil, err
	}

	d := &Output{Config: cm, Volumes: vols, Dropped: cw.Auth.Dropped, AuthConditions: cw.Auth.Conditions}
	for _, b := range cw.Auth.Served {
		d.Backends = append(d.Backends, b.Name)
	}
	// Naming the account hivekeeper creates anyway keeps it, rather than
	// deleting it as stale under the pod that uses it.
	if sa, custom := wiring.CustomServiceAccount(v.Spec.ServiceAccount); !custom || sa == naming.VMCPServiceAccountName(n) {
		d.ServiceAccount = wiring.ServiceAccount(meta(naming.VMCPServiceAccountName(n), labels, nil), nil)
	}
	d.Deployment = &appsv1.Deployment{
		ObjectMeta: meta(n, labels, wiring.SetPodVolumesHash(nil, vols.Hash)),
		Spec: appsv1.DeploymentSpec{
			Replicas: wiring.CopyInt32(v.Spec.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{naming.AnnotationVMCPConfigChecksum: cm.Annotations[schema.ChecksumAnnotation]},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: serviceAccountName(v),
					ImagePullSecrets:   slices.Clone(v.Spec.ImagePullSecrets),
					SecurityContext:    wiring.RestrictedPodSecurityContext(),
					Containers: []corev1.Container{{
						Name:  naming.VMCPContainerName,
						Image: in.Image,
						Args:  args(),
						Ports: []corev1.ContainerPort{{
							Name: portName, ContainerPort: naming.VMCPPort, Protocol: corev1.ProtocolTCP,
						}},
						Env:             env(v, oidc, cw),
						VolumeMounts:    vols.Mounts,
						LivenessProbe:   wiring.HTTPProbe(healthPath, portName, 30, 10, 3, 3),
						ReadinessProbe:  wiring.HTTPProbe(healthPath, portName, 5, 5, 3, 3),
						SecurityContext: wiring.RestrictedContainerSecurityContext(),
					}},
					Volumes: vols.Volumes,
				},
			},
		},
	}
	// The user's podTemplateSpec is merged last, into the pod built above,
	// as ToolHive's operator merges it; what only the template sets is
	// compared through its hash annotation.
	if d.Deployment.Spec.Template, err = wiring.ApplyPodTemplate(d.Deployment.Spec.Template, v.Spec.PodTemplateSpec, labels); err != nil {
		return nil, err
	}
	d.Deployment.Annotations = wiring.SetPodTemplateSpecHash(d.Deployment.Annotations, templateHash)
	if err := validateMergedVolumes(&d.Deployment.Spec.Template.Spec); err != nil {
		return nil, err
	}
	d.Service = wiring.Service(wiring.ServiceSpec{
		Meta:            meta(naming.VMCPServiceName(n), labels, nil),
		Type:            corev1.ServiceType(v.Spec.ServiceType),
		PortName:        portName,
		Port:            naming.VMCPPort,
		TargetPort:      naming.VMCPPort,
		Selector:        labels,
		SessionAffinity: v.Spec.SessionAffinity,
	})
	return d, nil
}

// podVolumes resolves the volumes hivekeeper builds once: the
// configuration volume and the OIDC and telemetry CA bundles. All of them
// feed the hash annotation, as in ToolHive's operator; the
// podTemplateSpec's volumes are merged into the pod afterwards and stand
// in its own hash.
func podVolumes(configMap string, oidc wiring.OIDCWiring, w configWiring) (wiring.PodVolumes, error) {
	vols := []corev1.Volume{{Name: naming.VMCPConfigVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
	}}}}
	mounts := []corev1.VolumeMount{{Name: naming.VMCPConfigVolume, MountPath: naming.VMCPConfigMountPath, ReadOnly: true}}
	pv, err := wiring.NewPodVolumes(slices.Concat(vols, oidc.Volumes, w.Volumes), slices.Concat(mounts, oidc.Mounts, w.Mounts))
	if err != nil {
		return wiring.PodVolumes{}, wiring.PodTemplateInvalid("%v", err)
	}
	return pv, nil
}

// validateMergedVolumes checks the merged pod's volumes and the vmcp
// container's mounts, so that a template volume without a source, one
// merged into a built volume, or a mount of no volume is a condition
// rather than a Deployment the API server refuses on every retry.
func validateMergedVolumes(pod *corev1.PodSpec) error {
	var mounts []corev1.VolumeMount
	for _, c := range pod.Containers {
		if c.Name == naming.VMCPContainerName {
			mounts = c.VolumeMounts
		}
	}
	if err := wiring.ValidatePodVolumes(pod.Volumes, mounts); err != nil {
		return wiring.PodTemplateInvalid("%v", err)
	}
	return nil
}

// memberBackend is the seam between the member kinds and config.yaml: how
// one member of the group, of any backend kind, becomes its backend entry,
// and false for a member that is not one (being deleted: its proxy is going
// away; an entry whose checks failed). vmcp connects to exactly the URL
// given, so a proxy's carries the path of its transport. A new backend
// kind is one case here and one line in the controller's backendKinds.
func memberBackend(obj any) (member, bool) {
	switch m := obj.(type) {
	case *thv1.MCPServer:
		return member{VMCPBackend: schema.VMCPBackend{Name: m.Name, URL: backendURL(m), Transport: naming.MCPServerProxyMode(m)},
			AuthConfig: authRefName(m.Spec.ExternalAuthConfigRef)}, m.DeletionTimestamp == nil
	case *thv1.MCPRemoteProxy:
		// The proxy's status.url, which ToolHive's vmcp discovery reads.
		return member{VMCPBackend: schema.VMCPBackend{Name: m.Name, URL: naming.RemoteProxyURL(m), Transport: naming.RemoteProxyTransport(m)},
			AuthConfig: authRefName(m.Spec.ExternalAuthConfigRef)}, m.DeletionTimestamp == nil
	case *thv1.MCPServerEntry:
		return entryBackend(m)
	}
	return member{}, false
}

// backendsOf maps the group's members to backend candidates, sorted by
// name so the rendered configuration does not depend on index order.
// Members are given kind by kind (MCPServers first); a name already taken
// by a member of an earlier kind is left out, since vmcp identifies
// backends by name.
func backendsOf(members []any) []member {
	out := make([]member, 0, len(members))
	seen := map[string]bool{}
	for _, m := range members {
		b, ok := memberBackend(m)
		if !ok || seen[b.Name] {
			continue
		}
		seen[b.Name] = true
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b member) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
