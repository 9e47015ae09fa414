package workload

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

func telemetryConfig(name string, otel *thv1.TelemetryOTelConfig, prom *thv1.PrometheusConfig) *thv1.MCPTelemetryConfig {
	return &thv1.MCPTelemetryConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Generation: 1, ResourceVersion: "7"},
		Spec:       thv1.MCPTelemetryConfigSpec{OpenTelemetry: otel, Prometheus: prom},
	}
}

func sensitive(name, secret, key string) thv1.SensitiveHeader {
	return thv1.SensitiveHeader{Name: name, SecretKeyRef: thv1.SecretKeyRef{Name: secret, Key: key}}
}

func caBundle(name string) *thv1.CABundleSource {
	return &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: name}}
}

// What the runner would refuse when it starts, or its exporter on every
// export, is a validation error of the config instead: ToolHive's own
// rules (which the schema also enforces) and what only a check can see.
func TestValidateTelemetryConfig(t *testing.T) {
	tracing := &thv1.OpenTelemetryTracingConfig{Enabled: true, SamplingRate: "0.1"}
	for _, tc := range []struct {
		name string
		otel *thv1.TelemetryOTelConfig
		want []string // substrings, one per error
	}{
		{"no OpenTelemetry", nil, nil},
		{"full", &thv1.TelemetryOTelConfig{Enabled: true, Endpoint: "collector:4318", Tracing: tracing,
			Metrics: &thv1.OpenTelemetryMetricsConfig{Enabled: true}, Headers: map[string]string{"X-Tenant": "a\tb"},
			SensitiveHeaders: []thv1.SensitiveHeader{sensitive("Authorization", "otel", "token"), sensitive("X-API-Key", "otel", "key")},
			CABundleRef:      caBundle("collector-ca")}, nil},
		{"disabled without endpoint", &thv1.TelemetryOTelConfig{Insecure: true}, nil},
		{"endpoint without signals", &thv1.TelemetryOTelConfig{Enabled: true, Endpoint: "collector:4318",
			Tracing: &thv1.OpenTelemetryTracingConfig{}, Metrics: &thv1.OpenTelemetryMetricsConfig{}},
			[]string{"spec.openTelemetry.endpoint: requires at least one of tracing or metrics"}},
		{"bad header name and value", &thv1.TelemetryOTelConfig{Headers: map[string]string{"X Tenant": "a", "X-Ok": "b\r\nInjected: c"}},
			[]string{`spec.openTelemetry.headers: "X Tenant" is not an HTTP header name`, "headers[X-Ok]: the value contains a control character"}},
		{"header in both lists", &thv1.TelemetryOTelConfig{Headers: map[string]string{"Authorization": "Bearer x"},
			SensitiveHeaders: []thv1.SensitiveHeader{sensitive("Authorization", "otel", "token")}},
			[]string{`sensitiveHeaders[0].name: header "Authorization" is also in headers`}},
		{"env name collision", &thv1.TelemetryOTelConfig{SensitiveHeaders: []thv1.SensitiveHeader{
			sensitive("X-Api-Key", "a", "k"), sensitive("x_api_key", "b", "k")}},
			[]string{`sensitiveHeaders[1].name: "X-Api-Key" and "x_api_key" both become env variable TOOLHIVE_OTEL_HEADER_X_API_KEY`}},
		{"sensitive header without secret", &thv1.TelemetryOTelConfig{SensitiveHeaders: []thv1.SensitiveHeader{sensitive("", "", "k")}},
			[]string{`sensitiveHeaders[0].name: "" is not an HTTP header name`, "sensitiveHeaders[0].secretKeyRef: name and key are required"}},
		{"sampling rate", &thv1.TelemetryOTelConfig{Tracing: &thv1.OpenTelemetryTracingConfig{SamplingRate: "1.5"}},
			[]string{`tracing.samplingRate: "1.5" is not a number from 0 to 1`}},
		{"CA bundle without ConfigMap", &thv1.TelemetryOTelConfig{CABundleRef: &thv1.CABundleSource{}},
			[]string{"caBundleRef.configMapRef.name: required"}},
		{"CA bundle name too long and insecure", &thv1.TelemetryOTelConfig{Insecure: true, CABundleRef: caBundle(strings.Repeat("c", 49))},
			[]string{"is longer than 48 characters", "caBundleRef: cannot be set when insecure is true"}},
		{"longest CA bundle name", &thv1.TelemetryOTelConfig{CABundleRef: caBundle(strings.Repeat("c", 48))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateTelemetryConfig(telemetryConfig("t", tc.otel, nil))
			if len(errs) != len(tc.want) {
				t.Fatalf("errors = %q, want %d", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestTelemetryConfigControllerListsReferrersOfBothKinds(t *testing.T) {
	cfg := telemetryConfig("curated", &thv1.TelemetryOTelConfig{Enabled: true, Endpoint: "collector:4318",
		Metrics: &thv1.OpenTelemetryMetricsConfig{Enabled: true}}, nil)
	testProxyConfigController(t, TelemetryConfigs, cfg, func(s *thv1.MCPServerSpec, p *thv1.MCPRemoteProxySpec) {
		s.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "curated"}
		p.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "curated", ServiceName: "remote"}
	})
}
