package framework

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

// Writes returns hivekeeper_writes_total of the given controllers (every
// controller when none is given) by "resource verb outcome", summed over
// them: what the controllers running in this test process have sent.
func Writes(t testing.TB, controllers ...string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "hivekeeper_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if len(controllers) > 0 && !slices.Contains(controllers, l["controller"]) {
				continue
			}
			out[l["resource"]+" "+l["verb"]+" "+l["outcome"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// Quiesce waits until the controllers (every one when none is given) have
// written nothing for quiet, and returns their writes then, so that the
// difference of two calls measures one change and nothing left over from
// before. It fails the test after timeout.
func Quiesce(t testing.TB, quiet, timeout time.Duration, controllers ...string) map[string]float64 {
	t.Helper()
	last, since := Writes(t, controllers...), time.Now()
	deadline := time.Now().Add(timeout)
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			t.Fatalf("controllers %v still writing after %v: %v", controllers, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
		if now := Writes(t, controllers...); !maps.Equal(now, last) {
			last, since = now, time.Now()
		}
	}
	return last
}

// WritesBetween is after minus before, without the zero entries.
func WritesBetween(before, after map[string]float64) map[string]float64 {
	delta := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			delta[k] = d
		}
	}
	return delta
}
