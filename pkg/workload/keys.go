package workload

// The keys of the pod contract that outlive one controller: the template
// annotations that roll a pod when what it read at start changes, the
// environment the runner reads, and the container names and ports a
// podTemplateSpec or a test addresses. They are BEHAVIOUR.md's keys; the
// controllers build with them and the integration, fault and conformance
// suites look them up here.
const (
	// AnnotationRunConfigChecksum on a proxy pod template rolls the proxy
	// when its RunConfig changes (MCPServer and MCPRemoteProxy).
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

	// AnnotationVMCPConfigChecksum on a vMCP pod template rolls the vMCP
	// when its configuration changes: vmcp reads config.yaml once at
	// start, so a new backend or auth setting only takes effect in a new
	// pod.
	AnnotationVMCPConfigChecksum = "toolhive.stacklok.dev/vmcp-config-checksum"
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
)
