package apiserver

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1beta1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// The MCPTelemetryConfig schema rejects what ToolHive's operator would only
// report once the config is in use, defaults what ToolHive's schema
// defaults, and accepts ToolHive's own shape.
func TestTelemetryConfigSchema(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	th := env.Toolhive.ToolhiveV1beta1()
	secret := thv1beta1.SecretKeyRef{Name: "otel", Key: "token"}
	tracing := &thv1beta1.OpenTelemetryTracingConfig{Enabled: true}
	ca := func(name string) *thv1beta1.CABundleSource {
		return &thv1beta1.CABundleSource{ConfigMapRef: &thv1beta1.ConfigMapKeyRef{Name: name}}
	}
	for name, tc := range map[string]struct {
		otel *thv1beta1.TelemetryOTelConfig
		msg  string
	}{
		"header in both lists": {&thv1beta1.TelemetryOTelConfig{Headers: map[string]string{"Authorization": "x"},
			SensitiveHeaders: []thv1beta1.SensitiveHeader{{Name: "Authorization", SecretKeyRef: secret}}},
			"a header name cannot appear in both headers and sensitiveHeaders"},
		"endpoint without signals": {&thv1beta1.TelemetryOTelConfig{Enabled: true, Endpoint: "collector:4318",
			Tracing: &thv1beta1.OpenTelemetryTracingConfig{}}, "endpoint requires at least one of tracing or metrics"},
		"CA bundle without ConfigMap": {&thv1beta1.TelemetryOTelConfig{CABundleRef: &thv1beta1.CABundleSource{}},
			"caBundleRef.configMapRef is required"},
		"CA bundle and insecure": {&thv1beta1.TelemetryOTelConfig{Insecure: true, CABundleRef: ca("ca")},
			"caBundleRef cannot be set when insecure is true"},
		"CA bundle name too long": {&thv1beta1.TelemetryOTelConfig{CABundleRef: ca(strings.Repeat("c", 49))},
			"at most 48 characters"},
		"sampling rate": {&thv1beta1.TelemetryOTelConfig{Tracing: &thv1beta1.OpenTelemetryTracingConfig{SamplingRate: "2"}},
			"samplingRate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := th.MCPTelemetryConfigs(ns).Create(ctx(t), &thv1beta1.MCPTelemetryConfig{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"},
				Spec:       thv1beta1.MCPTelemetryConfigSpec{OpenTelemetry: tc.otel},
			}, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("create error = %v, want Invalid naming %q", err, tc.msg)
			}
		})
	}

	got, err := th.MCPTelemetryConfigs(ns).Create(ctx(t), &thv1beta1.MCPTelemetryConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "good"},
		Spec: thv1beta1.MCPTelemetryConfigSpec{
			OpenTelemetry: &thv1beta1.TelemetryOTelConfig{Enabled: true, Endpoint: "collector:4318", Tracing: tracing,
				Headers: map[string]string{"X-Tenant": "a"}, SensitiveHeaders: []thv1beta1.SensitiveHeader{{Name: "Authorization", SecretKeyRef: secret}},
				CABundleRef: ca(strings.Repeat("c", 48))},
			Prometheus: &thv1beta1.PrometheusConfig{Enabled: true, MetricsOnTransportPort: ptr.To(false)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	// (useLegacyAttributes defaults to true too, but a Go client always
	// sends it; the conformance table's manifests leave it out.)
	o := got.Spec.OpenTelemetry
	if o.Tracing.SamplingRate != "0.05" || o.CABundleRef.ConfigMapRef.Key != "ca.crt" {
		t.Errorf("defaults: samplingRate %q CA key %q; want 0.05 ca.crt", o.Tracing.SamplingRate, o.CABundleRef.ConfigMapRef.Key)
	}

	// A service name is an element of OTEL_RESOURCE_ATTRIBUTES.
	_, err = th.MCPServers(ns).Create(ctx(t), &thv1beta1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "comma"},
		Spec: thv1beta1.MCPServerSpec{Image: "img",
			TelemetryConfigRef: &thv1beta1.TelemetryConfigReference{Name: "good", ServiceName: "a,b"}},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "serviceName") {
		t.Errorf("serviceName with a comma: %v, want Invalid", err)
	}
}
