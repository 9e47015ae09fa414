package schema

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// VMCPConfig is config.yaml, ToolHive's vmcp config.Config: its sections
// in the order of ToolHive's struct, written with MarshalYAML, so equal
// content gives ToolHive's operator's bytes. Sections spec.config passes
// through unchanged are the API's own types, which follow ToolHive's
// field order; the others are built by the translation.
type VMCPConfig struct {
	Name  string `json:"name,omitempty"`
	Group string `json:"groupRef,omitempty"`
	// Backends are written in inline (static) mode only; in discovered
	// mode vmcp lists the group's members itself.
	Backends          []thv1.VMCPStaticBackend    `json:"backends,omitempty"`
	IncomingAuth      *thv1.VMCPIncomingAuth      `json:"incomingAuth,omitempty"`
	OutgoingAuth      *VMCPOutgoingAuth           `json:"outgoingAuth,omitempty"`
	Aggregation       *thv1.VMCPAggregation       `json:"aggregation,omitempty"`
	CompositeTools    []VMCPCompositeTool         `json:"compositeTools,omitempty"`
	CompositeToolRefs []thv1.VMCPCompositeToolRef `json:"compositeToolRefs,omitempty"`
	Operational       *thv1.VMCPOperational       `json:"operational,omitempty"`
	Metadata          map[string]string           `json:"metadata,omitempty"`
	Telemetry         *TelemetryConfig            `json:"telemetry,omitempty"`
	Audit             *thv1.VMCPAudit             `json:"audit,omitempty"`
	Optimizer         *thv1.VMCPOptimizer         `json:"optimizer,omitempty"`
	CodeMode          *thv1.VMCPCodeMode          `json:"codeMode,omitempty"`
	SessionStorage    *VMCPSessionStorage         `json:"sessionStorage,omitempty"`
	RateLimiting      *VMCPRateLimiting           `json:"rateLimiting,omitempty"`
	// PassthroughHeaders is a list ToolHive's converter may set to an
	// empty one, which its encoder leaves out as well.
	PassthroughHeaders []string `json:"passthroughHeaders,omitempty"`
}

// VMCPSessionStorage is config.yaml's sessionStorage: the Redis
// connection without its password, and its TLS ({} for the system
// roots).
type VMCPSessionStorage struct {
	Provider  string          `json:"provider"`
	Address   string          `json:"address,omitempty"`
	DB        int32           `json:"db,omitempty"`
	KeyPrefix string          `json:"keyPrefix,omitempty"`
	TLS       *RedisTLSConfig `json:"tls,omitempty"`
}

// VMCPOutgoingAuth is config.yaml's outgoingAuth. Its strategies are
// pointers in ToolHive's type; the encoding is the same.
type VMCPOutgoingAuth struct {
	Source   string                                   `json:"source"`
	Default  *thv1.VMCPBackendAuthStrategy            `json:"default,omitempty"`
	Backends map[string]*thv1.VMCPBackendAuthStrategy `json:"backends,omitempty"`
}

// VMCPBackend is what config.yaml and the pod take from one group member:
// comparable, so the controller can tell whether a member's update
// reaches the vMCP.
type VMCPBackend struct {
	// Name is the member's name.
	Name string
	// URL is the MCP endpoint of its proxy Service, or an entry's remote
	// URL.
	URL string
	// Transport is what its proxy exposes (streamable-http or sse), or
	// what an entry's remote server speaks.
	Transport string
	// Type is "entry" for an MCPServerEntry, empty otherwise.
	Type string
	// CABundlePath is where an entry's CA bundle is mounted.
	CABundlePath string
}

// VMCPCompositeTool is a composite tool of config.yaml, ToolHive's
// CompositeToolConfig: decoded from the JSON of a spec's tool, its
// durations written as Go prints them and its nested step and output
// properties typed, as ToolHive's type decodes them.
type VMCPCompositeTool struct {
	Name        string                `json:"name"`
	Description string                `json:"description,omitempty"`
	Parameters  map[string]any        `json:"parameters,omitempty"`
	Timeout     Duration              `json:"timeout,omitempty"`
	Steps       []VMCPWorkflowStep    `json:"steps"`
	Output      *VMCPCompositeOutput  `json:"output,omitempty"`
	Annotations *thv1.ToolAnnotations `json:"annotations,omitempty"`
}

