package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// The chart's leader election: it passes --leader-elect and the Lease's
// name only, so the binary's defaults hold (TestFailoverAtScale checks the
// chart's template and the Lease the replicas write).
const (
	chartLeaseDuration = 15 * time.Second
	chartRenewDeadline = 10 * time.Second
	chartRetryPeriod   = 2 * time.Second
)

// failoverN is how many MCPServers the failover scenario keeps converged.
const failoverN = 1000

// electionLag is the most client-go's elector adds to the lease duration
// before a standby leads. A standby polls the Lease every retry period
// stretched by a random factor of up to 1 + leaderelection.JitterFactor
// (2 s to 4.4 s with the chart's 2 s): it sees the killed leader's last
// renewal up to one poll late, counts the lease duration from then, and
// acquires the lease at the first poll after that: two polls, 8.8 s at
// worst, about 2 to 4 s usually.
var electionLag = 2 * time.Duration(float64(chartRetryPeriod)*(1+leaderelection.JitterFactor))

// syncMargin is what hivekeeper itself may add once the standby leads: its
// workers start on caches that are already synced, with every one of the
// N objects queued once; the converged ones cost a cache comparison each,
// the changed one a few writes: under a second at N=1,000 on a busy
// 2-core machine. A cold standby lists every watched kind first.
const syncMargin = 2 * time.Second

// failoverMargin is what a failover may take beyond the lease duration:
// the elector's lag and hivekeeper's own part.
var failoverMargin = electionLag + syncMargin

// TestFailoverAtScale runs two replicas with the chart's lease settings
// over 1,000 converged MCPServers, SIGKILLs the leader and, while no
// replica leads, changes one server's spec: the change must be applied
// within the lease duration plus failoverMargin of the kill.
func TestFailoverAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("converges 1,000 MCPServers")
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := os.ReadFile(filepath.Join(root, "deploy", "charts", "hivekeeper", "templates", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--leader-elect-lease-duration", "--leader-elect-renew-deadline", "--leader-elect-retry-period"} {
		if strings.Contains(string(tpl), flag) {
			t.Fatalf("the chart sets %s: run the replicas with the chart's value, not the binary's default", flag)
		}
	}

	env := framework.Get(t)
	ns := env.Namespace(t)
	start := func(name string) *hivekeeper {
		return startHivekeeper(t, name, env.Kubeconfig, ns, "--leader-elect", "--leader-elect-namespace="+ns, "--leader-elect-id="+leaseName)
	}
	a, b := start("scale-a"), start("scale-b")
	var leader, standby *hivekeeper
	framework.Eventually(t, 90*time.Second, slowly(200*time.Millisecond, func() (bool, error) {
		l := leading(a, b)
		if len(l) != 1 {
			return false, fmt.Errorf("%d replicas lead", len(l))
		}
		leader = l[0]
		return true, nil
	}), "exactly one replica to lead")
	standby = b
	if leader == b {
		standby = a
	}

	names := createServers(t, env, ns, "scale", failoverN)
	converging := time.Now()
	framework.Eventually(t, 10*time.Minute, slowly(2*time.Second, func() (bool, error) {
		c, err := observe(env, ns)
		if err != nil {
			return false, err
		}
		n := c.countConverged(names)
		return n == len(names), fmt.Errorf("%d of %d converged", n, len(names))
	}), "%d MCPServers to converge", failoverN)
	t.Logf("%d MCPServers converged in %v", failoverN, time.Since(converging).Round(time.Second))
	// The standby's caches are warm: it is ready, and it wrote nothing.
	standby.waitReady(t)
	if w := writes(t, standby); w != 0 {
		t.Fatalf("standby %s wrote %g times", standby.name, w)
	}

	// Warm: the standby synced its caches before it led (a cold one
	// would list everything only once it leads).
	if !strings.Contains(standby.out.String(), "Caches synced") {
		t.Fatalf("standby %s has not synced its caches before the failover", standby.name)
	}

	target := names[failoverN/2]
	leader.signal(t, syscall.SIGKILL)
	killed := time.Now()
	<-leader.done
	s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(context.Background(), target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Image = "ghcr.io/example/fetch:2.0"
	s, err = env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Update(context.Background(), s, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Since(killed)
	if len(leading(standby)) != 0 {
		t.Fatalf("%s led before the change was made: the change was not made during the failover", standby.name)
	}
	var tookOver, applied time.Duration
	framework.Eventually(t, 2*time.Minute, slowly(100*time.Millisecond, func() (bool, error) {
		if tookOver == 0 && len(leading(standby)) == 1 {
			tookOver = time.Since(killed)
		}
		got, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(context.Background(), target, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Status.ObservedGeneration != s.Generation {
			return false, fmt.Errorf("observedGeneration %d, want %d", got.Status.ObservedGeneration, s.Generation)
		}
		applied = time.Since(killed)
		return true, nil
	}), "the change made during the failover to be applied")
	if tookOver == 0 {
		tookOver = applied
	}
	t.Logf("the leader was killed; the change was made %v later; %s led after %v and had applied it after %v",
		changed.Round(time.Millisecond), standby.name, tookOver.Round(time.Millisecond), applied.Round(time.Millisecond))

	lease, err := env.Kube.CoordinationV1().Leases(ns).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || time.Duration(*d)*time.Second != chartLeaseDuration {
		t.Fatalf("lease duration %v, want the chart's %v", d, chartLeaseDuration)
	}
	if bound := chartLeaseDuration + failoverMargin; applied > bound {
		t.Errorf("the change was applied %v after the leader was killed, want within the lease duration plus %v (%v)", applied.Round(time.Millisecond), failoverMargin, bound)
	}
	if own := applied - tookOver; own > syncMargin {
		t.Errorf("the change was applied %v after %s led, want within %v", own.Round(time.Millisecond), standby.name, syncMargin)
	}
	c, err := observe(env, ns)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.countConverged(names); n != len(names) {
		t.Errorf("after the failover %d of %d converged", n, len(names))
	}
	recordFault(t,
		fmt.Sprintf("with the chart's lease settings (%v lease, %v renew deadline, %v retry period) and %d converged MCPServers: the standby, whose caches were already synced, led %.1f s after the leader was killed and applied a spec change made during the failover %.1f s after the kill, %.1f s after it led (required: within the lease duration plus %v, the most client-go's elector adds, plus %v)",
			chartLeaseDuration, chartRenewDeadline, chartRetryPeriod, failoverN, tookOver.Seconds(), applied.Seconds(), (applied-tookOver).Seconds(), electionLag, syncMargin),
		"standby before taking over: 0")
}
