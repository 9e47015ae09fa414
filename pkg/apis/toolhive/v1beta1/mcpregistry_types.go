package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Phases of an MCPRegistry.
const (
	MCPRegistryPhasePending     = "Pending"
	MCPRegistryPhaseReady       = "Ready"
	MCPRegistryPhaseFailed      = "Failed"
	MCPRegistryPhaseTerminating = "Terminating"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="MCPRegistry is deprecated and will be removed in a future release; install the ToolHive registry server via the toolhive-registry-server Helm chart (https://github.com/stacklok/toolhive-registry-server) instead"
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=mcpreg;registry,categories=toolhive
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPRegistry runs ToolHive's registry API server (a Deployment, its
// Service, a ConfigMap with its configuration and the RBAC it reads the
// cluster with) in its namespace. ToolHive deprecates the kind in favour
// of the registry server's own Helm chart: both versions warn on every
// request, with ToolHive's text.
type MCPRegistry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired registry server. Fields hivekeeper does not
	// model are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec MCPRegistrySpec `json:"spec,omitempty"`
	// Status is written by hivekeeper's MCPRegistry controller only.
	// +optional
	Status MCPRegistryStatus `json:"status,omitempty"`
}

// MCPRegistrySpec is the desired state of an MCPRegistry.
type MCPRegistrySpec struct {
	// ConfigYAML is the registry server's configuration file, written as
	// is into its ConfigMap; it is not a Secret, so credentials belong in
	// mounted volumes (or pgpassSecretRef), not here.
	// +kubebuilder:validation:MinLength=1
	// +required
	ConfigYAML string `json:"configYAML"`
	// Volumes added to the registry server pod, as Kubernetes volumes.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	// +optional
	Volumes []apiextensionsv1.JSON `json:"volumes,omitempty"`
	// VolumeMounts added to the registry server container.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +listType=atomic
	// +optional
	VolumeMounts []apiextensionsv1.JSON `json:"volumeMounts,omitempty"`
	// PGPassSecretRef is a Secret key holding a PostgreSQL password file
	// (.pgpass) for the server's database connections.
	// +optional
	PGPassSecretRef *corev1.SecretKeySelector `json:"pgpassSecretRef,omitempty"`
	// DisplayName of the registry.
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// PodTemplateSpec is merged into the registry server pod (strategic
	// merge).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	PodTemplateSpec *runtime.RawExtension `json:"podTemplateSpec,omitempty"`
	// ImagePullSecrets of the registry server pod.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// MCPRegistryStatus is the observed state of an MCPRegistry.
type MCPRegistryStatus struct {
	// Conditions describe the registry server.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase summarises the registry server's state.
	// +kubebuilder:validation:Enum=Pending;Ready;Failed;Terminating
	// +optional
	Phase string `json:"phase,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// URL of the registry API inside the cluster.
	// +optional
	URL string `json:"url,omitempty"`
	// ReadyReplicas of the registry server Deployment.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPRegistryList is a list of MCPRegistries.
type MCPRegistryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPRegistries.
	Items []MCPRegistry `json:"items"`
}
