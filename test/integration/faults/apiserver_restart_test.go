package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestAPIServerCrashMidConvergence kills kube-apiserver (SIGKILL: watches
// and in-flight requests cut without a goodbye) while hivekeeper converges
// a burst of MCPServers, keeps it away for two seconds and starts it again
// on the same port and etcd data. hivekeeper must ride it out: no crash,
// every server converges, and no child exists twice.
func TestAPIServerCrashMidConvergence(t *testing.T) {
	env := privateServer(t)
	ns := env.Namespace(t)
	const n = 50

	hk := startHivekeeper(t, "hivekeeper", env.Kubeconfig, ns)
	hk.waitReady(t)
	names := createServers(t, env, ns, "srv", n)

	// Pull the plug once the first servers are converged and most are not.
	var atKill int
	framework.Eventually(t, 60*time.Second, slowly(50*time.Millisecond, func() (bool, error) {
		c, err := observe(env, ns)
		if err != nil {
			return false, err
		}
		atKill = c.countConverged(names)
		return atKill >= 5, nil
	}), "the first MCPServers to converge")
	before := env.Server.APIServerPID()
	env.Server.KillAPIServer()
	t.Logf("kube-apiserver (pid %d) killed with %d of %d MCPServers converged", before, atKill, n)
	if atKill == n {
		t.Logf("note: every server had converged before the kill; the fault hit a converged controller")
	}
	time.Sleep(2 * time.Second)
	if hk.exited() {
		t.Fatalf("hivekeeper exited while the API server was down: %v", hk.err)
	}
	down := time.Now()
	if err := env.Server.StartAPIServer(); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	t.Logf("kube-apiserver back (pid %d) after %v", env.Server.APIServerPID(), time.Since(down).Round(time.Millisecond))
	back := time.Now()

	var last *convergence
	framework.Eventually(t, 120*time.Second, slowly(250*time.Millisecond, func() (bool, error) {
		if hk.exited() {
			t.Fatalf("hivekeeper exited after the API server came back: %v", hk.err)
		}
		c, err := observe(env, ns)
		if err != nil {
			return false, err
		}
		last = c
		return c.countConverged(names) == n, nil
	}), "all %d MCPServers to converge after the restart", n)
	convergedAfter := time.Since(back).Round(time.Millisecond)
	t.Logf("all %d converged %v after the API server was back", n, convergedAfter)

	dups := last.duplicates()
	if len(dups) > 0 {
		t.Errorf("children after the restart are not one per server:\n%s", strings.Join(dups, "\n"))
	}
	if hk.exited() {
		t.Fatalf("hivekeeper exited: %v", hk.err)
	}
	m := hk.mustScrape(t)
	t.Logf("writes: %s", m.series(writesTotal, all))
	t.Logf("churn writes: %g", m.sum(churnTotal, all))
	recordFault(t,
		fmt.Sprintf("no crash; %d of %d MCPServers had converged at the kill, all %d %v after the API server was back; %d duplicate children", atKill, n, n, convergedAfter, len(dups)),
		fmt.Sprintf("%g in all for %d servers, %g of them failed by the outage and retried; churn %g",
			m.sum(writesTotal, all), n, m.sum(writesTotal, map[string]string{"outcome": "error"}), m.sum(churnTotal, all)))
}
