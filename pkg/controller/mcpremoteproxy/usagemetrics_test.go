package mcpremoteproxy

import (
	"testing"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// The --toolhive-usage-metrics option reaches the RunConfig: on, the
// runner's middleware chain has the usage metrics middleware; off, the
// same chain without it. The option is set explicitly both ways, so the
// test holds whatever the flag's default.
func TestUsageMetricsOptionReachesTheRunConfig(t *testing.T) {
	chain := func(on bool) []string {
		wf := workloadtest.New(t, newProxy("fetch"))
		c, err := New(wf.Deps(framework.Config{RunnerImage: "runner:test", UsageMetrics: wiring.UsageMetrics{Disabled: !on}}))
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{Fixture: wf, c: c}
		f.Refresh()
		f.converge("fetch")
		return wf.MiddlewareTypes(t, testNS, "fetch")
	}
	workloadtest.AssertUsageMetricsToggle(t, chain(true), chain(false))
}
