package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Incoming authentication types of a VirtualMCPServer.
const (
	IncomingAuthAnonymous = "anonymous"
	IncomingAuthOIDC      = "oidc"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=vmcp;virtualmcp,categories=toolhive
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Backends",type=integer,JSONPath=`.status.backendCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || size(self.metadata.name) <= 58",optionalOldSelf=true,message="metadata.name: a VirtualMCPServer name may have at most 58 characters, so that its Service vmcp-<name> fits in the 63 a Service name allows"

// VirtualMCPServer aggregates the MCP servers of one MCPGroup behind a single
// endpoint.
type VirtualMCPServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired virtual server. Fields hivekeeper does not model
	// are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +required
	Spec VirtualMCPServerSpec `json:"spec"`
	// Status is written by hivekeeper's VirtualMCPServer controller only.
	// +optional
	Status VirtualMCPServerStatus `json:"status,omitempty"`
}

// IncomingAuth is how clients authenticate to the virtual server.
// +kubebuilder:validation:XValidation:rule="self.type == 'oidc' ? has(self.oidcConfigRef) : true",message="type oidc requires oidcConfigRef"
// +kubebuilder:validation:XValidation:rule="!(has(self.authzConfig) && has(self.authzConfigRef))",message="authzConfig and authzConfigRef are mutually exclusive"
// +kubebuilder:pruning:PreserveUnknownFields
type IncomingAuth struct {
	// Type of incoming authentication.
	// +kubebuilder:validation:Enum=anonymous;oidc
	// +required
	Type string `json:"type"`
	// OIDCConfigRef is required when type is oidc.
	// +optional
	OIDCConfigRef *OIDCConfigReference `json:"oidcConfigRef,omitempty"`
	// AuthzConfig authorizes incoming requests with inline Cedar policies
	// (type inline). Type configMap is refused, as for an MCPServer.
	// +optional
	AuthzConfig *InlineAuthz `json:"authzConfig,omitempty"`
	// AuthzConfigRef authorizes incoming requests with a shared
	// MCPAuthzConfig of type cedarv1 in the same namespace.
	// +optional
	AuthzConfigRef *AuthzConfigReference `json:"authzConfigRef,omitempty"`
}

// Outgoing auth sources and backend auth types of a VirtualMCPServer.
const (
	OutgoingAuthSourceDiscovered         = "discovered"
	OutgoingAuthSourceInline             = "inline"
	BackendAuthTypeDiscovered            = "discovered"
	BackendAuthTypeExternalAuthConfigRef = "externalAuthConfigRef"
)

// OutgoingAuth is how the vMCP authenticates to its backends.
// +kubebuilder:pruning:PreserveUnknownFields
type OutgoingAuth struct {
	// Source is discovered (each backend's own externalAuthConfigRef) or
	// inline (only what is written here).
	// +kubebuilder:validation:Enum=discovered;inline
	// +kubebuilder:default=discovered
	// +optional
	Source string `json:"source,omitempty"`
	// Default applies to backends without an entry in Backends.
	// +optional
	Default *BackendAuth `json:"default,omitempty"`
	// Backends are per-backend overrides, by backend name.
	// +optional
	Backends map[string]BackendAuth `json:"backends,omitempty"`
}

// BackendAuth is the authentication to one backend.
// +kubebuilder:validation:XValidation:rule="self.type != 'externalAuthConfigRef' || has(self.externalAuthConfigRef)",message="type externalAuthConfigRef requires externalAuthConfigRef"
type BackendAuth struct {
	// Type is discovered (unauthenticated) or externalAuthConfigRef.
	// +kubebuilder:validation:Enum=discovered;externalAuthConfigRef
	// +required
	Type string `json:"type"`
	// ExternalAuthConfigRef names an MCPExternalAuthConfig in the same
	// namespace (type externalAuthConfigRef).
	// +optional
	ExternalAuthConfigRef *ExternalAuthConfigReference `json:"externalAuthConfigRef,omitempty"`
}

