package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=rp;mcprp,categories=toolhive
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Remote URL",type=string,JSONPath=`.spec.remoteUrl`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || size(self.metadata.name) <= 46",optionalOldSelf=true,message="metadata.name: an MCPRemoteProxy name may have at most 46 characters, so that its Service mcp-<name>-remote-proxy fits in the 63 a Service name allows"

// MCPRemoteProxy puts ToolHive's proxy runner in front of an MCP server that
// runs outside the cluster.
type MCPRemoteProxy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired proxy. Fields hivekeeper does not model are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +required
	Spec MCPRemoteProxySpec `json:"spec"`
	// Status is written by hivekeeper's MCPRemoteProxy controller only.
	// +optional
	Status MCPRemoteProxyStatus `json:"status,omitempty"`
}

// MCPRemoteProxySpec is the desired state of an MCPRemoteProxy.
// +kubebuilder:validation:XValidation:rule="!(has(self.authzConfig) && has(self.authzConfigRef))",message="authzConfig and authzConfigRef are mutually exclusive; use authzConfigRef to reference a shared MCPAuthzConfig"
type MCPRemoteProxySpec struct {
	// RemoteURL of the MCP server.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +required
	RemoteURL string `json:"remoteUrl"`
	// AllowPrivateEndpoint lets remoteUrl name a private or in-cluster
	// endpoint: an RFC 1918 or IPv6 unique-local address, or a host name
	// under cluster.local. Without it such a URL is refused. Loopback,
	// link-local and cloud-metadata addresses, localhost and the
	// Kubernetes API's own names are refused either way. The check reads
	// the URL only: a host name is not resolved.
	// +kubebuilder:default=false
	// +optional
	AllowPrivateEndpoint bool `json:"allowPrivateEndpoint,omitempty"`
	// ProxyPort is the proxy container port and the Service port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=8080
	// +optional
	ProxyPort int32 `json:"proxyPort,omitempty"`
	// Transport the remote server speaks.
	// +kubebuilder:validation:Enum=sse;streamable-http
	// +kubebuilder:default=streamable-http
	// +optional
	Transport string `json:"transport,omitempty"`
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
	// HeaderForward adds headers to every request sent to the remote
	// server, with literal values or values from Secrets.
	// +optional
	HeaderForward *HeaderForwardConfig `json:"headerForward,omitempty"`
	// TelemetryConfigRef exports the proxy's traces and metrics as a shared
	// MCPTelemetryConfig in the same namespace says, under this proxy's
	// service name.
	// +optional
	TelemetryConfigRef *TelemetryConfigReference `json:"telemetryConfigRef,omitempty"`
	// Resources of the proxy container.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// ResourceOverrides customise the proxy Deployment and Service.
	// +optional
	ResourceOverrides *ResourceOverrides `json:"resourceOverrides,omitempty"`
	// Replicas of the proxy; unset means hands off.
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
	// ServiceAccount of the proxy pod. When set, hivekeeper creates no RBAC.
	// +optional
	ServiceAccount *string `json:"serviceAccount,omitempty"`
	// GroupRef makes the proxy a member of an MCPGroup.
	// +optional
	GroupRef *GroupRef `json:"groupRef,omitempty"`
	// Audit logs an audit event for every MCP request the proxy handles.
	// +optional
	Audit *AuditConfig `json:"audit,omitempty"`
	// SessionStorage keeps MCP sessions in Redis so that proxy replicas
	// share them.
	// +optional
	SessionStorage *SessionStorageConfig `json:"sessionStorage,omitempty"`
	// ExternalAuthConfigRef is how the proxy authenticates to what it
	// proxies: a shared MCPExternalAuthConfig in the same namespace.
	// +optional
	ExternalAuthConfigRef *ExternalAuthConfigReference `json:"externalAuthConfigRef,omitempty"`
	// PodTemplateSpec is merged into the proxy pod (strategic merge, as
	// ToolHive's operator does); the proxy container is named "toolhive".
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	PodTemplateSpec *runtime.RawExtension `json:"podTemplateSpec,omitempty"`

	// AuthServerRef names the MCPExternalAuthConfig (of type
	// embeddedAuthServer) whose embedded OAuth authorization server the
	// proxy runs in front of the remote server.
	// +optional
	AuthServerRef *AuthServerRef `json:"authServerRef,omitempty"`

	// The fields below are ToolHive's, stored as written but not acted on
	// yet: the workload reports them in its UnsupportedFields condition.

}

// MCPRemoteProxyStatus is the observed state of an MCPRemoteProxy.
type MCPRemoteProxyStatus struct {
	// Phase summarises the proxy's state.
	// +kubebuilder:validation:Enum=Pending;Ready;Failed;Terminating
	// +optional
	Phase string `json:"phase,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// URL clients use to reach the proxy inside the cluster.
	// +optional
	URL string `json:"url,omitempty"`
	// ExternalURL is where clients outside the cluster reach the proxy,
	// ToolHive's field; hivekeeper does not set it.
	// +optional
	ExternalURL string `json:"externalUrl,omitempty"`
	// OIDCConfigHash is the configHash of the referenced MCPOIDCConfig.
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
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions describe the proxy.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPRemoteProxyList is a list of MCPRemoteProxies.
type MCPRemoteProxyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPRemoteProxies.
	Items []MCPRemoteProxy `json:"items"`
}
