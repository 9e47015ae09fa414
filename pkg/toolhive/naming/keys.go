package naming

// The app label of each workload kind's children.
const (
	AppMCPServer        = "mcpserver"
	AppMCPRemoteProxy   = "mcpremoteproxy"
	AppVirtualMCPServer = "virtualmcpserver"
)

// The keys of the pod contract that outlive one controller: the template
// annotations that roll a pod when what it read at start changes, the
// environment the runner reads, and the container names and ports a
// podTemplateSpec or a test addresses. They are ToolHive's keys; the
// controllers build with them and the integration, fault and conformance
// suites look them up here.
const (
	// AnnotationRunConfigChecksum on a pod template rolls the pod when the
	// configuration it read at start changes: a proxy's RunConfig
	// (MCPServer and MCPRemoteProxy), a vMCP's config.yaml (vmcp reads
	// it once at start, so a new backend or auth setting only takes
	// effect in a new pod). ToolHive's operator uses this one key for
	// both.
	AnnotationRunConfigChecksum = "toolhive.stacklok.dev/runconfig-checksum"
	// AnnotationMCPServerGeneration on an MCPServer's proxy pod template
	// carries the generation the pod was built for.
	AnnotationMCPServerGeneration = "toolhive.stacklok.dev/mcpserver-generation"
	// EnvMCPServerGeneration is the proxy's generation, frozen per pod
	// through the downward API: the RunConfig ConfigMap is mounted live, so
	// an old pod restarting mid-rollout would otherwise read the new
	// generation and fight the new pods.
	EnvMCPServerGeneration = "THV_MCPSERVER_GENERATION"
	// MCPContainerName is an MCPServer's backend container, the one the
	// runner's pod patch targets.
	MCPContainerName = "mcp"
	// ProxyContainerName is the proxy runner's container of an MCPServer
	// or MCPRemoteProxy; a podTemplateSpec addresses it by this name.
	ProxyContainerName = "toolhive"
	// DefaultProxyPort is the proxy port when the spec leaves it unset.
	DefaultProxyPort int32 = 8080

	// VMCPContainerName is the vMCP container; podTemplateSpec mounts
	// target it.
	VMCPContainerName = "vmcp"
	// VMCPConfigKey is the key of the vMCP configuration in its ConfigMap.
	VMCPConfigKey = "config.yaml"
	// VMCPAuthServerConfigKey is the key of the embedded authorization
	// server's configuration beside it, where vmcp looks for it.
	VMCPAuthServerConfigKey = "authserver-config.yaml"
	// VMCPPort is the vMCP's listening port, container and Service.
	VMCPPort int32 = 4483
	// VMCPConfigVolume is the volume of a vMCP's configuration ConfigMap,
	// mounted read-only at VMCPConfigMountPath.
	VMCPConfigVolume    = "vmcp-config"
	VMCPConfigMountPath = "/etc/vmcp-config"
	// EnvVMCPOIDCClientSecret carries an inline MCPOIDCConfig's client
	// secret into the vmcp container; config.yaml names it in
	// clientSecretEnv.
	EnvVMCPOIDCClientSecret = "VMCP_OIDC_CLIENT_SECRET"
	// EnvVMCPName and EnvVMCPNamespace tell vmcp which server it is and
	// where it runs, as ToolHive's operator does.
	EnvVMCPName      = "VMCP_NAME"
	EnvVMCPNamespace = "VMCP_NAMESPACE"
	// EnvVMCPSessionHMACSecret carries the key that signs the vMCP's
	// session tokens, from key VMCPHMACSecretKey of the Secret
	// VMCPHMACSecretName: every replica, and every pod after a restart,
	// accepts the sessions the others issued.
	EnvVMCPSessionHMACSecret = "VMCP_SESSION_HMAC_SECRET"
	VMCPHMACSecretKey        = "hmac-secret"
	// AnnotationHMACSecretPurpose on the HMAC Secret says what it is for,
	// as ToolHive's operator says it.
	AnnotationHMACSecretPurpose = "toolhive.stacklok.dev/purpose"
	HMACSecretPurpose           = "hmac-secret-for-session-token-binding"
)

// The condition types of a VirtualMCPServer's outgoing auth, ToolHive's:
// one per backend whose strategy comes from the spec
// (BackendAuthConfig-<name>) or from the member's own
// externalAuthConfigRef (DiscoveredAuthConfig-<name>), and one for the
// default strategy.
const (
	ConditionDefaultAuthConfig          = "DefaultAuthConfig"
	ConditionBackendAuthConfigPrefix    = "BackendAuthConfig-"
	ConditionDiscoveredAuthConfigPrefix = "DiscoveredAuthConfig-"
)

// AnnotationPodTemplateSpecHash is the Deployment annotation that stands
// for the user's podTemplateSpec (ToolHive's key). What the template adds
// to the pod and hivekeeper's own builder does not set — init containers,
// sidecars, scheduling, priority, DNS and the like — is compared through
// this one string, never through the live fields: the API server defaults
// fields all over a pod spec, and a comparison of them would see drift
// forever.
const AnnotationPodTemplateSpecHash = "toolhive.stacklok.io/podtemplatespec-hash"

// AnnotationImagePullSecretsHash is the vMCP Deployment annotation that
// stands for its pull secrets (ToolHive's key), absent without any.
const AnnotationImagePullSecretsHash = "toolhive.stacklok.io/imagepullsecrets-hash"

// AnnotationPodVolumesHash is the Deployment annotation that stands for the
// pod's resolved volumes and mounts. Drift of those is detected by
// comparing this one string, never the live volume list: the API server
// defaults fields inside volume sources (defaultMode, token expiry, host
// path type, ...) and a comparison of the lists would see drift forever.
const AnnotationPodVolumesHash = "toolhive.stacklok.io/podvolumes-hash"

// The EmbeddingServer's contract: its container (a podTemplateSpec
// addresses it by name), port default, and where the model cache is
// mounted (HF_HOME points there).
const (
	EmbeddingContainerName           = "embedding"
	DefaultEmbeddingServerPort int32 = 8080
	EmbeddingModelCacheVolume        = "model-cache"
	EmbeddingModelCachePath          = "/data"
)

// The MCPRegistry's contract: the registry API container (a
// podTemplateSpec addresses it by name), its port, its configuration file
// and the volume it is read from.
const (
	RegistryAPIContainerName       = "registry-api"
	RegistryAPIPort          int32 = 8080
	RegistryConfigKey              = "config.yaml"
	RegistryConfigVolume           = "registry-server-config"
	RegistryConfigMountPath        = "/config"
	// AnnotationRegistryConfigHash on the registry API's pod template is
	// the hash of the whole MCPRegistry spec: any spec change rolls it.
	AnnotationRegistryConfigHash = "toolhive.stacklok.dev/config-hash"
)