// ServiceType values of a VirtualMCPServer's Service.
const (
	ServiceTypeClusterIP    = "ClusterIP"
	ServiceTypeNodePort     = "NodePort"
	ServiceTypeLoadBalancer = "LoadBalancer"
)

// VirtualMCPServerSpec is the desired state of a VirtualMCPServer.
// +kubebuilder:validation:XValidation:rule="!has(self.config) || !has(self.config.rateLimiting) || (has(self.sessionStorage) && self.sessionStorage.provider == 'redis')",message="config.rateLimiting requires sessionStorage with provider 'redis'"
// +kubebuilder:validation:XValidation:rule="!(has(self.config) && has(self.config.rateLimiting) && has(self.config.rateLimiting.perUser)) || (has(self.incomingAuth) && self.incomingAuth.type == 'oidc')",message="config.rateLimiting.perUser requires incomingAuth type oidc"
// +kubebuilder:validation:XValidation:rule="!has(self.config) || !has(self.config.rateLimiting) || !has(self.config.rateLimiting.tools) || self.config.rateLimiting.tools.all(t, !has(t.perUser)) || (has(self.incomingAuth) && self.incomingAuth.type == 'oidc')",message="per-tool perUser rate limiting requires incomingAuth type oidc"
// +kubebuilder:validation:XValidation:rule="!has(self.config) || !has(self.config.sessionStorage) || !has(self.config.sessionStorage.tls)",message="config.sessionStorage.tls is not used: set sessionStorage.tls"
// +kubebuilder:validation:XValidation:rule="!(has(self.embeddingServerRef) && has(self.config) && has(self.config.optimizer) && has(self.config.optimizer.embeddingProvider) && self.config.optimizer.embeddingProvider == 'openai')",message="embeddingServerRef is a TEI server: it cannot be combined with optimizer.embeddingProvider openai, which calls embeddingService itself"
// +kubebuilder:validation:XValidation:rule="!has(self.authServerUpstreamFilter) || has(self.authServerConfig)",message="authServerUpstreamFilter requires authServerConfig"
// +kubebuilder:validation:XValidation:rule="!has(self.authServerUpstreamFilter) || (has(self.authServerConfig) && has(self.authServerConfig.upstreamProviders) && size(self.authServerConfig.upstreamProviders) >= 2)",message="authServerUpstreamFilter requires at least two upstreamProviders in authServerConfig"
type VirtualMCPServerSpec struct {
	// IncomingAuth is how clients authenticate.
	// +required
	IncomingAuth IncomingAuth `json:"incomingAuth"`
	// GroupRef is the MCPGroup whose servers are aggregated.
	// +required
	GroupRef GroupRef `json:"groupRef"`
	// OutgoingAuth is how the vMCP authenticates to its backends.
	// +optional
	OutgoingAuth *OutgoingAuth `json:"outgoingAuth,omitempty"`
	// PassthroughHeaders are incoming request headers forwarded verbatim
	// to every backend; they replace spec.config.passthroughHeaders.
	// +listType=atomic
	// +optional
	PassthroughHeaders []string `json:"passthroughHeaders,omitempty"`
	// TelemetryConfigRef exports the vMCP's traces and metrics as a shared
	// MCPTelemetryConfig in the same namespace says.
	// +optional
	TelemetryConfigRef *TelemetryConfigReference `json:"telemetryConfigRef,omitempty"`
	// EmbeddingServerRef names an EmbeddingServer in the same namespace
	// whose URL the optimizer's embedding service is.
	// +optional
	EmbeddingServerRef *EmbeddingServerRef `json:"embeddingServerRef,omitempty"`
	// AuthServerConfig runs an embedded OAuth authorization server in the
	// vMCP (the same block as an MCPExternalAuthConfig's
	// spec.embeddedAuthServer). hivekeeper applies the subset it applies
	// for proxies, with several upstreams; a config setting more is
	// refused, naming the fields.
	// +optional
	AuthServerConfig *EmbeddedAuthServerConfig `json:"authServerConfig,omitempty"`
	// AuthServerUpstreamFilter chooses, by the user's groups, which of
	// authServerConfig's upstream providers after the first the user signs
	// in with.
	// +optional
	AuthServerUpstreamFilter *AuthServerUpstreamFilterConfig `json:"authServerUpstreamFilter,omitempty"`
	// ServiceType of the vMCP Service.
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +kubebuilder:default=ClusterIP
	// +optional
	ServiceType string `json:"serviceType,omitempty"`
	// Replicas of the vMCP Deployment; unset means hands off.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// ServiceAccount of the vMCP pod; hivekeeper creates <name>-vmcp when unset.
	// +optional
	ServiceAccount *string `json:"serviceAccount,omitempty"`
	// SessionAffinity of the vMCP Service.
	// +kubebuilder:validation:Enum=ClientIP;None
	// +kubebuilder:default=ClientIP
	// +optional
	SessionAffinity string `json:"sessionAffinity,omitempty"`
	// SessionStorage keeps vMCP sessions in Redis so that replicas share
	// them; the password reaches the pod from its Secret only.
	// +optional
	SessionStorage *SessionStorageConfig `json:"sessionStorage,omitempty"`
	// ImagePullSecrets of the vMCP pod.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// PodTemplateSpec is merged into the vMCP pod (strategic merge, as
	// ToolHive's operator does); its container is named "vmcp".
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	PodTemplateSpec *runtime.RawExtension `json:"podTemplateSpec,omitempty"`
	// Config is the vMCP configuration (vmcpconfig_types.go). It is built
	// into config.yaml as ToolHive's operator builds it (defaults, tool
	// configs by reference, composite tools); sections hivekeeper does not
	// read are passed through.
	// +optional
	Config *VirtualMCPConfig `json:"config,omitempty"`
}

