package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Phases of an MCPServer.
const (
	MCPServerPhasePending     = "Pending"
	MCPServerPhaseReady       = "Ready"
	MCPServerPhaseFailed      = "Failed"
	MCPServerPhaseTerminating = "Terminating"
	MCPServerPhaseStopped     = "Stopped"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:categories=toolhive
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || size(self.metadata.name) <= 50",optionalOldSelf=true,message="metadata.name: an MCPServer name may have at most 50 characters, so that the Services named after it, up to mcp-<name>-headless, fit in the 63 a Service name allows"

// MCPServer runs one MCP server behind ToolHive's proxy runner: a proxy
// Deployment and Service, the RunConfig the runner reads, and the RBAC the
// runner needs to create the MCP server's own StatefulSet.
type MCPServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired MCP server. Fields hivekeeper does not model are
	// preserved as written.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +required
	Spec MCPServerSpec `json:"spec"`
	// Status is written by hivekeeper's MCPServer controller only.
	// +optional
	Status MCPServerStatus `json:"status,omitempty"`
}

// MCPServerSpec is the desired state of an MCPServer.
// +kubebuilder:validation:XValidation:rule="!(has(self.authzConfig) && has(self.authzConfigRef))",message="authzConfig and authzConfigRef are mutually exclusive; use authzConfigRef to reference a shared MCPAuthzConfig"
// +kubebuilder:validation:XValidation:rule="!has(self.rateLimiting) || (has(self.sessionStorage) && self.sessionStorage.provider == 'redis')",message="rateLimiting requires sessionStorage with provider 'redis'"
// +kubebuilder:validation:XValidation:rule="!(has(self.rateLimiting) && has(self.rateLimiting.perUser)) || has(self.oidcConfigRef) || has(self.externalAuthConfigRef)",message="rateLimiting.perUser requires authentication (oidcConfigRef or externalAuthConfigRef)"
// +kubebuilder:validation:XValidation:rule="!has(self.rateLimiting) || !has(self.rateLimiting.tools) || self.rateLimiting.tools.all(t, !has(t.perUser)) || has(self.oidcConfigRef) || has(self.externalAuthConfigRef)",message="per-tool perUser rate limiting requires authentication (oidcConfigRef or externalAuthConfigRef)"
type MCPServerSpec struct {
	// Image of the MCP server. It is a positional argument of the proxy
	// runner, so it may not start with '-' (it would be read as an option).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-')",message="may not start with '-': the image is an argument of the proxy runner, and a leading '-' would make it an option"
	// +required
	Image string `json:"image"`
	// Transport is how the MCP server speaks.
	// +kubebuilder:validation:Enum=stdio;streamable-http;sse
	// +kubebuilder:default=stdio
	// +optional
	Transport string `json:"transport,omitempty"`
	// ProxyMode is what the proxy exposes for a stdio server. For the HTTP
	// transports the effective mode equals the transport.
	// +kubebuilder:validation:Enum=sse;streamable-http
	// +kubebuilder:default=streamable-http
	// +optional
	ProxyMode string `json:"proxyMode,omitempty"`
	// ProxyPort is the proxy container port and the Service port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=8080
	// +optional
	ProxyPort int32 `json:"proxyPort,omitempty"`
	// MCPPort is the port the MCP server listens on (RunConfig target_port);
	// 8080 when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	MCPPort *int32 `json:"mcpPort,omitempty"`
	// Args are passed to the MCP server.
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`
	// Env is the MCP server's environment (not the proxy's).
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []NameValue `json:"env,omitempty"`
	// Resources of the proxy container.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// Secrets exposed to the MCP server container as environment
	// variables; one Secret may give several keys.
	// +listType=map
	// +listMapKey=name
	// +listMapKey=key
	// +optional
	Secrets []SecretRef `json:"secrets,omitempty"`
	// ServiceAccount of the MCP server pod. When unset hivekeeper creates
	// <name>-sa.
	// +optional
	ServiceAccount *string `json:"serviceAccount,omitempty"`
	// PodTemplateSpec is a patch for the MCP server pod; its container is
	// named "mcp".
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	PodTemplateSpec *runtime.RawExtension `json:"podTemplateSpec,omitempty"`
	// ResourceOverrides customise the proxy Deployment and Service.
	// +optional
	ResourceOverrides *ResourceOverrides `json:"resourceOverrides,omitempty"`
	// OIDCConfigRef authenticates incoming requests with an MCPOIDCConfig.
	// +optional
	OIDCConfigRef *OIDCConfigReference `json:"oidcConfigRef,omitempty"`
	// ToolConfigRef filters and renames the tools clients see with an
	// MCPToolConfig in the same namespace.
	// +optional
	ToolConfigRef *ToolConfigReference `json:"toolConfigRef,omitempty"`
	// AuthzConfig authorizes every MCP request with the workload's own
	// Cedar policies (or a ConfigMap's authorization file).
	// +optional
	AuthzConfig *InlineAuthz `json:"authzConfig,omitempty"`
	// AuthzConfigRef authorizes every MCP request with a shared
	// MCPAuthzConfig in the same namespace.
	// +optional
	AuthzConfigRef *AuthzConfigReference `json:"authzConfigRef,omitempty"`
	// TelemetryConfigRef exports the proxy's traces and metrics as a shared
	// MCPTelemetryConfig in the same namespace says, under this server's
	// service name.
	// +optional
	TelemetryConfigRef *TelemetryConfigReference `json:"telemetryConfigRef,omitempty"`
	// WebhookConfigRef makes the proxy call the validating and mutating
	// webhooks of a shared MCPWebhookConfig in the same namespace on every
	// MCP request.
	// +optional
	WebhookConfigRef *WebhookConfigReference `json:"webhookConfigRef,omitempty"`
	// Replicas of the proxy. Unset means hands off: an HPA or kubectl owns the
	// count. A stdio server is capped at 1.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// SessionAffinity of the proxy Service.
	// +kubebuilder:validation:Enum=ClientIP;None
	// +kubebuilder:default=ClientIP
	// +optional
	SessionAffinity string `json:"sessionAffinity,omitempty"`
	// TrustProxyHeaders makes the proxy trust X-Forwarded-* headers.
	// +kubebuilder:default=false
	// +optional
	TrustProxyHeaders bool `json:"trustProxyHeaders,omitempty"`
	// EndpointPrefix is a path prefix the proxy serves under.
	// +optional
	EndpointPrefix string `json:"endpointPrefix,omitempty"`
	// GroupRef makes the server a member of an MCPGroup.
	// +optional
	GroupRef *GroupRef `json:"groupRef,omitempty"`
	// ExternalAuthConfigRef is how the proxy authenticates to what it
	// proxies: a shared MCPExternalAuthConfig in the same namespace.
	// +optional
	ExternalAuthConfigRef *ExternalAuthConfigReference `json:"externalAuthConfigRef,omitempty"`

	// AuthServerRef names the MCPExternalAuthConfig (of type
	// embeddedAuthServer) whose embedded OAuth authorization server the
	// proxy runs in front of the server.
	// +optional
	AuthServerRef *AuthServerRef `json:"authServerRef,omitempty"`

	// Volumes are host paths for the MCP server container, recorded in
	// the RunConfig (volumes and the permission profile's mounts) as
	// ToolHive's operator records them.
	// +listType=map
	// +listMapKey=name
	// +optional
	Volumes []Volume `json:"volumes,omitempty"`
	// PermissionProfile of the MCP server, recorded in the RunConfig.
	// ToolHive's Kubernetes runtime does not enforce permission profiles.
	// +optional
	PermissionProfile *PermissionProfileRef `json:"permissionProfile,omitempty"`
	// Audit logs an audit event for every MCP request the proxy handles.
	// +optional
	Audit *AuditConfig `json:"audit,omitempty"`
	// MaxRequestBodySize is the largest request body the proxy accepts, in
	// bytes; zero means the runner's default of 8 MiB.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRequestBodySize int64 `json:"maxRequestBodySize,omitempty"`
	// BackendReplicas of the MCP server's StatefulSet, which the runner
	// creates. Unset means hands off.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BackendReplicas *int32 `json:"backendReplicas,omitempty"`
	// SessionStorage keeps MCP sessions in Redis so that proxy replicas
	// share them.
	// +optional
	SessionStorage *SessionStorageConfig `json:"sessionStorage,omitempty"`
	// RateLimiting limits tools/call requests; it needs Redis session
	// storage.
	// +optional
	RateLimiting *RateLimitConfig `json:"rateLimiting,omitempty"`
	// ProxyReadTimeout bounds how long the proxy spends reading a whole
	// request (headers and body), a Go duration; 30s when unset.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="proxyReadTimeout may not be negative"
	// +optional
	ProxyReadTimeout *string `json:"proxyReadTimeout,omitempty"`

	// The fields below are ToolHive's, stored as written but not acted on
	// yet: the workload reports them in its UnsupportedFields condition.

}

// MCPServerStatus is the observed state of an MCPServer.
type MCPServerStatus struct {
	// Phase summarises the server's state.
	// +kubebuilder:validation:Enum=Pending;Ready;Failed;Terminating;Stopped
	// +optional
	Phase string `json:"phase,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// URL clients use to reach the server inside the cluster.
	// +optional
	URL string `json:"url,omitempty"`
	// ReadyReplicas of the proxy Deployment.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// OIDCConfigHash is the configHash of the referenced MCPOIDCConfig that
	// this server was last converged with.
	// +optional
	OIDCConfigHash string `json:"oidcConfigHash,omitempty"`
	// ToolConfigHash is the configHash of the referenced MCPToolConfig
	// that this workload was last converged with.
	// +optional
	ToolConfigHash string `json:"toolConfigHash,omitempty"`
	// AuthzConfigHash is the configHash of the referenced MCPAuthzConfig
	// that this workload was last converged with.
	// +optional
	AuthzConfigHash string `json:"authzConfigHash,omitempty"`
	// ExternalAuthConfigHash is the configHash of the referenced
	// MCPExternalAuthConfig that this workload was last converged with.
	// +optional
	ExternalAuthConfigHash string `json:"externalAuthConfigHash,omitempty"`
	// AuthServerConfigHash is the configHash of the MCPExternalAuthConfig
	// spec.authServerRef names.
	// +optional
	AuthServerConfigHash string `json:"authServerConfigHash,omitempty"`
	// TelemetryConfigHash is the configHash of the referenced
	// MCPTelemetryConfig that this workload was last converged with.
	// +optional
	TelemetryConfigHash string `json:"telemetryConfigHash,omitempty"`
	// WebhookConfigHash is the configHash of the referenced
	// MCPWebhookConfig that this workload was last converged with.
	// +optional
	WebhookConfigHash string `json:"webhookConfigHash,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, PodTemplateValid, OIDCConfigRefValidated and others.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPServerList is a list of MCPServers.
type MCPServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPServers.
	Items []MCPServer `json:"items"`
}
