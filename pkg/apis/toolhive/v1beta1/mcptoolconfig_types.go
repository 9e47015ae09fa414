package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=tc;toolconfig,categories=toolhive
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=='Valid')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPToolConfig filters and renames the tools of the MCPServers and
// MCPRemoteProxies in its namespace that reference it (spec.toolConfigRef):
// the proxy runner hides every tool not in the filter and presents the
// overridden names and descriptions.
type MCPToolConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the tool filter and overrides.
	// +optional
	Spec MCPToolConfigSpec `json:"spec,omitempty"`
	// Status is written by hivekeeper's MCPToolConfig controller only.
	// +optional
	Status ConfigStatus `json:"status,omitempty"`
}

// MCPToolConfigSpec is what the proxy runner's tool middleware applies.
type MCPToolConfigSpec struct {
	// ToolsFilter lists the tools clients see, by their name after any
	// override; empty means every tool. The runner reads the list as
	// comma-separated values, so a name may not contain a comma or a line
	// break.
	// +listType=set
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:Pattern=`^[^,\r\n]+$`
	// +optional
	ToolsFilter []string `json:"toolsFilter,omitempty"`
	// ToolsOverride maps a tool's own name to the name and description
	// clients see instead.
	// +optional
	ToolsOverride map[string]ToolOverride `json:"toolsOverride,omitempty"`
}

// ToolOverride renames and redescribes one tool.
type ToolOverride struct {
	// Name clients see instead of the tool's own.
	// +optional
	Name string `json:"name,omitempty"`
	// Description clients see instead of the tool's own.
	// +optional
	Description string `json:"description,omitempty"`
	// Annotations override the tool's MCP annotations (hints). ToolHive's
	// proxy runner at the pinned release does not apply them to an
	// MCPServer or MCPRemoteProxy (its RunConfig has no field for them);
	// they are kept for the vMCP, which does.
	// +optional
	Annotations *ToolAnnotationsOverride `json:"annotations,omitempty"`
}

// ToolAnnotationsOverride overrides a tool's MCP annotations; unset fields
// keep the tool's own.
type ToolAnnotationsOverride struct {
	// +optional
	Title *string `json:"title,omitempty"`
	// +optional
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// +optional
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// +optional
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// +optional
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// ToolConfigReference names an MCPToolConfig in the workload's namespace.
type ToolConfigReference struct {
	// Name of the MCPToolConfig.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPToolConfigList is a list of MCPToolConfigs.
type MCPToolConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPToolConfigs.
	Items []MCPToolConfig `json:"items"`
}
