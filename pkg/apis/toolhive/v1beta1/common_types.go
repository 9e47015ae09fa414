package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
)

// Transport values: how an MCP server speaks.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Session affinity values for the proxy Service.
const (
	SessionAffinityClientIP = "ClientIP"
	SessionAffinityNone     = "None"
)

// Condition types shared by the workload kinds.
const (
	ConditionReady                       = "Ready"
	ConditionPodTemplateValid            = "PodTemplateValid"
	ConditionOIDCConfigRefValidated      = "OIDCConfigRefValidated"
	ConditionToolConfigValidated         = "ToolConfigValidated"
	ConditionAuthzConfigRefValidated     = "AuthzConfigRefValidated"
	ConditionExternalAuthConfigValidated = "ExternalAuthConfigValidated"
	ConditionAuthServerRefValidated      = "AuthServerRefValidated"
	// ConditionAuthServerConfigValidated reports a VirtualMCPServer's
	// spec.authServerConfig (ToolHive's name).
	ConditionAuthServerConfigValidated   = "AuthServerConfigValidated"
	ConditionTelemetryConfigRefValidated = "TelemetryConfigRefValidated"
	ConditionWebhookConfigValidated      = "WebhookConfigValidated"
	ConditionGroupRefValidated           = "GroupRefValidated"
	ConditionSpecValid                   = "SpecValid"
	ConditionChildrenReconciled          = "ChildrenReconciled"
	// ConditionUnsupportedFields is True, with the field paths in its
	// message, while the spec sets fields of ToolHive's API that hivekeeper
	// stores but does not act on; it is absent otherwise.
	ConditionUnsupportedFields = "UnsupportedFields"
	// ToolHive's advisory conditions, written whether or not anything is
	// wrong: SessionStorageWarning (MCPServer, MCPRemoteProxy,
	// VirtualMCPServer) is True while more than one replica is asked for
	// without Redis session storage; StdioReplicaCapped (MCPServer) is True
	// while a stdio server asks for more than one replica;
	// RateLimitConfigValid (MCPServer) is False while per-user rate limits
	// are set without authentication.
	ConditionSessionStorageWarning = "SessionStorageWarning"
	ConditionStdioReplicaCapped    = "StdioReplicaCapped"
	ConditionRateLimitConfigValid  = "RateLimitConfigValid"
	// ConditionAuthzPrimaryUpstreamProviderIgnored: True while an
	// MCPServer's or MCPRemoteProxy's inline Cedar authorization names a
	// primaryUpstreamProvider, which only a vMCP acts on.
	ConditionAuthzPrimaryUpstreamProviderIgnored = "AuthzPrimaryUpstreamProviderIgnored"
	ReasonAuthzPrimaryUpstreamProviderIgnored    = "PrimaryUpstreamProviderIgnored"
)

// The advisory conditions' reasons, ToolHive's.
const (
	ReasonSessionStorageMissing        = "SessionStorageMissingForReplicas"
	ReasonSessionStorageConfigured     = "SessionStorageConfigured"
	ReasonSessionStorageNotApplicable  = "SessionStorageWarningNotApplicable"
	ReasonStdioReplicaCapped           = "StdioTransportCapAt1"
	ReasonStdioReplicaCapNotActive     = "StdioReplicaCapNotActive"
	ReasonRateLimitConfigValid         = "RateLimitConfigValid"
	ReasonRateLimitPerUserRequiresAuth = "PerUserRequiresAuth"
	ReasonRateLimitNotApplicable       = "RateLimitNotApplicable"
)

// NameValue is a plain environment variable: a name and a literal value.
// +kubebuilder:pruning:PreserveUnknownFields
type NameValue struct {
	// Name of the environment variable; it cannot contain '=', CR or LF.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[^=\r\n]+$`
	// +required
	Name string `json:"name"`
	// Value of the environment variable.
	// +optional
	Value string `json:"value,omitempty"`
}

