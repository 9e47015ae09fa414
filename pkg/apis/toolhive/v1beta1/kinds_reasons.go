package v1beta1

// Finalizers of the EmbeddingServer and MCPRegistry, ToolHive's: both
// operators add them, so a switch between the two adds or removes none.
const (
	// EmbeddingServerFinalizer holds an EmbeddingServer until its status
	// says Terminating.
	EmbeddingServerFinalizer = "embeddingserver.toolhive.stacklok.dev/finalizer"
	// MCPRegistryFinalizer holds an MCPRegistry until its status says
	// Terminating.
	MCPRegistryFinalizer = "mcpregistry.toolhive.stacklok.dev/finalizer"
)

// An MCPRegistry's Ready condition reasons and events (ToolHive's).
const (
	ReasonRegistryReady    = "Ready"
	ReasonRegistryNotReady = "NotReady"
	// ReasonMCPRegistryDeprecated is the Warning event of every spec
	// change: ToolHive deprecates the kind in favour of the registry
	// server's own Helm chart.
	ReasonMCPRegistryDeprecated = "MCPRegistryDeprecated"
	// Ready=False reasons of a registry child that could not be written,
	// by child (ToolHive's).
	ReasonRegistryConfigMapFailed  = "ConfigMapFailed"
	ReasonRegistryRBACFailed       = "RBACFailed"
	ReasonRegistryDeploymentFailed = "DeploymentFailed"
	ReasonRegistryServiceFailed    = "ServiceFailed"
	// ReasonValidationFailed: a spec ToolHive's operator refuses before
	// building (reserved names, colliding mount paths, an incomplete
	// pgpassSecretRef).
	ReasonValidationFailed = "ValidationFailed"
)

// Events of an EmbeddingServer (ToolHive's).
const (
	// ReasonEmbeddingServerDeleted is the Normal event of its finalizer.
	ReasonEmbeddingServerDeleted = "Deleted"
)

// A VirtualMCPServer's spec.embeddingServerRef: the condition, its
// reasons and the Warning event of a missing server (ToolHive's).
const (
	ConditionEmbeddingServerReady    = "EmbeddingServerReady"
	ReasonEmbeddingServerReady       = "EmbeddingServerReady"
	ReasonEmbeddingServerNotFound    = "EmbeddingServerNotFound"
	ReasonEmbeddingServerNotReady    = "EmbeddingServerNotReady"
	ReasonEmbeddingServerRefNotFound = "EmbeddingServerRefNotFound"
)

// GetStatus returns the server's status (see MCPServer.GetStatus).
func (e *EmbeddingServer) GetStatus() *EmbeddingServerStatus { return &e.Status }

// GetStatus returns the registry's status (see MCPServer.GetStatus).
func (r *MCPRegistry) GetStatus() *MCPRegistryStatus { return &r.Status }
