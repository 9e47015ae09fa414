package workload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

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

// validateTelemetryConfig returns every problem of an MCPTelemetryConfig
// that would otherwise only show once a proxy uses it. The schema rejects
// most of them on admission; they are checked again for configs stored
// before it did. The rest the schema cannot express: header names and
// values an HTTP client refuses to send (the exporter would fail on every
// export), and sensitive headers whose env variables would share a name
// (the pod would silently keep only one of them).
func validateTelemetryConfig(c *thv1.MCPTelemetryConfig) []string {
	o := c.Spec.OpenTelemetry
	if o == nil {
		return nil
	}
	const p = "spec.openTelemetry"
	var errs []string
	if o.Endpoint != "" && (o.Tracing == nil || !o.Tracing.Enabled) && (o.Metrics == nil || !o.Metrics.Enabled) {
		errs = append(errs, p+".endpoint: requires at least one of tracing or metrics to be enabled")
	}
	headers := make([]string, 0, len(o.Headers))
	for h := range o.Headers {
		headers = append(headers, h)
	}
	slices.Sort(headers)
	for _, h := range headers {
		if !isHeaderName(h) {
			errs = append(errs, fmt.Sprintf("%s.headers: %q is not an HTTP header name", p, h))
		}
		if !isHeaderValue(o.Headers[h]) {
			errs = append(errs, fmt.Sprintf("%s.headers[%s]: the value contains a control character", p, h))
		}
	}
	envs := map[string]string{}
	for i, sh := range o.SensitiveHeaders {
		at := fmt.Sprintf("%s.sensitiveHeaders[%d]", p, i)
		switch {
		case !isHeaderName(sh.Name):
			errs = append(errs, fmt.Sprintf("%s.name: %q is not an HTTP header name", at, sh.Name))
		case hasKey(o.Headers, sh.Name):
			errs = append(errs, fmt.Sprintf("%s.name: header %q is also in headers", at, sh.Name))
		}
		if env := OTelHeaderEnvName(sh.Name); envs[env] != "" {
			errs = append(errs, fmt.Sprintf("%s.name: %q and %q both become env variable %s", at, envs[env], sh.Name, env))
		} else {
			envs[env] = sh.Name
		}
		if sh.SecretKeyRef.Name == "" || sh.SecretKeyRef.Key == "" {
			errs = append(errs, at+".secretKeyRef: name and key are required")
		}
	}
	if t := o.Tracing; t != nil && t.SamplingRate != "" {
		if r, err := strconv.ParseFloat(t.SamplingRate, 64); err != nil || r < 0 || r > 1 {
			errs = append(errs, fmt.Sprintf("%s.tracing.samplingRate: %q is not a number from 0 to 1", p, t.SamplingRate))
		}
	}
	if ca := o.CABundleRef; ca != nil {
		switch {
		case ca.ConfigMapRef == nil || ca.ConfigMapRef.Name == "":
			errs = append(errs, p+".caBundleRef.configMapRef.name: required")
		case len(ca.ConfigMapRef.Name) > thv1.MaxTelemetryCABundleConfigMapLen:
			errs = append(errs, fmt.Sprintf("%s.caBundleRef.configMapRef.name: %q is longer than %d characters (it is part of the volume name %s<name>)",
				p, ca.ConfigMapRef.Name, thv1.MaxTelemetryCABundleConfigMapLen, thv1.TelemetryCABundleVolumePrefix))
		}
		if o.Insecure {
			errs = append(errs, p+".caBundleRef: cannot be set when insecure is true")
		}
	}
	return errs
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// isHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// isHeaderValue reports whether s may be sent as an HTTP field value: no
// control characters other than horizontal tab.
func isHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
