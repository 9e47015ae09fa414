package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phases of an MCPGroup.
const (
	MCPGroupPhaseReady   = "Ready"
	MCPGroupPhasePending = "Pending"
	MCPGroupPhaseFailed  = "Failed"
)

// MCPGroup condition reasons used by workloads that reference a group.
const (
	ReasonGroupRefValid    = "GroupRefValid"
	ReasonGroupRefNotFound = "GroupRefNotFound"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=mcpg,categories=toolhive
// +kubebuilder:printcolumn:name="Servers",type=integer,JSONPath=`.status.serverCount`
// +kubebuilder:printcolumn:name="Proxies",type=integer,JSONPath=`.status.remoteProxyCount`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Checked",type=string,JSONPath=`.status.conditions[?(@.type=='MCPServersChecked')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPGroup is a named set of MCP workloads in one namespace. Workloads join
// with spec.groupRef; a VirtualMCPServer aggregates a group.
type MCPGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the group. Fields hivekeeper does not model are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec MCPGroupSpec `json:"spec,omitempty"`
	// Status is written by hivekeeper's MCPGroup controller only.
	// +optional
	Status MCPGroupStatus `json:"status,omitempty"`
}

// MCPGroupSpec describes a group.
type MCPGroupSpec struct {
	// Description is free text.
	// +optional
	Description string `json:"description,omitempty"`
}

// MCPGroupStatus is the membership of a group, recomputed in full from an
// index by the MCPGroup controller, its only writer.
type MCPGroupStatus struct {
	// Servers are the names of the member MCPServers, sorted.
	// +listType=set
	// +optional
	Servers []string `json:"servers,omitempty"`
	// ServerCount is len(servers).
	// +optional
	ServerCount int32 `json:"serverCount,omitempty"`
	// RemoteProxies are the names of the member MCPRemoteProxies, sorted.
	// +listType=set
	// +optional
	RemoteProxies []string `json:"remoteProxies,omitempty"`
	// RemoteProxyCount is len(remoteProxies).
	// +optional
	RemoteProxyCount int32 `json:"remoteProxyCount,omitempty"`
	// Entries are the names of the member MCPServerEntries, sorted.
	// +listType=set
	// +optional
	Entries []string `json:"entries,omitempty"`
	// EntryCount is len(entries).
	// +optional
	EntryCount int32 `json:"entryCount,omitempty"`
	// Phase summarises the group.
	// +kubebuilder:validation:Enum=Ready;Pending;Failed
	// +kubebuilder:default=Pending
	// +optional
	Phase string `json:"phase,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions describe the group.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPGroupList is a list of MCPGroups.
type MCPGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPGroups.
	Items []MCPGroup `json:"items"`
}
