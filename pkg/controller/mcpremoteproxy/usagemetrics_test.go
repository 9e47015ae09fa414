package mcpremoteproxy

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// The --toolhive-usage-metrics option reaches the RunConfig: on, the
// runner's middleware chain has the usage metrics middleware; off, the
// same chain without it. The option is set explicitly both ways, so the
// test holds whatever the flag's default.
func TestUsageMetricsOptionReachesTheRunConfig(t *testing.T) {
	chain := func(on bool) []string {
		wf := workloadtest.New(t, newProxy("fetch"))
		c, err := New(wf.Deps(framework.Config{RunnerImage: "runner:test", UsageMetrics: on}))
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{Fixture: wf, c: c}
		f.Refresh()
		f.converge("fetch")
		cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
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
	on, off := chain(true), chain(false)
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
