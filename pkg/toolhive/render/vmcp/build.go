package vmcp

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"path"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Names, keys and values of the VirtualMCPServer contract, ToolHive's.
const (
	// portName names the container and Service port.
	portName   = "http"
	listenHost = "0.0.0.0"
	// The probes: liveness on /health, readiness on /readyz, which vmcp
	// answers only once its backends are known (in discovered mode, once
	// its caches of the group's members are synced).
	livenessPath  = "/health"
	readinessPath = "/readyz"
	// logLevelDebug in spec.config.operational.logLevel adds --debug.
	logLevelDebug = "debug"
	// terminationGrace lets in-flight requests finish.
	terminationGrace int64 = 30
)

// The vmcp container's default resources, ToolHive's; a podTemplateSpec
// may override them.
var vmcpResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
}

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

// env is the vmcp container's environment in ToolHive's order: who it is,
// the OIDC client secret, the outgoing auth secrets, the entries'
// headers, the session HMAC secret, the Redis password, telemetry's and
// the embedded authorization server's variables, then the variables
// every ToolHive container gets (wiring.RequiredEnv). Secrets come only as
// secretKeyRefs.
func env(v *thv1.VirtualMCPServer, oidc wiring.OIDCWiring, w configWiring, usage []corev1.EnvVar) []corev1.EnvVar {
	return wiring.RequiredEnv(slices.Concat([]corev1.EnvVar{
		{Name: naming.EnvVMCPName, Value: v.Name},
		{Name: naming.EnvVMCPNamespace, Value: v.Namespace},
	}, oidc.Env, w.AuthEnv, w.HeaderEnv,
		[]corev1.EnvVar{wiring.SecretEnv(naming.EnvVMCPSessionHMACSecret, naming.VMCPHMACSecretName(v.Name), naming.VMCPHMACSecretKey)},
		w.Session.Env, w.TelemetryEnv, w.AuthServer.Env), usage)
}

// args are the vMCP container's arguments. The vMCP listens on loopback
// unless told otherwise, which a Service cannot reach; it logs at debug
// level only when told at start.
func args(v *thv1.VirtualMCPServer) []string {
	out := []string{
		"serve",
		"--config=" + path.Join(naming.VMCPConfigMountPath, naming.VMCPConfigKey),
		"--host=" + listenHost,
		"--port=" + strconv.Itoa(int(naming.VMCPPort)),
	}
	if c := v.Spec.Config; c != nil && c.Operational != nil && c.Operational.LogLevel == logLevelDebug {
		out = append(out, "--debug")
	}
	return out
}

// probe is a probe of the vmcp container as ToolHive's operator builds
// it: every field the API server would default is set, so the live probe
// equals the built one.
func probe(path string, initialDelay, period, timeout int32) *corev1.Probe {
	return wiring.HTTPProbe(path, portName, initialDelay, period, timeout, 3)
}

// Input is everything a build depends on besides the server: the
// configs its references resolve to (nil or empty for a reference it
// does not make), the members of its group, what the controller is
// configured with, and the live account the spec names.
type Input struct {
	// OIDC is spec.incomingAuth's MCPOIDCConfig, nil for anonymous access.
	OIDC  *thv1.MCPOIDCConfig
	Authz *thv1.MCPAuthzConfig
	// AuthzFile is the authorization file of
	// spec.incomingAuth.authzConfig of type configMap, read from that
	// ConfigMap.
	AuthzFile *wiring.AuthzFile
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
	// ClusterRoles are the ClusterRoles the vMCP's RoleBinding binds, by
	// outgoing auth source.
	ClusterRoles ClusterRoles
	// DefaultRedis is the Redis a vMCP without one of its own falls back
	// to (--default-redis-*); nil for none.
	DefaultRedis *wiring.DefaultRedis
	// PullSecrets are the operator-wide pull secrets
	// (--default-image-pull-secrets), after spec.imagePullSecrets.
	PullSecrets []corev1.LocalObjectReference
	// ServiceAccount is the live account spec.serviceAccount names, from
	// the lister; nil when there is none (see wiring.CheckServiceAccount).
	ServiceAccount *corev1.ServiceAccount
	// TemplateServiceAccount is the live account the podTemplateSpec
	// names as serviceAccountName, checked like ServiceAccount.
	TemplateServiceAccount *corev1.ServiceAccount
	// AuthServerCAChecksum is the checksum of the content of the CA
	// bundles spec.authServerConfig names (wiring.AuthServerCAChecksum),
	// read from their ConfigMaps; "" for none.
	AuthServerCAChecksum string
	// EmbeddingService is the URL of the ready EmbeddingServer
	// spec.embeddingServerRef names, "" without a reference.
	EmbeddingService string
	// Release is the ToolHive release whose output is written.
	Release release.Release
	// UsageMetrics are ToolHive's operator's usage-metrics settings, which
	// the release may pass to the vmcp container.
	UsageMetrics wiring.UsageMetrics
}

