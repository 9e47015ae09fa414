package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Limits of an OpenTelemetry CA bundle: the ConfigMap's name becomes part
// of a volume name (otel-ca-bundle-<name>), which is a DNS label of at most
// 63 characters.
const (
	TelemetryCABundleVolumePrefix    = "otel-ca-bundle-"
	MaxTelemetryCABundleConfigMapLen = 63 - len(TelemetryCABundleVolumePrefix)
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=mcpotel,categories=toolhive
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.openTelemetry.endpoint`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=='Valid')].status`
// +kubebuilder:printcolumn:name="Tracing",type=boolean,JSONPath=`.spec.openTelemetry.tracing.enabled`
// +kubebuilder:printcolumn:name="Metrics",type=boolean,JSONPath=`.spec.openTelemetry.metrics.enabled`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MCPTelemetryConfig is a telemetry setup (OTLP export, Prometheus
// metrics) that MCPServers and MCPRemoteProxies in its namespace share by
// reference (spec.telemetryConfigRef); each referrer names its own service.
type MCPTelemetryConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the OpenTelemetry and Prometheus configuration. Fields
	// hivekeeper does not model are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec MCPTelemetryConfigSpec `json:"spec,omitempty"`
	// Status is written by hivekeeper's MCPTelemetryConfig controller only.
	// +optional
	Status ConfigStatus `json:"status,omitempty"`
}

// MCPTelemetryConfigSpec is what the proxy runner exports and serves.
type MCPTelemetryConfigSpec struct {
	// OpenTelemetry is the OTLP export of traces and metrics.
	// +optional
	OpenTelemetry *TelemetryOTelConfig `json:"openTelemetry,omitempty"`
	// Prometheus serves metrics for scraping.
	// +optional
	Prometheus *PrometheusConfig `json:"prometheus,omitempty"`
}

// TelemetryOTelConfig is an OTLP exporter shared by every referrer. The
// service name is not here: each referrer sets its own
// (spec.telemetryConfigRef.serviceName).
//
// The rules below are the ones the runner (and ToolHive's operator) would
// otherwise only report once the config is in use. Fields hivekeeper does
// not model are preserved.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!has(self.headers) || !has(self.sensitiveHeaders) || self.sensitiveHeaders.all(sh, !(sh.name in self.headers))",message="a header name cannot appear in both headers and sensitiveHeaders"
// +kubebuilder:validation:XValidation:rule="!has(self.endpoint) || size(self.endpoint) == 0 || (has(self.tracing) && has(self.tracing.enabled) && self.tracing.enabled) || (has(self.metrics) && has(self.metrics.enabled) && self.metrics.enabled)",message="endpoint requires at least one of tracing or metrics to be enabled"
// +kubebuilder:validation:XValidation:rule="!has(self.caBundleRef) || has(self.caBundleRef.configMapRef)",message="caBundleRef.configMapRef is required"
// +kubebuilder:validation:XValidation:rule="!has(self.caBundleRef) || !has(self.insecure) || !self.insecure",message="caBundleRef cannot be set when insecure is true"
// +kubebuilder:validation:XValidation:rule="!has(self.caBundleRef) || !has(self.caBundleRef.configMapRef) || size(self.caBundleRef.configMapRef.name) <= 48",message="caBundleRef.configMapRef.name may have at most 48 characters (it is part of the volume name otel-ca-bundle-<name>)"
type TelemetryOTelConfig struct {
	// Enabled turns the OTLP export on. Off, the endpoint, headers,
	// attributes, tracing and metrics below are not used.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Endpoint of the OTLP collector, host:port (an http:// or https://
	// prefix is removed).
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Insecure exports over plain HTTP.
	// +kubebuilder:default=false
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// Headers are sent with every export. They are written into the
	// RunConfig ConfigMap: put credentials in sensitiveHeaders.
	// +optional
	Headers map[string]string `json:"headers,omitempty"`
	// SensitiveHeaders are headers whose values come from Secrets; they
	// reach the proxy container as environment variables from a
	// secretKeyRef and are never written into a ConfigMap.
	// +listType=map
	// +listMapKey=name
	// +optional
	SensitiveHeaders []SensitiveHeader `json:"sensitiveHeaders,omitempty"`
	// ResourceAttributes are added to every signal (deployment.environment,
	// ...). service.name is the referrer's.
	// +optional
	ResourceAttributes map[string]string `json:"resourceAttributes,omitempty"`
	// Metrics is the OTLP metrics export.
	// +optional
	Metrics *OpenTelemetryMetricsConfig `json:"metrics,omitempty"`
	// Tracing is the OTLP trace export.
	// +optional
	Tracing *OpenTelemetryTracingConfig `json:"tracing,omitempty"`
	// UseLegacyAttributes also emits the attribute names used before the
	// MCP semantic conventions.
	// +kubebuilder:default=true
	// +optional
	UseLegacyAttributes bool `json:"useLegacyAttributes"`
	// CABundleRef is a ConfigMap key with the CA certificates the collector's
	// TLS certificate is verified with; it is mounted into the proxy pod.
	// +optional
	CABundleRef *CABundleSource `json:"caBundleRef,omitempty"`
}

// SensitiveHeader is an OTLP header whose value is a Secret's key.
type SensitiveHeader struct {
	// Name of the header (Authorization, X-API-Key, ...).
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// SecretKeyRef is the Secret key holding the value.
	// +required
	SecretKeyRef SecretKeyRef `json:"secretKeyRef"`
}

// OpenTelemetryTracingConfig is the OTLP trace export.
type OpenTelemetryTracingConfig struct {
	// Enabled sends traces.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// SamplingRate is the share of traces sampled, 0.0 to 1.0.
	// +kubebuilder:default="0.05"
	// +kubebuilder:validation:Pattern=`^(0(\.\d+)?|1(\.0+)?)$`
	// +optional
	SamplingRate string `json:"samplingRate,omitempty"`
}

// OpenTelemetryMetricsConfig is the OTLP metrics export.
type OpenTelemetryMetricsConfig struct {
	// Enabled sends metrics.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// PrometheusConfig serves metrics for scraping.
// +kubebuilder:pruning:PreserveUnknownFields
type PrometheusConfig struct {
	// Enabled serves /metrics on the runner's diagnostics port.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// MetricsOnTransportPort also serves /metrics on the proxy port; unset
	// follows the runner's default.
	// +optional
	MetricsOnTransportPort *bool `json:"metricsOnTransportPort,omitempty"`
}

// TelemetryConfigReference names an MCPTelemetryConfig in the workload's
// namespace and the service name this workload reports under.
type TelemetryConfigReference struct {
	// Name of the MCPTelemetryConfig.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// ServiceName is this workload's OpenTelemetry service name; the
	// workload's own name when unset. Give each workload its own so that
	// their signals can be told apart. It is an element of the
	// comma-separated OTEL_RESOURCE_ATTRIBUTES, so it has no comma.
	// +kubebuilder:validation:Pattern=`^[^,]*$`
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MCPTelemetryConfigList is a list of MCPTelemetryConfigs.
type MCPTelemetryConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MCPTelemetryConfigs.
	Items []MCPTelemetryConfig `json:"items"`
}
