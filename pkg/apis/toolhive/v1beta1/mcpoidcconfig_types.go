package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MCPOIDCConfig source types.
const (
	OIDCConfigTypeKubernetesServiceAccount = "kubernetesServiceAccount"
	OIDCConfigTypeInline                   = "inline"
)

// MCPOIDCConfig condition types and reasons.
const (
	ConditionValid           = "Valid"
	ConditionDeletionBlocked = "DeletionBlocked"

	ReasonConfigValid           = "ConfigValid"
	ReasonConfigInvalid         = "ConfigInvalid"
	ReasonReferencedByWorkloads = "ReferencedByWorkloads"
	// ReasonValidationSucceeded is the Valid reason of MCPToolConfig,
	// MCPTelemetryConfig, MCPWebhookConfig and MCPExternalAuthConfig in
	// ToolHive v0.63.0 (ReasonValidationFailed when False); MCPOIDCConfig
	// and MCPAuthzConfig use ConfigValid and ConfigInvalid.
	ReasonValidationSucceeded = "ValidationSucceeded"
	// ReasonDeletionBlocked is the reason of ToolHive's Warning event when a
	// config's deletion waits for its referrers.
	ReasonDeletionBlocked = "DeletionBlocked"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=mcpoidc,categories=toolhive
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=='Valid')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPOIDCConfig is a shared OIDC setup that MCP workloads in the same
// namespace reference to authenticate incoming requests.
type MCPOIDCConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the OIDC setup. Fields hivekeeper does not model are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +required
	Spec MCPOIDCConfigSpec `json:"spec"`
	// Status is written by hivekeeper's MCPOIDCConfig controller only.
	// +optional
	Status ConfigStatus `json:"status,omitempty"`
}

// MCPOIDCConfigSpec selects and describes the token validation source.
// +kubebuilder:validation:XValidation:rule="self.type == 'kubernetesServiceAccount' ? has(self.kubernetesServiceAccount) : !has(self.kubernetesServiceAccount)",message="kubernetesServiceAccount must be set if and only if type is kubernetesServiceAccount"
// +kubebuilder:validation:XValidation:rule="self.type == 'inline' ? has(self.inline) : !has(self.inline)",message="inline must be set if and only if type is inline"
type MCPOIDCConfigSpec struct {
	// Type selects which block is used.
	// +kubebuilder:validation:Enum=kubernetesServiceAccount;inline
	// +required
	Type string `json:"type"`
	// KubernetesServiceAccount validates Kubernetes service-account tokens.
	// +optional
	KubernetesServiceAccount *KubernetesServiceAccountOIDCConfig `json:"kubernetesServiceAccount,omitempty"`
	// Inline describes an external identity provider.
	// +optional
	Inline *InlineOIDCConfig `json:"inline,omitempty"`
}

// KubernetesServiceAccountOIDCConfig validates tokens issued by the cluster.
// +kubebuilder:pruning:PreserveUnknownFields
type KubernetesServiceAccountOIDCConfig struct {
	// Issuer of the service-account tokens.
	// +kubebuilder:default="https://kubernetes.default.svc"
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// JWKSURL overrides the key set location.
	// +optional
	JWKSURL string `json:"jwksUrl,omitempty"`
	// IntrospectionURL is the token introspection endpoint.
	// +optional
	IntrospectionURL string `json:"introspectionUrl,omitempty"`
	// UseClusterAuth uses the pod's service-account token and cluster CA to
	// reach the API server; unset means true.
	// +optional
	UseClusterAuth *bool `json:"useClusterAuth,omitempty"`
	// ServiceAccount is the name of the service account whose tokens are
	// expected. ToolHive's runtime does not enforce it at this release; it is
	// stored so a manifest written for ToolHive reads back whole.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// Namespace of ServiceAccount; stored like ServiceAccount.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// SecretKeyRef names one key of a Secret in the same namespace.
// +kubebuilder:pruning:PreserveUnknownFields
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Key inside the Secret.
	// +kubebuilder:validation:MinLength=1
	// +required
	Key string `json:"key"`
}

// ConfigMapKeyRef names one key of a ConfigMap in the same namespace.
// +kubebuilder:pruning:PreserveUnknownFields
type ConfigMapKeyRef struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Key inside the ConfigMap.
	// +kubebuilder:default="ca.crt"
	// +optional
	Key string `json:"key,omitempty"`
	// Optional is the ConfigMap volume's optional flag: when true a missing
	// ConfigMap or key does not keep the pod from starting.
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// CABundleSource is where a CA bundle comes from.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="has(self.configMapRef) && size(self.configMapRef.name) > 0",message="configMapRef with a name is required"
type CABundleSource struct {
	// ConfigMapRef is a ConfigMap key holding PEM certificates.
	// +optional
	ConfigMapRef *ConfigMapKeyRef `json:"configMapRef,omitempty"`
}

// InlineOIDCConfig describes an external identity provider.
// +kubebuilder:pruning:PreserveUnknownFields
type InlineOIDCConfig struct {
	// Issuer URL of the identity provider.
	// +kubebuilder:validation:MinLength=1
	// +required
	Issuer string `json:"issuer"`
	// JWKSURL is the key set location.
	// +optional
	JWKSURL string `json:"jwksUrl,omitempty"`
	// IntrospectionURL is the token introspection endpoint.
	// +optional
	IntrospectionURL string `json:"introspectionUrl,omitempty"`
	// ClientID used for introspection.
	// +optional
	ClientID string `json:"clientId,omitempty"`
	// ClientSecretRef holds the client secret; it reaches the proxy as
	// TOOLHIVE_OIDC_CLIENT_SECRET through a secretKeyRef, never a ConfigMap.
	// +optional
	ClientSecretRef *SecretKeyRef `json:"clientSecretRef,omitempty"`
	// CABundleRef is a CA bundle trusted for the provider's endpoints.
	// +optional
	CABundleRef *CABundleSource `json:"caBundleRef,omitempty"`
	// JWKSAuthTokenPath is a file whose bearer token authenticates JWKS fetches.
	// +optional
	JWKSAuthTokenPath string `json:"jwksAuthTokenPath,omitempty"`
	// JWKSAllowPrivateIP allows the JWKS URL to resolve to a private address.
	// +optional
	// +kubebuilder:default=false
	JWKSAllowPrivateIP bool `json:"jwksAllowPrivateIP,omitempty"`
	// ProtectedResourceAllowPrivateIP allows the protected-resource URL to
	// resolve to a private address.
	// +optional
	// +kubebuilder:default=false
	ProtectedResourceAllowPrivateIP bool `json:"protectedResourceAllowPrivateIP,omitempty"`
	// InsecureAllowHTTP allows http:// issuer and JWKS URLs. Development only.
	// +optional
	// +kubebuilder:default=false
	InsecureAllowHTTP bool `json:"insecureAllowHTTP,omitempty"`
}

// WorkloadReference names a workload that references a config. An
// MCPServerEntry counts as one (for its MCPExternalAuthConfig), a kind
// ToolHive's enum does not list.
type WorkloadReference struct {
	// Kind of the workload.
	// +kubebuilder:validation:Enum=MCPServer;VirtualMCPServer;MCPRemoteProxy;MCPServerEntry
	// +required
	Kind string `json:"kind"`
	// Name of the workload, in the config's namespace.
	// +required
	Name string `json:"name"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPOIDCConfigList is a list of MCPOIDCConfigs.
type MCPOIDCConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPOIDCConfigs.
	Items []MCPOIDCConfig `json:"items"`
}