// ClusterRoles name the pre-created ClusterRoles a vMCP's account is
// bound to in its namespace: what vmcp calls to discover the group's
// members and report its status, or only the latter.
type ClusterRoles struct {
	Discovered, Inline string
}

// Output are the children of one VirtualMCPServer, and what the build
// found out about its backends. ServiceAccount and RoleBinding are nil
// when the spec names its own account.
type Output struct {
	Config         *corev1.ConfigMap
	ServiceAccount *corev1.ServiceAccount
	RoleBinding    *rbacv1.RoleBinding
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

// Build computes every child of a VirtualMCPServer as ToolHive's operator
// builds it. It is pure: the same inputs give the same objects, and the
// drift comparators compare against exactly these objects. A volume that
// cannot be resolved fails the whole build, so the live Deployment is
// never replaced by a pod with some of its volumes missing.
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
	// A template may give the pod neither access to the node nor another
	// workload's account; this vMCP's own account is the one it may name.
	if err := wiring.CheckPodTemplate(v.Spec.PodTemplateSpec); err != nil {
		return nil, err
	}
	if err := wiring.CheckTemplateServiceAccount(in.TemplateServiceAccount, v.UID, naming.VMCPServiceAccountName(n)); err != nil {
		return nil, err
	}
	config, cw, err := renderConfig(v, oidc, membersOf(in.Members), in)
	if err != nil {
		return nil, err
	}
	// The release decides whether the authorization server's TLS
	// listener is a port of the vMCP's container and Service.
	authServerTLSPort := in.Release.AuthServerTLSPort && cw.AuthServer.TLSListener()
	data := map[string]string{naming.VMCPConfigKey: config}
	if cw.AuthServerConfig != "" {
		data[naming.VMCPAuthServerConfigKey] = cw.AuthServerConfig
	}
	cm := wiring.ConfigMap(meta(naming.VMCPConfigMapName(n), naming.VMCPConfigLabels(n), nil), data)

	vols, err := podVolumes(cm.Name, oidc, cw)
	if err != nil {
		return nil, err
	}

	d := &Output{Config: cm, Volumes: vols, Dropped: cw.Auth.Dropped, AuthConditions: cw.Auth.Conditions}
	for _, b := range cw.Auth.Served {
		d.Backends = append(d.Backends, b.Name)
	}
	pullSecrets := wiring.MergePullSecrets(v.Spec.ImagePullSecrets, in.PullSecrets)
	// Naming the account hivekeeper creates anyway keeps it, rather than
	// deleting it as stale under the pod that uses it.
	if sa, custom := wiring.CustomServiceAccount(v.Spec.ServiceAccount); !custom || sa == naming.VMCPServiceAccountName(n) {
		// Unlabelled, as ToolHive's operator writes them.
		d.ServiceAccount = wiring.ServiceAccount(meta(naming.VMCPServiceAccountName(n), nil, nil), pullSecrets)
		role := in.ClusterRoles.Discovered
		if !Discovers(v) {
			role = in.ClusterRoles.Inline
		}
		d.RoleBinding = wiring.RoleBinding(meta(naming.VMCPServiceAccountName(n), nil, nil), role)
	}
	annotations := map[string]string{naming.AnnotationPodVolumesHash: vols.Hash}
	if h := imagePullSecretsHash(pullSecrets); h != "" {
		annotations[naming.AnnotationImagePullSecretsHash] = h
	}
	container := corev1.Container{
		Name:            naming.VMCPContainerName,
		Image:           in.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            args(v),
		Env:             env(v, oidc, cw, in.UsageMetrics.WorkloadEnv(in.Release)),
		VolumeMounts:    vols.Mounts,
		Ports:           wiring.ContainerPorts(portName, naming.VMCPPort, authServerTLSPort),
		LivenessProbe:   probe(livenessPath, 30, 10, 5),
		ReadinessProbe:  probe(readinessPath, 15, 5, 3),
		SecurityContext: wiring.RestrictedContainerSecurityContext(),
		Resources:       *vmcpResources.DeepCopy(),
	}
	container.SecurityContext.Privileged = ptr.To(false)
	d.Deployment = &appsv1.Deployment{
		ObjectMeta: meta(n, labels, annotations),
		Spec: appsv1.DeploymentSpec{
			Replicas: wiring.CopyInt32(v.Spec.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: templateAnnotations(cm.Annotations[schema.ChecksumAnnotation], in.AuthServerCAChecksum),
				},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(terminationGrace),
					ServiceAccountName:            serviceAccountName(v),
					ImagePullSecrets:              pullSecrets,
					SecurityContext:               wiring.RestrictedPodSecurityContext(),
					Containers:                    []corev1.Container{container},
					Volumes:                       vols.Volumes,
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
		AuthServerTLS:   authServerTLSPort,
	})
	return d, nil
}

