package wiring

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
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
			errs := ValidateTelemetryConfig(telemetryConfig("t", tc.otel, nil))
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

// The RunConfig's telemetry_config is what ToolHive's operator writes for
// the same config and reference; the env, volume and mount are its
// Deployment's.
func TestTelemetryWiring(t *testing.T) {
	full := &thv1.TelemetryOTelConfig{
		Enabled: true, Endpoint: "https://collector.monitoring:4318", Headers: map[string]string{"X-Tenant": "a"},
		SensitiveHeaders:    []thv1.SensitiveHeader{sensitive("x-api-key", "otel", "key")},
		ResourceAttributes:  map[string]string{"deployment.environment": "prod"},
		Tracing:             &thv1.OpenTelemetryTracingConfig{Enabled: true, SamplingRate: "0.50"},
		Metrics:             &thv1.OpenTelemetryMetricsConfig{Enabled: true},
		UseLegacyAttributes: true,
		CABundleRef:         &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "collector-ca", Key: "bundle.pem"}},
	}
	for _, tc := range []struct {
		name    string
		otel    *thv1.TelemetryOTelConfig
		prom    *thv1.PrometheusConfig
		service string
		want    string
		env     []string // name=value, or name<-secret/key
		volumes string
		noRef   bool
	}{
		{name: "no reference", otel: full, noRef: true},
		{name: "full", otel: full, service: "fetch-svc",
			want: `{"endpoint":"collector.monitoring:4318","serviceName":"fetch-svc","tracingEnabled":true,"metricsEnabled":true,` +
				`"samplingRate":"0.5","headers":{"X-Tenant":"a"},"customAttributes":{"deployment.environment":"prod"},` +
				`"useLegacyAttributes":true,"caCertPath":"/config/certs/otel/collector-ca/bundle.pem"}`,
			env:     []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=fetch-svc,service.namespace=" + testNS, "TOOLHIVE_OTEL_HEADER_X_API_KEY<-otel/key"},
			volumes: "otel-ca-bundle-collector-ca:collector-ca[bundle.pem]@/config/certs/otel/collector-ca"},
		// Disabled, the OTLP settings are left out but the CA bundle is
		// still mounted and named, and the header env still set.
		{name: "disabled", otel: &thv1.TelemetryOTelConfig{Endpoint: "collector:4318", Insecure: true,
			Tracing: &thv1.OpenTelemetryTracingConfig{Enabled: true, SamplingRate: "1"}, UseLegacyAttributes: true,
			SensitiveHeaders: []thv1.SensitiveHeader{sensitive("Authorization", "otel", "token")}, CABundleRef: caBundle("ca")},
			want:    `{"serviceName":"fetch","tracingEnabled":false,"metricsEnabled":false,"useLegacyAttributes":false,"caCertPath":"/config/certs/otel/ca/ca.crt"}`,
			env:     []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=fetch,service.namespace=" + testNS, "TOOLHIVE_OTEL_HEADER_AUTHORIZATION<-otel/token"},
			volumes: "otel-ca-bundle-ca:ca[ca.crt]@/config/certs/otel/ca"},
		{name: "prometheus only", prom: &thv1.PrometheusConfig{Enabled: true, MetricsOnTransportPort: ptr.To(false)},
			want: `{"serviceName":"fetch","tracingEnabled":false,"metricsEnabled":false,"enablePrometheusMetricsPath":true,"metricsOnTransportPort":false,"useLegacyAttributes":false}`,
			env:  []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=fetch,service.namespace=" + testNS}},
		{name: "tracing without a rate", otel: &thv1.TelemetryOTelConfig{Enabled: true, Endpoint: "http://c:4317",
			Tracing: &thv1.OpenTelemetryTracingConfig{Enabled: true}},
			want: `{"endpoint":"c:4317","serviceName":"fetch","tracingEnabled":true,"metricsEnabled":false,"useLegacyAttributes":false}`,
			env:  []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=fetch,service.namespace=" + testNS}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ref *thv1.TelemetryConfigReference
			if !tc.noRef {
				ref = &thv1.TelemetryConfigReference{Name: "t", ServiceName: tc.service}
			}
			w, err := Telemetry(telemetryConfig("t", tc.otel, tc.prom), ref, "fetch", testNS)
			if err != nil {
				t.Fatal(err)
			}
			rc := &schema.RunConfig{}
			w.ApplyTo(rc)
			got := ""
			if rc.TelemetryConfig != nil {
				b, err := json.Marshal(rc.TelemetryConfig)
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
			}
			if got != tc.want {
				t.Errorf("telemetry_config\n got %s\nwant %s", got, tc.want)
			}
			var env []string
			for _, e := range w.Env {
				if e.ValueFrom != nil {
					env = append(env, e.Name+"<-"+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
				} else {
					env = append(env, e.Name+"="+e.Value)
				}
			}
			if !slices.Equal(env, tc.env) {
				t.Errorf("env %q, want %q", env, tc.env)
			}
			var vols string
			if len(w.Volumes) == 1 && len(w.Mounts) == 1 && w.Mounts[0].ReadOnly && w.Mounts[0].Name == w.Volumes[0].Name {
				cm := w.Volumes[0].ConfigMap
				vols = fmt.Sprintf("%s:%s[%s]@%s", w.Volumes[0].Name, cm.Name, cm.Items[0].Key, w.Mounts[0].MountPath)
			} else if len(w.Volumes)+len(w.Mounts) > 0 {
				vols = fmt.Sprintf("%+v %+v", w.Volumes, w.Mounts)
			}
			if vols != tc.volumes {
				t.Errorf("volumes %q, want %q", vols, tc.volumes)
			}
		})
	}
}

// A sensitive header's value is never in the RunConfig, and a service
// name that would break OTEL_RESOURCE_ATTRIBUTES is an invalid spec.
func TestTelemetryKeepsSecretsOutAndRefusesCommas(t *testing.T) {
	cfg := telemetryConfig("t", &thv1.TelemetryOTelConfig{Enabled: true, SensitiveHeaders: []thv1.SensitiveHeader{sensitive("Authorization", "otel", "token")}}, nil)
	w, err := Telemetry(cfg, &thv1.TelemetryConfigReference{Name: "t"}, "fetch", testNS)
	if err != nil || w.RunConfig.Headers != nil {
		t.Fatalf("headers %v, err %v", w.RunConfig.Headers, err)
	}
	_, err = Telemetry(cfg, &thv1.TelemetryConfigReference{Name: "t", ServiceName: "a,b"}, "fetch", testNS)
	var invalid *InvalidSpecError
	if !errors.As(err, &invalid) || !strings.Contains(invalid.Message, "spec.telemetryConfigRef.serviceName") {
		t.Errorf("err = %v", err)
	}
}
