package main

import (
	"fmt"
	"strings"
)

// target is one goal the benchmark is judged by. check returns what the
// run measured for it and whether that meets the goal; ok is false when
// the run did not measure it (an N it did not run).
type target struct {
	goal  string
	check func(results []*result) (measured string, met, ok bool)
}

// atN returns the result for N, or nil.
func atN(results []*result, n int) *result {
	for _, r := range results {
		if r.N == n {
			return r
		}
	}
	return nil
}

// everyN checks one value at every N against a bound.
func everyN(value func(*result) float64, format string, bound float64) func([]*result) (string, bool, bool) {
	return func(results []*result) (string, bool, bool) {
		var parts []string
		met := true
		for _, r := range results {
			v := value(r)
			parts = append(parts, fmt.Sprintf(format+" at %d", v, r.N))
			met = met && v <= bound
		}
		return strings.Join(parts, ", "), met, len(results) > 0
	}
}

// oneN checks one value at one N against a bound.
func oneN(n int, value func(*result) float64, format string, bound float64) func([]*result) (string, bool, bool) {
	return func(results []*result) (string, bool, bool) {
		r := atN(results, n)
		if r == nil {
			return "", false, false
		}
		v := value(r)
		return fmt.Sprintf(format, v), v <= bound, true
	}
}

var targets = []target{
	{"every child of 300 MCPServers exists within 5 s of their create", oneN(300, func(r *result) float64 { return r.createSeconds }, "%.2f s", 5)},
	{"at most 10 API requests per MCPServer", everyN((*result).requestsPerObject, "%.2f", 10)},
	{"no write at steady state", everyN(func(r *result) float64 { return r.steadyWrites }, "%.0f", 0)},
	{"no write for a label added to every MCPServer", everyN(func(r *result) float64 { return r.labelWrites }, "%.0f", 0)},
	{"a config change with 100 referrers rolls them within 2 s", func(results []*result) (string, bool, bool) {
		for _, r := range results {
			if r.configReferrers == 100 {
				return fmt.Sprintf("%.2f s", r.configSeconds), r.configSeconds <= 2, true
			}
		}
		return "", false, false
	}},
	{"a config change costs at most 3 writes per referrer + 1", func(results []*result) (string, bool, bool) {
		var parts []string
		met := true
		for _, r := range results {
			bound := float64(3*r.configReferrers + 1)
			parts = append(parts, fmt.Sprintf("%.0f for %d referrers (bound %.0f)", r.configWrites, r.configReferrers, bound))
			met = met && r.configWrites <= bound
		}
		return strings.Join(parts, ", "), met, len(results) > 0
	}},
	{"peak RSS at most 50 MB at N=300", oneN(300, func(r *result) float64 { return mb(r.peakRSSBytes) }, "%.1f MB", 50)},
	{"peak RSS at most 200 MB at N=3,000", oneN(3000, func(r *result) float64 { return mb(r.peakRSSBytes) }, "%.1f MB", 200)},
	{"hot create time, API-server CPU and bytes per MCPServer within 1.3× of linear", func(results []*result) (string, bool, bool) {
		if len(results) < 2 {
			return "", false, false
		}
		base := results[0]
		worst, what := 0.0, ""
		for _, r := range results[1:] {
			for name, f := range map[string]func(*result) float64{
				"hot create time":        func(r *result) float64 { return r.createSeconds },
				"API-server CPU":         func(r *result) float64 { return r.createCPU["kube-apiserver"] },
				"bytes written":          func(r *result) float64 { return r.createAPI.writeBytes },
				"bytes sent to watchers": func(r *result) float64 { return r.createAPI.watchBytes },
			} {
				g := (f(r) / float64(r.N)) / (f(base) / float64(base.N))
				if g > worst || (g == worst && name < what) {
					worst, what = g, fmt.Sprintf("%s at %d", name, r.N)
				}
			}
		}
		return fmt.Sprintf("at most %.2f× (%s)", worst, what), worst <= 1.3, true
	}},
	{"deleting 3,000 MCPServers takes at most 2× the time of creating them", oneN(3000, func(r *result) float64 { return r.deleteSeconds / r.createSeconds }, "%.2f×", 2)},
	{"N=3,000: hot create within 45 s", oneN(3000, func(r *result) float64 { return r.createSeconds }, "%.2f s", 45)},
	{"N=3,000: cold start within 45 s", oneN(3000, func(r *result) float64 { return r.coldSeconds }, "%.2f s", 45)},
	{"N=300: cold start within 1.5× the creates floor", oneN(300, func(r *result) float64 { return r.coldSeconds / r.floorSeconds }, "%.2f×", 1.5)},
}

// targetsReport writes the targets, what the run measured for each and
// whether it met it. A target the run did not measure is left out.
func targetsReport(b *strings.Builder, results []*result) {
	b.WriteString("\n## Targets\n\n")
	b.WriteString("The goals hivekeeper is built to, against this run. They were set for an API server alone (no controller manager, scheduler or nodes); here those share the same two cores, so the times and the memory here are not the controller's alone.\n\n")
	b.WriteString("| target | measured | met |\n|---|---|---|\n")
	for _, t := range targets {
		measured, met, ok := t.check(results)
		if !ok {
			continue
		}
		verdict := "no"
		if met {
			verdict = "yes"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", t.goal, measured, verdict)
	}
}