// podVolumes resolves the volumes hivekeeper builds once, in ToolHive's
// order: the configuration volume, the OIDC CA bundle, the entries' CA
// bundles, telemetry's, the embedded authorization server's and session
// storage's Redis CA bundle. All of
// them feed the hash annotation, hashed as ToolHive's operator hashes
// them (podVolumesHash); the podTemplateSpec's volumes are merged into
// the pod afterwards and stand in its own hash.
func podVolumes(configMap string, oidc wiring.OIDCWiring, w configWiring) (wiring.PodVolumes, error) {
	vols := []corev1.Volume{{Name: naming.VMCPConfigVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
	}}}}
	mounts := []corev1.VolumeMount{{Name: naming.VMCPConfigVolume, MountPath: naming.VMCPConfigMountPath, ReadOnly: true}}
	vols = slices.Concat(vols, oidc.Volumes, w.EntryVolumes, w.TelemetryVolumes, w.AuthServer.Volumes, w.Session.Volumes)
	mounts = slices.Concat(mounts, oidc.Mounts, w.EntryMounts, w.TelemetryMounts, w.AuthServer.Mounts, w.Session.Mounts)
	pv, err := wiring.NewPodVolumes(vols, mounts)
	if err != nil {
		return wiring.PodVolumes{}, wiring.PodTemplateInvalid("%v", err)
	}
	if pv.Hash, err = podVolumesHash(vols, mounts); err != nil {
		return wiring.PodVolumes{}, wiring.PodTemplateInvalid("%v", err)
	}
	return pv, nil
}

// podVolumesHash is ToolHive's hash of a vMCP's volumes: the hex SHA-256
// of the JSON of the volumes sorted by name and the mounts sorted by
// name, path and sub-path, as one object with keys Volumes and
// VolumeMounts.
func podVolumesHash(vols []corev1.Volume, mounts []corev1.VolumeMount) (string, error) {
	v := slices.Clone(vols)
	slices.SortStableFunc(v, func(a, b corev1.Volume) int { return cmp.Compare(a.Name, b.Name) })
	m := slices.Clone(mounts)
	slices.SortStableFunc(m, func(a, b corev1.VolumeMount) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.MountPath, b.MountPath), cmp.Compare(a.SubPath, b.SubPath))
	})
	raw, err := json.Marshal(struct {
		Volumes      []corev1.Volume
		VolumeMounts []corev1.VolumeMount
	}{v, m})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// imagePullSecretsHash is ToolHive's hash of the pull secrets: the hex
