package operatorenv

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The chart's defaults map to hivekeeper's defaults and ToolHive's images;
// a production install's settings each reach their flag; whatever turns
// ToolHive's usage metrics off turns hivekeeper's off.
func TestFlags(t *testing.T) {
	chart := []string{"GOMEMLIMIT=150MiB", "GOGC=75", "UNSTRUCTURED_LOGS=false", "TOOLHIVE_USE_CONFIGMAP=true",
		"ENABLE_EXPERIMENTAL_FEATURES=false", "TOOLHIVE_ENABLE_STORAGE_VERSION_MIGRATOR=true",
		"TOOLHIVE_RUNNER_IMAGE=r:1", "VMCP_IMAGE=v:1", "TOOLHIVE_PROXY_HOST=0.0.0.0", "TOOLHIVE_REGISTRY_API_IMAGE=reg:1"}
	for _, c := range []struct {
		name  string
		env   []string
		flags string
	}{
		{"chart defaults", chart, "--log-format=json --proxy-host=0.0.0.0 --registry-api-image=reg:1 --runner-image=r:1 --toolhive-skip-update-check=false --toolhive-usage-metrics=true --vmcp-image=v:1"},
		{"production", append(chart[:len(chart):len(chart)], "WATCH_NAMESPACE=a,b", "TOOLHIVE_DEFAULT_IMAGE_PULL_SECRETS=regcred,org",
			"TOOLHIVE_DEFAULT_REDIS_ADDR=redis:6379", "TOOLHIVE_DEFAULT_REDIS_SECRET_NAME=rs", "TOOLHIVE_DEFAULT_REDIS_SECRET_KEY=pw",
			"TOOLHIVE_DEFAULT_REDIS_TLS_ENABLED=true", "TOOLHIVE_DEFAULT_REDIS_TLS_CA_SECRET_NAME=ca", "TOOLHIVE_DEFAULT_REDIS_TLS_CA_SECRET_KEY=ca.crt"),
			"--default-image-pull-secrets=regcred,org --default-redis-addr=redis:6379 --default-redis-secret-key=pw --default-redis-secret-name=rs " +
				"--default-redis-tls-ca-secret-key=ca.crt --default-redis-tls-ca-secret-name=ca --default-redis-tls-enabled --log-format=json " +
				"--namespaces=a,b --proxy-host=0.0.0.0 --registry-api-image=reg:1 --runner-image=r:1 --toolhive-skip-update-check=false --toolhive-usage-metrics=true --vmcp-image=v:1"},
		// The three inputs of ToolHive's usage metrics each keep their own
		// flag: the workloads of v0.66.0 are told which one opted out.
		{"usage metrics off", []string{"TOOLHIVE_USAGE_METRICS_ENABLED=false"}, "--toolhive-skip-update-check=false --toolhive-usage-metrics=false"},
		{"update check skipped", []string{"TOOLHIVE_SKIP_UPDATE_CHECK=TRUE"}, "--toolhive-skip-update-check=true --toolhive-usage-metrics=true"},
		{"a CI variable", []string{"GITLAB_CI=1"}, "--toolhive-skip-update-check=true --toolhive-usage-metrics=true"},
		{"an empty CI variable", []string{"CI="}, "--toolhive-skip-update-check=false --toolhive-usage-metrics=true"},
		{"both opted out", []string{"TOOLHIVE_USAGE_METRICS_ENABLED=false", "CI=true"}, "--toolhive-skip-update-check=true --toolhive-usage-metrics=false"},
		{"usage metrics on", []string{"TOOLHIVE_USAGE_METRICS_ENABLED=true", "TOOLHIVE_SKIP_UPDATE_CHECK=false"}, "--toolhive-skip-update-check=false --toolhive-usage-metrics=true"},
	} {
		flags, _, err := Flags(c.env)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := strings.Join(flags, " "); got != c.flags {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.flags)
		}
	}
	if _, _, err := Flags([]string{"TOOLHIVE_NEW_SETTING=x"}); err == nil || !strings.Contains(err.Error(), "TOOLHIVE_NEW_SETTING") {
		t.Errorf("an unknown variable must be refused by name, got %v", err)
	}
	_, unmapped, _ := Flags(chart)
	var names []string
	for _, u := range unmapped {
		names = append(names, u.Name)
	}
	if got := strings.Join(names, " "); got != "ENABLE_EXPERIMENTAL_FEATURES GOGC GOMEMLIMIT TOOLHIVE_ENABLE_STORAGE_VERSION_MIGRATOR TOOLHIVE_USE_CONFIGMAP" {
		t.Errorf("unmapped %s", got)
	}
	for _, v := range Variables {
		if v.Flag == "" && v.Why == "" {
			t.Errorf("%s has neither a flag nor a reason", v.Name)
		}
	}
}

// Every flag a ToolHive operator's environment maps to has a value of
// hivekeeper's chart, and a production install's flags become the values
// file that renders them.
func TestValues(t *testing.T) {
	for _, v := range Variables {
		if v.Flag == "" || v.Flag == "--kubeconfig" {
			continue
		}
		if !slices.ContainsFunc(ChartValues, func(c ChartValue) bool { return c.Flag == v.Flag }) {
			t.Errorf("%s maps to %s, which has no chart value in ChartValues", v.Name, v.Flag)
		}
	}
	flags, _, err := Flags([]string{"TOOLHIVE_RUNNER_IMAGE=r:1", "UNSTRUCTURED_LOGS=false", "WATCH_NAMESPACE=a,b",
		"TOOLHIVE_DEFAULT_IMAGE_PULL_SECRETS=regcred", "TOOLHIVE_DEFAULT_REDIS_ADDR=redis:6379", "TOOLHIVE_DEFAULT_REDIS_TLS_ENABLED=true",
		"TOOLHIVE_DEFAULT_REDIS_TLS_CA_SECRET_NAME=ca", "TOOLHIVE_DEFAULT_REDIS_TLS_CA_SECRET_KEY=ca.crt", "CI=1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Values(flags)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"runnerImage":             "r:1",
		"logging":                 map[string]any{"format": "json"},
		"watchNamespaces":         []any{"a", "b"},
		"defaultImagePullSecrets": []any{"regcred"},
		"usageMetrics":            true,
		"skipUpdateCheck":         true,
		"defaultRedis": map[string]any{"addr": "redis:6379",
			"tls": map[string]any{"enabled": true, "caCertSecretRef": map[string]any{"name": "ca", "key": "ca.crt"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("values\n got %#v\nwant %#v", got, want)
	}
	if _, err := Values([]string{"--workers=3"}); err == nil {
		t.Error("a flag without a chart value must be refused")
	}
}

// A variable of the process is never one ToolHive's operator reads
// itself: that one's meaning is the operator's, and maps as Variables
// says.
func TestProcessVariables(t *testing.T) {
	for _, v := range ProcessVariables {
		if _, ok := Lookup(v.Name); ok {
			t.Errorf("%s is both read by the operator and a process variable", v.Name)
		}
		if got, ok := Process(v.Name); !ok || got != v || v.Why == "" {
			t.Errorf("Process(%s) = %+v, %t", v.Name, got, ok)
		}
	}
	if _, ok := Process("TOOLHIVE_NEW_SETTING"); ok {
		t.Error("an unknown variable is a process variable")
	}
}