// VMCPWorkflowStep is one step of a composite tool.
type VMCPWorkflowStep struct {
	ID             string                   `json:"id"`
	Type           string                   `json:"type,omitempty"`
	Tool           string                   `json:"tool,omitempty"`
	Arguments      map[string]any           `json:"arguments,omitempty"`
	Condition      string                   `json:"condition,omitempty"`
	DependsOn      []string                 `json:"dependsOn,omitempty"`
	OnError        *VMCPStepErrorHandling   `json:"onError,omitempty"`
	Message        string                   `json:"message,omitempty"`
	Schema         map[string]any           `json:"schema,omitempty"`
	Timeout        Duration                 `json:"timeout,omitempty"`
	OnDecline      *VMCPElicitationResponse `json:"onDecline,omitempty"`
	OnCancel       *VMCPElicitationResponse `json:"onCancel,omitempty"`
	DefaultResults map[string]any           `json:"defaultResults,omitempty"`
	Collection     string                   `json:"collection,omitempty"`
	ItemVar        string                   `json:"itemVar,omitempty"`
	MaxParallel    int                      `json:"maxParallel,omitempty"`
	MaxIterations  int                      `json:"maxIterations,omitempty"`
	InnerStep      *VMCPWorkflowStep        `json:"step,omitempty"`
}

// VMCPStepErrorHandling is what a step does when it fails.
type VMCPStepErrorHandling struct {
	Action     string   `json:"action,omitempty"`
	RetryCount int      `json:"retryCount,omitempty"`
	RetryDelay Duration `json:"retryDelay,omitempty"`
}

// VMCPElicitationResponse is what a step does when the user declines or
// cancels an elicitation.
type VMCPElicitationResponse struct {
	Action string `json:"action,omitempty"`
}

// VMCPCompositeOutput is a composite tool's output schema.
type VMCPCompositeOutput struct {
	Properties map[string]VMCPOutputProperty `json:"properties"`
	Required   []string                      `json:"required,omitempty"`
}

// VMCPOutputProperty is one output property. Description is written even
// when empty, as ToolHive's type writes it.
type VMCPOutputProperty struct {
	Type        string                        `json:"type"`
	Description string                        `json:"description"`
	Value       string                        `json:"value,omitempty"`
	Properties  map[string]VMCPOutputProperty `json:"properties,omitempty"`
	Default     any                           `json:"default,omitempty"`
}

// VMCPRateLimiting is config.yaml's rateLimiting.
type VMCPRateLimiting struct {
	Shared  *VMCPRateBucket     `json:"shared,omitempty"`
	PerUser *VMCPRateBucket     `json:"perUser,omitempty"`
	Tools   []VMCPToolRateLimit `json:"tools,omitempty"`
}

// VMCPRateBucket is a token bucket. ToolHive's refill period is a
// Kubernetes duration object, which its YAML encoder writes as an object
// with one key, duration.
type VMCPRateBucket struct {
	MaxTokens    int32              `json:"maxTokens"`
	RefillPeriod VMCPRefillDuration `json:"refillPeriod"`
}

// VMCPRefillDuration is a refill period as ToolHive's YAML encoder writes
// it.
type VMCPRefillDuration struct {
	Duration Duration `json:"duration"`
}

// VMCPToolRateLimit limits one tool.
type VMCPToolRateLimit struct {
	Name    string          `json:"name"`
	Shared  *VMCPRateBucket `json:"shared,omitempty"`
	PerUser *VMCPRateBucket `json:"perUser,omitempty"`
}

// MarshalVMCPConfig is config.yaml as ToolHive's operator writes it.
func MarshalVMCPConfig(c *VMCPConfig) (string, error) { return MarshalYAML(c) }

// MarshalAuthServerConfig is authserver-config.yaml, the embedded
// authorization server's configuration vmcp reads beside config.yaml, as
// ToolHive's operator writes it: the YAML of the same block the proxy
// runner reads from its RunConfig, in its struct's order.
func MarshalAuthServerConfig(c *EmbeddedAuthServerConfig) (string, error) { return MarshalYAML(c) }
