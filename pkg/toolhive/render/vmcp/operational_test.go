package vmcp

import (
	"encoding/json"
	"reflect"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// spec.config.operational with vmcp's defaults merged into what it leaves
// unset, field by field: an unset or zero value takes its default, a set
// one is kept. backendInit has no default (ToolHive writes none, and vmcp
// then bounds session initialisation by the request timeouts): it is
// kept when set and stays unset otherwise. The health check timeout is
// the schema's default only for a failureHandling the spec sets.
func TestOperationalDefaults(t *testing.T) {
	defaults := func() *thv1.VMCPOperational {
		return &thv1.VMCPOperational{
			Timeouts: &thv1.VMCPTimeouts{Default: "30s"},
			FailureHandling: &thv1.VMCPFailureHandling{HealthCheckInterval: "30s", UnhealthyThreshold: 3, StatusReportingInterval: "30s",
				PartialFailureMode: "fail", CircuitBreaker: &thv1.VMCPCircuitBreaker{FailureThreshold: 5, Timeout: "60s"}},
		}
	}
	set := &thv1.VMCPOperational{
		LogLevel: "debug",
		Timeouts: &thv1.VMCPTimeouts{Default: "1m", BackendInit: "5s", PerWorkload: map[string]thv1.VMCPDuration{"slow": "2m"}},
		FailureHandling: &thv1.VMCPFailureHandling{HealthCheckInterval: "15s", UnhealthyThreshold: 7, HealthCheckTimeout: "3s",
			StatusReportingInterval: "45s", PartialFailureMode: "best_effort",
			CircuitBreaker: &thv1.VMCPCircuitBreaker{Enabled: true, FailureThreshold: 9, Timeout: "2m"}},
	}
	for _, tc := range []struct {
		name string
		src  *thv1.VMCPOperational
		want *thv1.VMCPOperational
	}{
		{"none", nil, defaults()},
		{"empty", &thv1.VMCPOperational{}, defaults()},
		{"every field set", set, set},
		{"zero durations", &thv1.VMCPOperational{Timeouts: &thv1.VMCPTimeouts{Default: "0s"}}, defaults()},
		{"backendInit alone", &thv1.VMCPOperational{Timeouts: &thv1.VMCPTimeouts{BackendInit: "5s"}}, func() *thv1.VMCPOperational {
			o := defaults()
			o.Timeouts.BackendInit = "5s"
			return o
		}()},
		{"failureHandling without a health check timeout", &thv1.VMCPOperational{FailureHandling: &thv1.VMCPFailureHandling{UnhealthyThreshold: 2}},
			func() *thv1.VMCPOperational {
				o := defaults()
				o.FailureHandling.UnhealthyThreshold, o.FailureHandling.HealthCheckTimeout = 2, "10s"
				return o
			}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *thv1.VMCPOperational
			if tc.src != nil {
				before = tc.src.DeepCopy()
			}
			if got := operational(tc.src); !reflect.DeepEqual(got, tc.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tc.want)
				t.Errorf("operational = %s\nwant %s", g, w)
			}
			if tc.src != nil && !reflect.DeepEqual(tc.src, before) {
				t.Errorf("the spec was modified: %+v", tc.src)
			}
		})
	}
}
