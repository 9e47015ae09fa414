package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Phases of an EmbeddingServer.
const (
	EmbeddingServerPhasePending     = "Pending"
	EmbeddingServerPhaseDownloading = "Downloading"
	EmbeddingServerPhaseReady       = "Ready"
	EmbeddingServerPhaseFailed      = "Failed"
	EmbeddingServerPhaseTerminating = "Terminating"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=emb;embedding,categories=toolhive
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// EmbeddingServer runs a text embedding model (Hugging Face's Text
// Embeddings Inference) as a StatefulSet and Service in its namespace, for
// the optimizer of the VirtualMCPServers that name it in
// spec.embeddingServerRef.
type EmbeddingServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired embedding server. Fields hivekeeper does not
	// model are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec EmbeddingServerSpec `json:"spec,omitempty"`
	// Status is written by hivekeeper's EmbeddingServer controller only.
	// +optional
	Status EmbeddingServerStatus `json:"status,omitempty"`
}

// EmbeddingServerSpec is the desired state of an EmbeddingServer.
type EmbeddingServerSpec struct {
	// Model is the Hugging Face model served.
	// +kubebuilder:default="BAAI/bge-small-en-v1.5"
	// +optional
	Model string `json:"model,omitempty"`
	// HFTokenSecretRef is a Hugging Face token, for gated or private
	// models.
	// +optional
	HFTokenSecretRef *SecretKeyRef `json:"hfTokenSecretRef,omitempty"`
	// Image of the embedding server.
	// +kubebuilder:default="ghcr.io/huggingface/text-embeddings-inference:cpu-latest"
	// +optional
	Image string `json:"image,omitempty"`
	// ImagePullPolicy of the container.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +kubebuilder:default="IfNotPresent"
	// +optional
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	// Port the server listens on, and the Service's.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=8080
	Port int32 `json:"port,omitempty"`
	// Args are extra arguments of the server.
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`
	// Env of the server container.
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []NameValue `json:"env,omitempty"`
	// Resources of the server container.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// ModelCache keeps downloaded models on a persistent volume.
	// +optional
	ModelCache *ModelCacheConfig `json:"modelCache,omitempty"`
	// PodTemplateSpec is merged into the server pod (strategic merge); its
	// container is named "embedding".
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	PodTemplateSpec *runtime.RawExtension `json:"podTemplateSpec,omitempty"`
	// ResourceOverrides add metadata to the StatefulSet, its pods, the
	// Service and the cache's volume claims.
	// +optional
	ResourceOverrides *EmbeddingResourceOverrides `json:"resourceOverrides,omitempty"`
	// Replicas of the StatefulSet.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
}

// ModelCacheConfig is the persistent volume models are downloaded to.
// +kubebuilder:pruning:PreserveUnknownFields
type ModelCacheConfig struct {
	// Enabled keeps the cache on a persistent volume claim.
	// +kubebuilder:default=true
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// StorageClassName of the volume claim; the cluster's default when
	// unset.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// Size of the volume claim, a quantity.
	// +kubebuilder:default="10Gi"
	// +optional
	Size string `json:"size,omitempty"`
	// AccessMode of the volume claim.
	// +kubebuilder:default="ReadWriteOnce"
	// +kubebuilder:validation:Enum=ReadWriteOnce;ReadWriteMany;ReadOnlyMany
	// +optional
	AccessMode string `json:"accessMode,omitempty"`
}

// EmbeddingResourceOverrides are labels and annotations for the children
// of an EmbeddingServer.
// +kubebuilder:pruning:PreserveUnknownFields
type EmbeddingResourceOverrides struct {
	// StatefulSet metadata, and its pod template's.
	// +optional
	StatefulSet *EmbeddingStatefulSetOverrides `json:"statefulSet,omitempty"`
	// Service metadata.
	// +optional
	Service *ResourceMetadataOverrides `json:"service,omitempty"`
	// PersistentVolumeClaim metadata of the model cache.
	// +optional
	PersistentVolumeClaim *ResourceMetadataOverrides `json:"persistentVolumeClaim,omitempty"`
}

// EmbeddingStatefulSetOverrides are metadata for the StatefulSet and its
// pods.
// +kubebuilder:pruning:PreserveUnknownFields
type EmbeddingStatefulSetOverrides struct {
	ResourceMetadataOverrides `json:",inline"`
	// PodTemplateMetadataOverrides are labels and annotations of the pods.
	// +optional
	PodTemplateMetadataOverrides *ResourceMetadataOverrides `json:"podTemplateMetadataOverrides,omitempty"`
}

// EmbeddingServerStatus is the observed state of an EmbeddingServer.
type EmbeddingServerStatus struct {
	// Conditions describe the server.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Phase summarises the server's state; Downloading while the model is
	// fetched.
	// +kubebuilder:validation:Enum=Pending;Downloading;Ready;Failed;Terminating
	// +optional
	Phase string `json:"phase,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// URL of the server inside the cluster.
	// +optional
	URL string `json:"url,omitempty"`
	// ReadyReplicas of the StatefulSet.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// EmbeddingServerList is a list of EmbeddingServers.
type EmbeddingServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the EmbeddingServers.
	Items []EmbeddingServer `json:"items"`
}
