package framework

import (
	"fmt"
	"testing"
)

// outcome records what Missing asked of a test instead of ending it.
type outcome struct {
	testing.TB
	skipped, failed string
}

func (o *outcome) Helper()                   {}
func (o *outcome) Skip(args ...any)          { o.skipped = fmt.Sprint(args...) }
func (o *outcome) Fatalf(f string, a ...any) { o.failed = fmt.Sprintf(f, a...) }

// A missing dependency skips a developer's run, and fails one whose
// environment says it is there: its variable set, or CI true.
func TestMissingSkipsUnlessTheRunSaysItIsThere(t *testing.T) {
	const env = "HIVEKEEPER_TEST_MISSING_DEP"
	for _, c := range []struct {
		name, dep, ci string
		wantFail      bool
	}{
		{name: "nothing set", wantFail: false},
		{name: "CI false", ci: "false", wantFail: false},
		{name: "CI garbage", ci: "yes please", wantFail: false},
		{name: "CI true", ci: "true", wantFail: true},
		{name: "CI 1", ci: "1", wantFail: true},
		{name: "variable set", dep: "/nowhere", wantFail: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(env, c.dep)
			t.Setenv(CIEnv, c.ci)
			o := &outcome{TB: t}
			Missing(o, "no widget", env)
			if c.wantFail {
				if o.failed == "" || o.skipped != "" {
					t.Fatalf("failed %q, skipped %q: want a failure", o.failed, o.skipped)
				}
				if want := "no widget (a failure, not a skip: "; len(o.failed) < len(want) || o.failed[:len(want)] != want {
					t.Errorf("failure %q does not give the reason first", o.failed)
				}
				return
			}
			if o.skipped != "no widget" || o.failed != "" {
				t.Fatalf("skipped %q, failed %q: want a skip with the reason", o.skipped, o.failed)
			}
		})
	}
}
