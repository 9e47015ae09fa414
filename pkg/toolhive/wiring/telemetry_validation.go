package wiring

import (
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/net/http/httpguts"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// ValidateTelemetryConfig returns every problem of an MCPTelemetryConfig
// that would otherwise only show once a proxy uses it. The schema rejects
// most of them on admission; they are checked again for configs stored
// before it did. The rest the schema cannot express: header names and
// values an HTTP client refuses to send (the exporter would fail on every
// export), and sensitive headers whose env variables would share a name
// (the pod would silently keep only one of them).
func ValidateTelemetryConfig(c *thv1.MCPTelemetryConfig) []string {
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
		if !httpguts.ValidHeaderFieldName(h) {
			errs = append(errs, fmt.Sprintf("%s.headers: %q is not an HTTP header name", p, h))
		}
		if !httpguts.ValidHeaderFieldValue(o.Headers[h]) {
			errs = append(errs, fmt.Sprintf("%s.headers[%s]: the value contains a control character", p, h))
		}
	}
	envs := map[string]string{}
	for i, sh := range o.SensitiveHeaders {
		at := fmt.Sprintf("%s.sensitiveHeaders[%d]", p, i)
		switch {
		case !httpguts.ValidHeaderFieldName(sh.Name):
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
