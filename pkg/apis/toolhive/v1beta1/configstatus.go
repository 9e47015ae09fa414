package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigStatus is the observed state of every config kind workloads
// reference by name (MCPOIDCConfig, MCPToolConfig): whether it is valid,
// the hash its referrers roll on, and who references it. One controller
// per kind writes it, and no other writer.
type ConfigStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ConfigHash changes exactly when the spec does; workloads copy it to
	// roll their pods when the config changes.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// ReferencingWorkloads are the workloads that reference this config,
	// sorted by kind then name. Owned by the config's controller alone.
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	// +optional
	ReferencingWorkloads []WorkloadReference `json:"referencingWorkloads,omitempty"`
	// ReferenceCount is len(referencingWorkloads).
	// +optional
	ReferenceCount int32 `json:"referenceCount,omitempty"`
	// Conditions: Valid and DeletionBlocked.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
