package main

import (
	"strings"
	"testing"
)

// The report says, target by target, whether the run met it, and leaves
// out a target whose N the run did not measure.
func TestTargetsReportSaysWhichAreMissed(t *testing.T) {
	r := &result{N: 300, createSeconds: 16.62, steadyWrites: 0, labelWrites: 0, configReferrers: 100,
		configSeconds: 1.93, configWrites: 501, peakRSSBytes: 61.9 * (1 << 20), coldRound: coldRound{coldSeconds: 18.2, floorSeconds: 3.93},
		createRequests: map[string]float64{"POST": 1800, "PATCH": 936}}
	var b strings.Builder
	targetsReport(&b, []*result{r})
	got := b.String()
	for _, want := range []string{
		"| every child of 300 MCPServers exists within 5 s of their create | 16.62 s | no |",
		"| at most 10 API requests per MCPServer | 9.12 at 300 | yes |",
		"| no write at steady state | 0 at 300 | yes |",
		"| a config change with 100 referrers rolls them within 2 s | 1.93 s | yes |",
		"| a config change costs at most 3 writes per referrer + 1 | 501 for 100 referrers (bound 301) | no |",
		"| peak RSS at most 50 MB at N=300 | 61.9 MB | no |",
		"| N=300: cold start within 1.5× the creates floor | 4.63× | no |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	for _, absent := range []string{"N=3,000", "linear"} {
		if strings.Contains(got, absent) {
			t.Errorf("report has %q, which a run of N=300 alone did not measure:\n%s", absent, got)
		}
	}
}
