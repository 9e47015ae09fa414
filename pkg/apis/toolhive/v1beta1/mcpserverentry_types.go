package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phases of an MCPServerEntry (ToolHive's).
const (
	MCPServerEntryPhaseValid   = "Valid"
	MCPServerEntryPhasePending = "Pending"
	MCPServerEntryPhaseFailed  = "Failed"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=mcpentry,categories=toolhive
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.spec.transport`
// +kubebuilder:printcolumn:name="Remote URL",type=string,JSONPath=`.spec.remoteUrl`
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.groupRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPServerEntry declares a remote MCP server as a member of an MCPGroup,
// for the group's VirtualMCPServers to reach directly. Unlike an
// MCPRemoteProxy it runs nothing: hivekeeper only checks it and reports.
type MCPServerEntry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the declared remote server. Fields hivekeeper does not model
	// are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +required
	Spec MCPServerEntrySpec `json:"spec"`
	// Status is written by hivekeeper's MCPServerEntry controller only.
	// +optional
	Status MCPServerEntryStatus `json:"status,omitempty"`
}

// MCPServerEntrySpec is a remote MCP server and how a vMCP reaches it.
type MCPServerEntrySpec struct {
	// RemoteURL of the MCP server, http or https.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +required
	RemoteURL string `json:"remoteUrl"`
	// AllowPrivateEndpoint lets remoteUrl name a private or in-cluster
	// endpoint (RFC 1918, IPv6 unique-local, a host under cluster.local).
	// Loopback, link-local, cloud-metadata and the Kubernetes API's own
	// names are refused either way.
	// +kubebuilder:default=false
	// +optional
	AllowPrivateEndpoint bool `json:"allowPrivateEndpoint,omitempty"`
	// Transport the remote server speaks. There is no default: the entry
	// names a server its author does not run, so a guess could silently
	// mismatch.
	// +kubebuilder:validation:Enum=sse;streamable-http
	// +required
	Transport string `json:"transport"`
	// GroupRef is the MCPGroup the entry belongs to; every entry is in one.
	// +required
	GroupRef *GroupRef `json:"groupRef"`
	// ExternalAuthConfigRef is how a vMCP authenticates to the remote
	// server: an MCPExternalAuthConfig in the same namespace.
	// +optional
	ExternalAuthConfigRef *ExternalAuthConfigReference `json:"externalAuthConfigRef,omitempty"`
	// HeaderForward adds headers to every request sent to the remote
	// server, with literal values or values from Secrets.
	// +optional
	HeaderForward *HeaderForwardConfig `json:"headerForward,omitempty"`
	// CABundleRef is a ConfigMap key with the CA certificates the remote
	// server's TLS certificate is verified against.
	// +optional
	CABundleRef *CABundleSource `json:"caBundleRef,omitempty"`
}

// MCPServerEntryStatus is the observed state of an MCPServerEntry.
type MCPServerEntryStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Valid when the URL and every reference check out, Failed
	// otherwise, Pending before the first check.
	// +kubebuilder:validation:Enum=Valid;Pending;Failed
	// +kubebuilder:default=Pending
	// +optional
	Phase string `json:"phase,omitempty"`
	// Conditions: Valid, RemoteURLValidated, GroupRefValidated,
	// ExternalAuthConfigValidated, CABundleRefValidated.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPServerEntryList is a list of MCPServerEntries.
type MCPServerEntryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPServerEntries.
	Items []MCPServerEntry `json:"items"`
}
