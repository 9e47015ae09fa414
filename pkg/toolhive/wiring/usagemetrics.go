package wiring

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
)

// The variables through which ToolHive's operator, from v0.66.0 on,
// passes its own usage-metrics settings to the workloads it deploys.
const (
	EnvSkipUpdateCheck     = "TOOLHIVE_SKIP_UPDATE_CHECK"
	EnvUsageMetricsEnabled = "TOOLHIVE_USAGE_METRICS_ENABLED"
	EnvAnonymousID         = "TOOLHIVE_ANONYMOUS_ID"
)

// UsageMetrics are ToolHive's operator's usage-metrics settings, which its
// environment sets: they decide whether the runner's usage-metrics
// middleware is in a RunConfig, and (release.WorkloadUsageMetrics) what
// each workload container is told.
type UsageMetrics struct {
	// SkipUpdateCheck: TOOLHIVE_SKIP_UPDATE_CHECK=true, or a CI variable,
	// on the operator. It opts out of update checks and usage metrics.
	SkipUpdateCheck bool
	// Disabled: TOOLHIVE_USAGE_METRICS_ENABLED=false on the operator.
	Disabled bool
	// AnonymousID is the installation's instance id, shared by every
	// workload's usage reports; empty when there is none (opted out, or
	// it could not be read).
	AnonymousID string
}

// Middleware says whether a RunConfig gets the runner's usage-metrics
// middleware: unless the operator opted out or turned them off.
func (u UsageMetrics) Middleware() bool { return !u.SkipUpdateCheck && !u.Disabled }

// WorkloadEnv are the variables a workload container gets for them at
// release r, in ToolHive's operator's order: each opt-out the operator
// has, or else the installation's id. RequiredEnv adds each only when the
// container does not set it already.
func (u UsageMetrics) WorkloadEnv(r release.Release) []corev1.EnvVar {
	if !r.WorkloadUsageMetrics {
		return nil
	}
	var env []corev1.EnvVar
	if u.SkipUpdateCheck {
		env = append(env, corev1.EnvVar{Name: EnvSkipUpdateCheck, Value: "true"})
	}
	if u.Disabled {
		env = append(env, corev1.EnvVar{Name: EnvUsageMetricsEnabled, Value: "false"})
	}
	if env == nil && u.AnonymousID != "" {
		env = append(env, corev1.EnvVar{Name: EnvAnonymousID, Value: u.AnonymousID})
	}
	return env
}
