package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Failure policies of a webhook: what the runner does with a request when
// the webhook cannot be reached or answers with an error.
const (
	// WebhookFailurePolicyFail denies the request (fail closed).
	WebhookFailurePolicyFail = "fail"
	// WebhookFailurePolicyIgnore lets the request through (fail open).
	WebhookFailurePolicyIgnore = "ignore"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=mwc,categories=toolhive
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=='Valid')].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPWebhookConfig is a set of validating and mutating webhooks that
// MCPServers in its namespace share by reference (spec.webhookConfigRef):
// the proxy runner calls them on every MCP request, mutating ones first.
//
// ToolHive serves and stores this kind as v1alpha1 only. hivekeeper's CRD
// stores it as v1alpha1 too, so ToolHive's CRD can always be applied back,
// and serves v1beta1 beside it with the same schema for hivekeeper's own
// clients (hack/crdversions writes both versions).
type MCPWebhookConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec lists the webhooks. Fields hivekeeper does not model are
	// preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec MCPWebhookConfigSpec `json:"spec,omitempty"`
	// Status is written by hivekeeper's MCPWebhookConfig controller only.
	// +optional
	Status ConfigStatus `json:"status,omitempty"`
}

// MCPWebhookConfigSpec is the webhooks of a config; it has at least one.
// +kubebuilder:validation:XValidation:rule="(has(self.validating) ? size(self.validating) : 0) + (has(self.mutating) ? size(self.mutating) : 0) > 0",message="at least one validating or mutating webhook must be defined"
type MCPWebhookConfigSpec struct {
	// Validating webhooks allow or deny a request.
	// +optional
	Validating []WebhookSpec `json:"validating,omitempty"`
	// Mutating webhooks may rewrite a request before it is validated and
	// served.
	// +optional
	Mutating []WebhookSpec `json:"mutating,omitempty"`
}

// WebhookSpec is one webhook the runner calls.
// +kubebuilder:pruning:PreserveUnknownFields
type WebhookSpec struct {
	// Name identifies the webhook in the runner's logs and errors; unique
	// within its list.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// URL the runner POSTs each request to. https, unless
	// tlsConfig.insecureSkipVerify allows plain http.
	// +kubebuilder:validation:Format=uri
	// +required
	URL string `json:"url"`
	// Timeout of one call, a duration from 1s to 30s; the runner's default
	// (10s) when unset.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +optional
	Timeout *string `json:"timeout,omitempty"`
	// FailurePolicy is what happens to the request when the call fails:
	// fail denies it, ignore lets it through.
	// +kubebuilder:validation:Enum=fail;ignore
	// +kubebuilder:default=fail
	// +optional
	FailurePolicy string `json:"failurePolicy,omitempty"`
	// TLSConfig verifies the webhook's certificate and authenticates the
	// runner to it. Its Secrets are mounted into the proxy pod.
	// +optional
	TLSConfig *WebhookTLSConfig `json:"tlsConfig,omitempty"`
	// HMACSecretRef is a Secret key the runner signs each payload with
	// (X-Toolhive-Signature); the Secret is mounted into the proxy pod.
	// +optional
	HMACSecretRef *SecretKeyRef `json:"hmacSecretRef,omitempty"`
}

// WebhookTLSConfig is how the runner talks TLS to a webhook.
// +kubebuilder:pruning:PreserveUnknownFields
type WebhookTLSConfig struct {
	// CASecretRef is a Secret key with the PEM CA bundle the webhook's
	// certificate is verified with.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`
	// ClientCertSecretRef is a Secret key with the PEM client certificate
	// for mutual TLS; it needs clientKeySecretRef.
	// +optional
	ClientCertSecretRef *SecretKeyRef `json:"clientCertSecretRef,omitempty"`
	// ClientKeySecretRef is a Secret key with the client certificate's
	// private key.
	// +optional
	ClientKeySecretRef *SecretKeyRef `json:"clientKeySecretRef,omitempty"`
	// InsecureSkipVerify skips verifying the webhook's certificate and
	// allows a plain http URL. For development only.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// WebhookConfigReference names an MCPWebhookConfig in the workload's
// namespace.
type WebhookConfigReference struct {
	// Name of the MCPWebhookConfig.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPWebhookConfigList is a list of MCPWebhookConfigs.
type MCPWebhookConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPWebhookConfigs.
	Items []MCPWebhookConfig `json:"items"`
}
