package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mwc,categories=toolhive
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="References",type=integer,JSONPath=`.status.referenceCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPWebhookConfig is v1beta1.MCPWebhookConfig served as v1alpha1, the
// version ToolHive's manifests use.
type MCPWebhookConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec lists the webhooks. Fields hivekeeper does not model are
	// preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec v1beta1.MCPWebhookConfigSpec `json:"spec,omitempty"`
	// Status is written by hivekeeper's MCPWebhookConfig controller only.
	// +optional
	Status v1beta1.ConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// MCPWebhookConfigList is a list of MCPWebhookConfigs.
type MCPWebhookConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPWebhookConfigs.
	Items []MCPWebhookConfig `json:"items"`
}
