package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Authorizer backends ToolHive's runner registers at the pinned release,
// and the key under which each reads its configuration.
const (
	AuthzTypeCedar = "cedarv1"
	AuthzTypeHTTP  = "httpv1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=authzcfg,categories=toolhive
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=='Valid')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPAuthzConfig is an authorization policy that MCPServers and
// MCPRemoteProxies in its namespace share by reference
// (spec.authzConfigRef): the proxy runner authorizes every MCP request with
// it.
type MCPAuthzConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the authorizer and its configuration.
	// +required
	Spec MCPAuthzConfigSpec `json:"spec"`
	// Status is written by hivekeeper's MCPAuthzConfig controller only.
	// +optional
	Status ConfigStatus `json:"status,omitempty"`
}

// MCPAuthzConfigSpec names an authorizer backend of the runner and its
// configuration.
type MCPAuthzConfigSpec struct {
	// Type is the runner's authorizer backend: cedarv1 (Cedar policies) or
	// httpv1 (an external policy decision point).
	// +kubebuilder:validation:MinLength=1
	// +required
	Type string `json:"type"`
	// Config is the backend's configuration as the runner reads it: for
	// cedarv1 policies, entities_json, group_claim_name, role_claim_name,
	// group_entity_type; for httpv1 http, context, claim_mapping.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +required
	Config runtime.RawExtension `json:"config"`
}

// AuthzConfigReference names an MCPAuthzConfig in the workload's namespace.
type AuthzConfigReference struct {
	// Name of the MCPAuthzConfig.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// Types of an inline authorization (spec.authzConfig.type).
const (
	AuthzConfigTypeInline    = "inline"
	AuthzConfigTypeConfigMap = "configMap"
)

// InlineAuthz is a workload's own authorization: Cedar policies written in
// the spec, or a ConfigMap holding a runner authorization file.
// +kubebuilder:validation:XValidation:rule="self.type == 'configMap' ? has(self.configMap) : !has(self.configMap)",message="configMap must be set when type is 'configMap', and must not be set otherwise"
// +kubebuilder:validation:XValidation:rule="self.type == 'inline' ? has(self.inline) : !has(self.inline)",message="inline must be set when type is 'inline', and must not be set otherwise"
type InlineAuthz struct {
	// Type is inline (Cedar policies here) or configMap.
	// +kubebuilder:validation:Enum=configMap;inline
	// +kubebuilder:default=configMap
	// +optional
	Type string `json:"type"`
	// ConfigMap holds a runner authorization file (type configMap).
	// +optional
	ConfigMap *ConfigMapAuthzRef `json:"configMap,omitempty"`
	// Inline are Cedar policies (type inline).
	// +optional
	Inline *InlineCedar `json:"inline,omitempty"`
	// GroupClaimName is the token claim holding the principal's groups,
	// instead of the runner's well-known ones.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	GroupClaimName string `json:"groupClaimName,omitempty"`
	// RoleClaimName is the token claim holding the principal's roles.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RoleClaimName string `json:"roleClaimName,omitempty"`
	// GroupEntityType is the Cedar entity type of groups and roles from the
	// token (the runner's default is THVGroup).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +optional
	GroupEntityType string `json:"groupEntityType,omitempty"`
}

// ConfigMapAuthzRef names a ConfigMap key holding a runner authorization
// file.
type ConfigMapAuthzRef struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Key of the file in the ConfigMap.
	// +kubebuilder:default=authz.json
	// +optional
	Key string `json:"key,omitempty"`
}

// InlineCedar are Cedar policies and entities.
type InlineCedar struct {
	// Policies are Cedar policies; a request no policy permits is denied.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	// +required
	Policies []string `json:"policies"`
	// EntitiesJSON is the Cedar entity store, as JSON.
	// +kubebuilder:default="[]"
	// +optional
	EntitiesJSON string `json:"entitiesJson,omitempty"`
	// PrimaryUpstreamProvider has no effect on an MCPServer or
	// MCPRemoteProxy (they run no embedded authorization server); it is
	// kept for ToolHive compatibility.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
	// +optional
	PrimaryUpstreamProvider string `json:"primaryUpstreamProvider,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPAuthzConfigList is a list of MCPAuthzConfigs.
type MCPAuthzConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPAuthzConfigs.
	Items []MCPAuthzConfig `json:"items"`
}
