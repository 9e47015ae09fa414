// Package operatorenv translates the environment of ToolHive's operator
// (its operator-wide settings, which its Helm chart renders from values)
// into the hivekeeper flags that keep the same behaviour, so a cluster
// switched from one to the other writes the same children. Every variable
// ToolHive's operator reads at the pinned release is in Variables, with
// its flag or the reason it has none; a test scans ToolHive's source and
// fails on a variable missing here.
package operatorenv

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Variable is one environment variable ToolHive's operator reads.
type Variable struct {
	// Name is the variable.
	Name string
	// Flag is hivekeeper's flag of the same meaning; empty when none.
	Flag string
	// Why says why there is no flag, or how the value maps to it.
	Why string
}

// ciVariables are the variables whose presence makes ToolHive's operator
// skip its update check and, with it, the usage-metrics middleware.
var ciVariables = []string{"GITHUB_ACTIONS", "CI", "GITLAB_CI", "CIRCLECI", "TRAVIS", "BUILDKITE", "DRONE", "CONTINUOUS_INTEGRATION"}

// Variables lists every variable ToolHive's operator reads, in the order
// of its chart's Deployment, then the rest.
var Variables = []Variable{
	{Name: "GOMEMLIMIT", Why: "Go's runtime: the same variable works for hivekeeper's process (chart value extraEnv)"},
	{Name: "GOGC", Why: "Go's runtime: the same variable works for hivekeeper's process; hivekeeper's own default is 50"},
	{Name: "UNSTRUCTURED_LOGS", Flag: "--log-format", Why: "false (the chart's only value) is JSON logs: --log-format=json"},
	{Name: "POD_NAMESPACE", Why: "the operator's own namespace; hivekeeper reads the same variable for its leader-election Lease"},
	{Name: "TOOLHIVE_USE_CONFIGMAP", Why: "always true in the chart: hivekeeper always writes RunConfig ConfigMaps"},
	{Name: "ENABLE_EXPERIMENTAL_FEATURES", Why: "rendered by the chart but read by no code of ToolHive's operator (v0.63.0 to v0.66.0)"},
	{Name: "TOOLHIVE_ENABLE_STORAGE_VERSION_MIGRATOR", Why: "hivekeeper runs no storage-version migrator: its CRDs store v1beta1, and the migration steps are in docs/migration.md"},
	{Name: "WATCH_NAMESPACE", Flag: "--namespaces", Why: "the same comma-separated list"},
	{Name: "TOOLHIVE_RUNNER_IMAGE", Flag: "--runner-image"},
	{Name: "VMCP_IMAGE", Flag: "--vmcp-image"},
	{Name: "TOOLHIVE_PROXY_HOST", Flag: "--proxy-host"},
	{Name: "TOOLHIVE_REGISTRY_API_IMAGE", Flag: "--registry-api-image"},
	{Name: "TOOLHIVE_DEFAULT_IMAGE_PULL_SECRETS", Flag: "--default-image-pull-secrets", Why: "the same comma-separated list"},
	{Name: "TOOLHIVE_DEFAULT_REDIS_ADDR", Flag: "--default-redis-addr"},
	{Name: "TOOLHIVE_DEFAULT_REDIS_SECRET_NAME", Flag: "--default-redis-secret-name"},
	{Name: "TOOLHIVE_DEFAULT_REDIS_SECRET_KEY", Flag: "--default-redis-secret-key"},
	{Name: "TOOLHIVE_DEFAULT_REDIS_TLS_ENABLED", Flag: "--default-redis-tls-enabled", Why: "\"true\" turns it on"},
	{Name: "TOOLHIVE_DEFAULT_REDIS_TLS_CA_SECRET_NAME", Flag: "--default-redis-tls-ca-secret-name"},
	{Name: "TOOLHIVE_DEFAULT_REDIS_TLS_CA_SECRET_KEY", Flag: "--default-redis-tls-ca-secret-key"},
	{Name: "TOOLHIVE_USAGE_METRICS_ENABLED", Flag: "--toolhive-usage-metrics", Why: "\"false\" leaves the usage-metrics middleware out of every RunConfig and (v0.66.0) is passed to the workloads: --toolhive-usage-metrics=false"},
	{Name: "TOOLHIVE_SKIP_UPDATE_CHECK", Flag: "--toolhive-skip-update-check", Why: "\"true\" leaves the usage-metrics middleware out and (v0.66.0) is passed to the workloads: --toolhive-skip-update-check=true; hivekeeper makes no update check"},
	{Name: "CI", Flag: "--toolhive-skip-update-check", Why: "any CI variable (" + strings.Join(ciVariables, ", ") + ") set counts as TOOLHIVE_SKIP_UPDATE_CHECK=true: --toolhive-skip-update-check=true"},
	{Name: "KUBECONFIG", Flag: "--kubeconfig", Why: "controller-runtime's; the chart sets none (in-cluster)"},
}