// SHA-256 of their JSON sorted by name, "" for none.
func imagePullSecretsHash(refs []corev1.LocalObjectReference) string {
	if len(refs) == 0 {
		return ""
	}
	sorted := slices.Clone(refs)
	slices.SortFunc(sorted, func(a, b corev1.LocalObjectReference) int { return cmp.Compare(a.Name, b.Name) })
	raw, _ := json.Marshal(sorted)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// HMACKeySize is the size of the vMCP's session HMAC key, in bytes.
const HMACKeySize = 32

// HMACSecret is the Secret <name>-hmac-secret that signs the vMCP's
// session tokens, as ToolHive's operator creates it: key (HMACKeySize
// random bytes, which the caller draws), base64-encoded, under the key
// hmac-secret, owned by the server. It is created once and never
// rewritten: a new value would invalidate every session, so the
// controller creates it only where it is absent and keeps the one
// ToolHive's operator made.
func HMACSecret(v *thv1.VirtualMCPServer, key []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: naming.ObjectMeta(naming.VMCPHMACSecretName(v.Name), v.Namespace, naming.VMCPHMACSecretLabels(v.Name),
			map[string]string{naming.AnnotationHMACSecretPurpose: naming.HMACSecretPurpose}, naming.OwnerRef(v, vmcpGVK)),
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{naming.VMCPHMACSecretKey: []byte(base64.StdEncoding.EncodeToString(key))},
	}
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
// and false for an object of no backend kind. vmcp connects to exactly
// the URL given, so a proxy's carries the path of its transport. A member
// being deleted (its proxy is going away) or an entry whose checks failed
// is no backend (Serves false). A new backend kind is one case here and
// one line in the controller's backendKinds.
func memberBackend(obj any) (member, bool) {
	switch m := obj.(type) {
	case *thv1.MCPServer:
		return member{VMCPBackend: schema.VMCPBackend{Name: m.Name, URL: backendURL(m), Transport: naming.MCPServerProxyMode(m)},
			AuthConfig: authRefName(m.Spec.ExternalAuthConfigRef), Metadata: backendMetadata(m, "mcp_server", ""),
			Serves: m.DeletionTimestamp == nil}, true
	case *thv1.MCPRemoteProxy:
		// The proxy's status.url, which ToolHive's vmcp discovery reads.
		return member{VMCPBackend: schema.VMCPBackend{Name: m.Name, URL: naming.RemoteProxyURL(m), Transport: naming.RemoteProxyTransport(m)},
			AuthConfig: authRefName(m.Spec.ExternalAuthConfigRef), Metadata: backendMetadata(m, "remote_proxy", m.Spec.RemoteURL),
			Serves: m.DeletionTimestamp == nil}, true
	case *thv1.MCPServerEntry:
		return entryBackend(m), true
	}
	return member{}, false
}

// membersOf maps the group's members to backend candidates, sorted by
// name so the rendered configuration does not depend on index order.
// Members are given kind by kind (MCPServers first); a name already taken
// by a member of an earlier kind is left out, since vmcp identifies
// backends by name.
func membersOf(objs []any) []member {
	out := make([]member, 0, len(objs))
	seen := map[string]bool{}
	for _, o := range objs {
		m, ok := memberBackend(o)
		if !ok || seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b member) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// templateAnnotations are the pod template's annotations: the checksum of
// config.yaml, and that of the authorization server's CA bundles when it
// names any, so that a new bundle rolls the pods as ToolHive's operator
// rolls them.
func templateAnnotations(configChecksum, caChecksum string) map[string]string {
	a := map[string]string{naming.AnnotationRunConfigChecksum: configChecksum}
	if caChecksum != "" {
		a[wiring.AuthServerCAChecksumAnnotation] = caChecksum
	}
	return a
}