// AuthServerUpstreamFilterConfig maps the user's groups (a claim of the
// incoming token) to the upstream providers they sign in with.
// +kubebuilder:pruning:PreserveUnknownFields
type AuthServerUpstreamFilterConfig struct {
	// Claim holding the user's groups, a top-level claim of the identity
	// the first upstream resolves; groups when unset.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Claim string `json:"claim,omitempty"`
	// Rules: the user gets the upstreams of every rule one of whose groups
	// is theirs, in configured order.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Rules []UpstreamFilterGroupRule `json:"rules"`
	// DefaultUpstreams for users no rule matches (or with no groups); when
	// unset such a user signs in with the first upstream only.
	// +kubebuilder:validation:MaxItems=100
	// +listType=set
	// +optional
	DefaultUpstreams []string `json:"defaultUpstreams,omitempty"`
}

// UpstreamFilterGroupRule gives members of any of the groups the listed
// upstream providers.
// +kubebuilder:pruning:PreserveUnknownFields
type UpstreamFilterGroupRule struct {
	// Groups the rule matches.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=set
	// +required
	Groups []string `json:"groups"`
	// UpstreamProviders, by name, the members sign in with.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=set
	// +required
	UpstreamProviders []string `json:"upstreamProviders"`
}

// EmbeddingServerRef names an EmbeddingServer in the same namespace.
type EmbeddingServerRef struct {
	// Name of the EmbeddingServer.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// Phases of a VirtualMCPServer.
const (
	VirtualMCPServerPhasePending  = "Pending"
	VirtualMCPServerPhaseReady    = "Ready"
	VirtualMCPServerPhaseDegraded = "Degraded"
	VirtualMCPServerPhaseFailed   = "Failed"
)

// VirtualMCPServerStatus is the observed state of a VirtualMCPServer.
type VirtualMCPServerStatus struct {
	// Phase summarises the virtual server's state.
	// +kubebuilder:validation:Enum=Pending;Ready;Degraded;Failed
	// +kubebuilder:default=Pending
	// +optional
	Phase string `json:"phase,omitempty"`
	// Runtime is what the vMCP reports of itself, ToolHive's field,
	// written by vmcp; the controller only reads it.
	// +optional
	Runtime *VirtualMCPServerRuntimeStatus `json:"runtime,omitempty"`
	// DiscoveredBackends are the backends and their health, ToolHive's
	// field, copied from runtime.discoveredBackends.
	// +listType=map
	// +listMapKey=name
	// +optional
	DiscoveredBackends []DiscoveredBackend `json:"discoveredBackends,omitempty"`
	// BackendCount is the number of routable backends (ready or
	// unauthenticated) in discoveredBackends, ToolHive's field.
	// +optional
	BackendCount int32 `json:"backendCount,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// URL clients use to reach the virtual server inside the cluster.
	// +optional
	URL string `json:"url,omitempty"`
	// OIDCConfigHash is the configHash of the referenced MCPOIDCConfig.
	// +optional
	OIDCConfigHash string `json:"oidcConfigHash,omitempty"`
	// AuthzConfigHash is the configHash of the referenced MCPAuthzConfig.
	// +optional
	AuthzConfigHash string `json:"authzConfigHash,omitempty"`
	// TelemetryConfigHash is the configHash of the referenced
	// MCPTelemetryConfig.
	// +optional
	TelemetryConfigHash string `json:"telemetryConfigHash,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions describe the virtual server.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VirtualMCPServerRuntimeStatus is the vMCP's own report of its state.
type VirtualMCPServerRuntimeStatus struct {
	// Phase the vMCP reports.
	// +kubebuilder:validation:Enum=Pending;Ready;Degraded;Failed
	// +optional
	Phase string `json:"phase,omitempty"`
	// Message explaining the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions the vMCP reports.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// DiscoveredBackends are the backends the vMCP serves.
	// +listType=map
	// +listMapKey=name
	// +optional
	DiscoveredBackends []DiscoveredBackend `json:"discoveredBackends,omitempty"`
	// BackendCount is their number.
	// +optional
	BackendCount int32 `json:"backendCount,omitempty"`
}

// DiscoveredBackend is one backend of a vMCP and its health.
type DiscoveredBackend struct {
	// Name of the backend.
	Name string `json:"name"`
	// URL of the backend.
	// +optional
	URL string `json:"url,omitempty"`
	// Status of the backend.
	// +optional
	Status string `json:"status,omitempty"`
	// AuthConfigRef names the MCPExternalAuthConfig used for it.
	// +optional
	AuthConfigRef string `json:"authConfigRef,omitempty"`
	// AuthType is the outgoing authentication strategy used for it.
	// +optional
	AuthType string `json:"authType,omitempty"`
	// LastHealthCheck is when it was last checked.
	// +optional
	LastHealthCheck metav1.Time `json:"lastHealthCheck,omitempty"`
	// Message about its health.
	// +optional
	Message string `json:"message,omitempty"`
	// CircuitBreakerState of its circuit breaker.
	// +kubebuilder:validation:Enum=closed;open;half-open
	// +optional
	CircuitBreakerState string `json:"circuitBreakerState,omitempty"`
	// CircuitLastChanged is when the circuit last changed state.
	// +optional
	CircuitLastChanged metav1.Time `json:"circuitLastChanged,omitempty"`
	// ConsecutiveFailures of its health checks.
	// +optional
	ConsecutiveFailures int `json:"consecutiveFailures,omitempty"`
	// MCPRevision is the revision of its capabilities last seen.
	// +optional
	MCPRevision string `json:"mcpRevision,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// VirtualMCPServerList is a list of VirtualMCPServers.
type VirtualMCPServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the VirtualMCPServers.
	Items []VirtualMCPServer `json:"items"`
}