// Lookup returns the entry of a variable, with every CI variable under
// "CI".
func Lookup(name string) (Variable, bool) {
	if slices.Contains(ciVariables, name) {
		name = "CI"
	}
	i := slices.IndexFunc(Variables, func(v Variable) bool { return v.Name == name })
	if i < 0 {
		return Variable{}, false
	}
	return Variables[i], true
}

// Flags returns the hivekeeper flags that keep the operator-wide settings
// of a ToolHive operator run with env (its container's environment as
// NAME=value), and the variables set that have no flag (with why), so a
// caller can say what it left as it is. A variable hivekeeper does not
// know is an error: its meaning is unknown, so no switch can promise it.
// Flags whose value equals hivekeeper's default are still given, so the
// result does not depend on hivekeeper's defaults.
func Flags(env []string) (flags []string, unmapped []Variable, err error) {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var unknown []string
	usageMetrics, skipUpdateCheck := true, false
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		v := vars[k]
		entry, ok := Lookup(k)
		switch {
		case !ok:
			unknown = append(unknown, k)
		case k == "TOOLHIVE_USAGE_METRICS_ENABLED":
			usageMetrics = v != "false"
		case k == "TOOLHIVE_SKIP_UPDATE_CHECK":
			skipUpdateCheck = skipUpdateCheck || strings.EqualFold(v, "true")
		case entry.Name == "CI":
			skipUpdateCheck = skipUpdateCheck || v != ""
		case entry.Flag == "--default-redis-tls-enabled":
			if v == "true" {
				flags = append(flags, entry.Flag)
			}
		case entry.Flag == "--log-format":
			if v == "false" {
				flags = append(flags, "--log-format=json")
			}
		case entry.Flag == "--kubeconfig":
			// where the operator connects is not an operator-wide setting
		case entry.Flag != "":
			if v != "" {
				flags = append(flags, entry.Flag+"="+v)
			}
		default:
			unmapped = append(unmapped, entry)
		}
	}
	if len(unknown) > 0 {
		return nil, nil, fmt.Errorf("ToolHive operator variables hivekeeper does not know: %s", strings.Join(unknown, ", "))
	}
	flags = append(flags, fmt.Sprintf("--toolhive-usage-metrics=%t", usageMetrics), fmt.Sprintf("--toolhive-skip-update-check=%t", skipUpdateCheck))
	slices.Sort(flags)
	return flags, unmapped, nil
}

// ProcessVariables are variables ToolHive's operator does not read itself
// but its process does, through Go's runtime and standard library: they
// tune the process or say how it reaches the network, mean the same to
// hivekeeper's process, and change nothing it writes. A switch carries
// them to hivekeeper's container (chart value extraEnv) rather than
// refusing them as unknown.
var ProcessVariables = []Variable{
	{Name: "HTTP_PROXY", Why: "the proxy of outgoing HTTP connections (Go's net/http)"},
	{Name: "HTTPS_PROXY", Why: "the proxy of outgoing HTTPS connections, the API server's included (Go's net/http)"},
	{Name: "NO_PROXY", Why: "the hosts reached without the proxy (Go's net/http)"},
	{Name: "http_proxy", Why: "the lower-case form of HTTP_PROXY"},
	{Name: "https_proxy", Why: "the lower-case form of HTTPS_PROXY"},
	{Name: "no_proxy", Why: "the lower-case form of NO_PROXY"},
	{Name: "GOMAXPROCS", Why: "Go's runtime: how many threads run Go code at once"},
	{Name: "GODEBUG", Why: "Go's runtime and standard library settings"},
	{Name: "GOTRACEBACK", Why: "Go's runtime: how much a crash prints"},
	{Name: "TZ", Why: "the time zone of the process's clock (log time stamps)"},
}

// Process returns the entry of a variable of ProcessVariables.
func Process(name string) (Variable, bool) {
	i := slices.IndexFunc(ProcessVariables, func(v Variable) bool { return v.Name == name })
	if i < 0 {
		return Variable{}, false
	}
	return ProcessVariables[i], true
}
