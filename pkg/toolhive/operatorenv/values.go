package operatorenv

import (
	"fmt"
	"slices"
	"strings"
)

// ValueKind is how a chart value holds a flag's argument.
type ValueKind int

const (
	// String is the argument as it is.
	String ValueKind = iota
	// List is a comma-separated argument as a list of strings.
	List
	// Bool is true or false; a flag given without an argument is true.
	Bool
)

// ChartValue is the value of hivekeeper's chart (deploy/charts/hivekeeper)
// whose template renders one of the flags Flags returns.
type ChartValue struct {
	// Flag is the flag, without its argument.
	Flag string
	// Path is the value's dotted path in the chart's values.yaml.
	Path string
	Kind ValueKind
}

// ChartValues lists, for every flag Flags can return, the chart value that
// renders it, in the order of the chart's values.yaml.
var ChartValues = []ChartValue{
	{Flag: "--toolhive-release", Path: "toolhiveRelease"},
	{Flag: "--runner-image", Path: "runnerImage"},
	{Flag: "--vmcp-image", Path: "vmcpImage"},
	{Flag: "--registry-api-image", Path: "registryAPIImage"},
	{Flag: "--default-image-pull-secrets", Path: "defaultImagePullSecrets", Kind: List},
	{Flag: "--proxy-host", Path: "proxyHost"},
	{Flag: "--toolhive-usage-metrics", Path: "usageMetrics", Kind: Bool},
	{Flag: "--toolhive-skip-update-check", Path: "skipUpdateCheck", Kind: Bool},
	{Flag: "--toolhive-instance-id-namespace", Path: "instanceIDNamespace"},
	{Flag: "--default-redis-addr", Path: "defaultRedis.addr"},
	{Flag: "--default-redis-secret-name", Path: "defaultRedis.existingSecret"},
	{Flag: "--default-redis-secret-key", Path: "defaultRedis.existingSecretKey"},
	{Flag: "--default-redis-tls-enabled", Path: "defaultRedis.tls.enabled", Kind: Bool},
	{Flag: "--default-redis-tls-ca-secret-name", Path: "defaultRedis.tls.caCertSecretRef.name"},
	{Flag: "--default-redis-tls-ca-secret-key", Path: "defaultRedis.tls.caCertSecretRef.key"},
	{Flag: "--namespaces", Path: "watchNamespaces", Kind: List},
	{Flag: "--log-format", Path: "logging.format"},
}

// Values turns flags (as Flags returns them, "--name=value" or "--name")
// into the values of hivekeeper's chart that render them: a tree of maps
// ready to be written as a values file. A flag without a chart value is an
// error, so a flag added to Variables cannot be silently left out of what
// a user installs.
func Values(flags []string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range flags {
		name, arg, hasArg := strings.Cut(f, "=")
		i := slices.IndexFunc(ChartValues, func(v ChartValue) bool { return v.Flag == name })
		if i < 0 {
			return nil, fmt.Errorf("%s has no value in hivekeeper's chart", name)
		}
		cv := ChartValues[i]
		var v any
		switch cv.Kind {
		case List:
			var items []any
			for _, s := range strings.Split(arg, ",") {
				if s = strings.TrimSpace(s); s != "" {
					items = append(items, s)
				}
			}
			v = items
		case Bool:
			v = !hasArg || arg == "true"
		default:
			v = arg
		}
		set(out, strings.Split(cv.Path, "."), v)
	}
	return out, nil
}

// set puts v at path in the tree m, making the maps on the way.
func set(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}
