package wiring

import (
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// Telemetry wiring, with ToolHive's names and paths.
const (
	// EnvOTelResourceAttributes gives the OpenTelemetry SDK the workload's
	// service name and namespace as resource attributes.
	EnvOTelResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
	// TelemetryCAMountRoot is where an OTLP CA bundle ConfigMap is mounted:
	// /config/certs/otel/<configmap>, in a volume otel-ca-bundle-<configmap>.
	TelemetryCAMountRoot = "/config/certs/otel"
)

// TelemetryWiring is what an MCPTelemetryConfig reference contributes to
// a proxy: the RunConfig's telemetry_config, and the env, volume and
// mount it needs.
type TelemetryWiring struct {
	RunConfig *schema.TelemetryConfig
	Env       []corev1.EnvVar
	Volumes   []corev1.Volume
	Mounts    []corev1.VolumeMount
}

// Telemetry maps a referenced MCPTelemetryConfig and the workload's
// reference onto its proxy (cfg and ref may be nil: no telemetry), as
// ToolHive's operator does for the same manifest:
//
//   - the service name is the reference's, else the workload's name;
//   - OTLP settings count only while openTelemetry.enabled is true; the
//     endpoint loses an http:// or https:// prefix (the exporter wants
//     host:port), the sampling rate is rewritten as the runner formats a
//     number, resource attributes become custom attributes;
//   - Prometheus settings count whether or not OTLP is enabled;
//   - the CA bundle is mounted, and its path set, whenever it is named.
//
// Sensitive headers become env variables from their Secrets
// (OTelHeaderEnvName) and never enter the RunConfig; the env also sets
// OTEL_RESOURCE_ATTRIBUTES to the service name and namespace. A service
// name with a comma would break that list, and the runner with it: it is
// an InvalidSpecError.
func Telemetry(cfg *thv1.MCPTelemetryConfig, ref *thv1.TelemetryConfigReference, workload, namespace string) (TelemetryWiring, error) {
	if cfg == nil || ref == nil {
		return TelemetryWiring{}, nil
	}
	service := ref.ServiceName
	if strings.Contains(service, ",") {
		return TelemetryWiring{}, &InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec,
			Message: fmt.Sprintf("spec.telemetryConfigRef.serviceName %q: a service name may not contain a comma", service)}
	}
	if service == "" {
		service = workload
	}
	rc := &schema.TelemetryConfig{ServiceName: service}
	o := cfg.Spec.OpenTelemetry
	if o != nil && o.Enabled {
		rc.Endpoint = strings.TrimPrefix(strings.TrimPrefix(o.Endpoint, "https://"), "http://")
		rc.Insecure = o.Insecure
		rc.Headers = maps.Clone(o.Headers)
		rc.CustomAttributes = maps.Clone(o.ResourceAttributes)
		rc.UseLegacyAttributes = o.UseLegacyAttributes
		if t := o.Tracing; t != nil {
			rc.TracingEnabled = t.Enabled
			if r, err := strconv.ParseFloat(t.SamplingRate, 64); err == nil {
				rc.SamplingRate = strconv.FormatFloat(min(max(r, 0), 1), 'f', -1, 64)
			}
		}
		if m := o.Metrics; m != nil {
			rc.MetricsEnabled = m.Enabled
		}
	}
	if p := cfg.Spec.Prometheus; p != nil {
		rc.EnablePrometheusMetricsPath = p.Enabled
		if p.MetricsOnTransportPort != nil {
			v := *p.MetricsOnTransportPort
			rc.MetricsOnTransportPort = &v
		}
	}
	w := TelemetryWiring{RunConfig: rc, Env: []corev1.EnvVar{{
		Name: EnvOTelResourceAttributes, Value: fmt.Sprintf("service.name=%s,service.namespace=%s", service, namespace),
	}}}
	if o == nil {
		return w, nil
	}
	for _, sh := range o.SensitiveHeaders {
		w.Env = append(w.Env, SecretEnv(OTelHeaderEnvName(sh.Name), sh.SecretKeyRef.Name, sh.SecretKeyRef.Key))
	}
	if ca := o.CABundleRef; ca != nil && ca.ConfigMapRef != nil && ca.ConfigMapRef.Name != "" {
		cm := ca.ConfigMapRef
		key := cm.Key
		if key == "" {
			key = DefaultCAKey
		}
		name := thv1.TelemetryCABundleVolumePrefix + cm.Name
		mount := corev1.VolumeMount{Name: name, MountPath: path.Join(TelemetryCAMountRoot, cm.Name), ReadOnly: true}
		w.Volumes = []corev1.Volume{{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name},
			Items:                []corev1.KeyToPath{{Key: key, Path: key}},
			Optional:             cm.Optional,
		}}}}
		w.Mounts = []corev1.VolumeMount{mount}
		rc.CACertPath = path.Join(mount.MountPath, key)
	}
	return w, nil
}

// ApplyTo sets the RunConfig's telemetry_config.
func (w TelemetryWiring) ApplyTo(rc *schema.RunConfig) { rc.TelemetryConfig = w.RunConfig }

// EnvOTelHeaderPrefix starts the name of the proxy container's env
// variable that carries a sensitive OTLP header's value from its Secret:
// TOOLHIVE_OTEL_HEADER_<name, upper case, '-' as '_'>, as ToolHive's
// operator names it.
const EnvOTelHeaderPrefix = "TOOLHIVE_OTEL_HEADER_"

// OTelHeaderEnvName is the env variable that carries sensitive header
// name.
func OTelHeaderEnvName(name string) string {
	return EnvOTelHeaderPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}
