package workloadtest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// MiddlewareTypes returns the middleware chain of the RunConfig the
// fixture's clientset holds for workload namespace/name.
func (f *Fixture) MiddlewareTypes(t testing.TB, namespace, name string) []string {
	t.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(namespace).Get(context.Background(), naming.RunConfigName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, m := range rc.MiddlewareConfigs {
		types = append(types, m.Type)
	}
	return types
}

// AssertUsageMetricsToggle checks two middleware chains of one workload,
// built with the usage-metrics option on and off: the first has the
// usage-metrics middleware, the second does not, and nothing else differs.
func AssertUsageMetricsToggle(t testing.TB, on, off []string) {
	t.Helper()
	if !slices.Contains(on, schema.MiddlewareUsageMetrics) {
		t.Errorf("option on: middleware %v lacks %s", on, schema.MiddlewareUsageMetrics)
	}
	if slices.Contains(off, schema.MiddlewareUsageMetrics) {
		t.Errorf("option off: middleware %v has %s", off, schema.MiddlewareUsageMetrics)
	}
	if without := slices.DeleteFunc(slices.Clone(on), func(s string) bool { return s == schema.MiddlewareUsageMetrics }); !slices.Equal(without, off) {
		t.Errorf("the chains differ in more than the usage metrics: on %v, off %v", on, off)
	}
}