// ResourceList is the CPU and memory of one side (limits or requests) of a
// container's resources, written as Kubernetes quantities.
// +kubebuilder:pruning:PreserveUnknownFields
type ResourceList struct {
	// CPU quantity, for example 100m or 1.
	// +kubebuilder:validation:XValidation:rule="isQuantity(self)",message="cpu must be a Kubernetes quantity such as 100m or 1"
	// +optional
	CPU string `json:"cpu,omitempty"`
	// Memory quantity, for example 128Mi.
	// +kubebuilder:validation:XValidation:rule="isQuantity(self)",message="memory must be a Kubernetes quantity such as 128Mi"
	// +optional
	Memory string `json:"memory,omitempty"`
}

// ResourceRequirements are the limits and requests of the proxy container.
// +kubebuilder:pruning:PreserveUnknownFields
type ResourceRequirements struct {
	// Limits caps the proxy container.
	// +optional
	Limits ResourceList `json:"limits,omitempty"`
	// Requests reserves capacity for the proxy container.
	// +optional
	Requests ResourceList `json:"requests,omitempty"`
}

// SecretRef exposes one key of a Secret to the MCP server container as an
// environment variable. The value never passes through a ConfigMap.
// +kubebuilder:pruning:PreserveUnknownFields
type SecretRef struct {
	// Name of the Secret in the workload's namespace.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Key inside the Secret.
	// +kubebuilder:validation:MinLength=1
	// +required
	Key string `json:"key"`
	// TargetEnvName is the environment variable name in the MCP container;
	// the key is used when empty.
	// +optional
	TargetEnvName string `json:"targetEnvName,omitempty"`
}

// ResourceMetadataOverrides are labels and annotations added to a child.
// +kubebuilder:pruning:PreserveUnknownFields
type ResourceMetadataOverrides struct {
	// Labels added to the object. Keys the controller sets itself win.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to the object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ProxyDeploymentOverrides customise the proxy Deployment.
// +kubebuilder:pruning:PreserveUnknownFields
type ProxyDeploymentOverrides struct {
	ResourceMetadataOverrides `json:",inline"`
	// PodTemplateMetadataOverrides are labels and annotations for the proxy
	// pod template. Operator keys win over the controller's own, but the
	// controller's checksum annotation is never lost.
	// +optional
	PodTemplateMetadataOverrides *ResourceMetadataOverrides `json:"podTemplateMetadataOverrides,omitempty"`
	// Env is extra environment for the proxy container (not the MCP server).
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []NameValue `json:"env,omitempty"`
	// ImagePullSecrets for the proxy pod.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// NodeSelector of the proxy pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the proxy pod.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity of the proxy pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
}

// ResourceOverrides customise the proxy's children.
// +kubebuilder:pruning:PreserveUnknownFields
type ResourceOverrides struct {
	// ProxyDeployment customises the proxy Deployment.
	// +optional
	ProxyDeployment *ProxyDeploymentOverrides `json:"proxyDeployment,omitempty"`
	// ProxyService customises the proxy Service's metadata.
	// +optional
	ProxyService *ResourceMetadataOverrides `json:"proxyService,omitempty"`
}

// OIDCConfigReference points a workload at an MCPOIDCConfig in its namespace
// and adds the per-workload parts of the OIDC setup.
// +kubebuilder:pruning:PreserveUnknownFields
type OIDCConfigReference struct {
	// Name of the MCPOIDCConfig in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Audience expected in incoming tokens.
	// +kubebuilder:validation:MinLength=1
	// +required
	Audience string `json:"audience"`
	// Scopes advertised for this resource.
	// +listType=atomic
	// +optional
	Scopes []string `json:"scopes,omitempty"`
	// ResourceURL is the protected-resource URL advertised to clients.
	// +optional
	ResourceURL string `json:"resourceUrl,omitempty"`
}

// GroupRef names an MCPGroup in the same namespace.
// +kubebuilder:pruning:PreserveUnknownFields
type GroupRef struct {
	// Name of the MCPGroup.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}
