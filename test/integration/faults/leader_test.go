package faults

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// Short leader-election timings so failover fits a test: the lease is
// valid 4s without renewal, the leader gives up after 3s of failed renewals,
// candidates retry every 500ms.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
	leaseName     = "hivekeeper-leader"
)

func startCandidate(t *testing.T, env *framework.Env, ns, name string) *hivekeeper {
	t.Helper()
	return startHivekeeper(t, name, env.Kubeconfig, ns,
		"--leader-elect",
		"--leader-elect-namespace="+ns,
		fmt.Sprintf("--leader-elect-lease-duration=%s", leaseDuration),
		fmt.Sprintf("--leader-elect-renew-deadline=%s", renewDeadline),
		fmt.Sprintf("--leader-elect-retry-period=%s", retryPeriod),
		// Create, patch and status-patch requests are logged at 2 and 4:
		// the log tells whether a process wrote after a point in time.
		"-v=4",
	)
}

// leading returns the candidates whose leader_election_master_status is 1.
// A candidate that cannot be scraped (exited, stopped) is not leading.
func leading(cands ...*hivekeeper) []*hivekeeper {
	var out []*hivekeeper
	for _, c := range cands {
		if m, err := c.scrape(); err == nil && m.sum(leaderGauge, map[string]string{"name": leaseName}) == 1 {
			out = append(out, c)
		}
	}
	return out
}

func writes(t *testing.T, p *hivekeeper) float64 {
	t.Helper()
	return p.mustScrape(t).sum(writesTotal, all)
}

// writeLog matches the log lines of hivekeeper's write helpers: creates
// and child patches (-v=2), spec and status patches (-v=4).
var writeLog = regexp.MustCompile(`"(Creating child|Patching child|Patching|Patching status|Deleting collection)"`)

// TestLeaderElectionFailover runs two replicas with leader election: only
// the leader writes; when it is killed the standby takes over within the
// lease duration plus a retry and converges servers created after the
// kill. Then the new leader is frozen (SIGSTOP) until a third replica took
// the lease, and thawed: it must exit without writing anything.
func TestLeaderElectionFailover(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)

	a := startCandidate(t, env, ns, "replica-a")
	b := startCandidate(t, env, ns, "replica-b")
	var leader, standby *hivekeeper
	framework.Eventually(t, 60*time.Second, slowly(100*time.Millisecond, func() (bool, error) {
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
	t.Logf("%s leads, %s stands by", leader.name, standby.name)

	first := createServers(t, env, ns, "before", 3)
	waitConverged(t, env, ns, first)
	if l := leading(a, b); len(l) != 1 || l[0] != leader {
		t.Fatalf("leadership changed or is shared while converging: %d leaders", len(l))
	}
	standbyWrites := writes(t, standby)
	if standbyWrites != 0 {
		t.Errorf("standby %s wrote %g times: %s", standby.name, standbyWrites, standby.mustScrape(t).series(writesTotal, all))
	}
	if w := writes(t, leader); w == 0 {
		t.Errorf("leader %s converged the servers without a counted write", leader.name)
	}

	// Failover: SIGKILL, no chance to release the lease.
	leader.signal(t, syscall.SIGKILL)
	killed := time.Now()
	<-leader.done
	var took time.Duration
	framework.Eventually(t, 30*time.Second, slowly(50*time.Millisecond, func() (bool, error) {
		if len(leading(standby)) == 1 {
			took = time.Since(killed)
			return true, nil
		}
		return false, nil
	}), "%s to take over", standby.name)
	// About 5s is expected: the lease expires 4s after the last renewal
	// the standby saw, then its next jittered retry (500ms-1.1s) acquires
	// it. The time is logged, not bounded: a busy machine stretches it. A
	// regression to the default 15s lease shows in the lease itself.
	t.Logf("%s took over %v after the leader was killed", standby.name, took.Round(time.Millisecond))
	lease, err := env.Kube.CoordinationV1().Leases(ns).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || time.Duration(*d)*time.Second != leaseDuration {
		t.Errorf("lease duration %v, want the flag's %v", d, leaseDuration)
	}
	second := createServers(t, env, ns, "after", 2)
	waitConverged(t, env, ns, append(first, second...))
	leader = standby

	// Graceful loss: freeze the leader so it cannot renew, let a third
	// replica take the lease, thaw it. It must notice, exit, and write
	// nothing after it was frozen.
	c := startCandidate(t, env, ns, "replica-c")
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		code, _, err := c.get(c.health, "/healthz")
		return err == nil && code == 200, err
	}, "%s to serve /healthz", c.name)
	if len(leading(c)) != 0 {
		t.Fatalf("%s leads while %s holds the lease", c.name, leader.name)
	}
	beforeFreeze := writes(t, leader)
	leader.signal(t, syscall.SIGSTOP)
	frozen := time.Now()
	framework.Eventually(t, 30*time.Second, slowly(50*time.Millisecond, func() (bool, error) {
		return len(leading(c)) == 1, nil
	}), "%s to take over from the frozen %s", c.name, leader.name)
	t.Logf("%s took over %v after %s was frozen", c.name, time.Since(frozen).Round(time.Millisecond), leader.name)
	third := createServers(t, env, ns, "frozen", 2)
	waitConverged(t, env, ns, third)
	if w := writes(t, c); w == 0 {
		t.Errorf("new leader %s converged the servers without a counted write", c.name)
	}

	// Give the frozen replica work it could wrongly do when it wakes up:
	// servers nobody has converged yet. The new leader is frozen for that
	// second (well within its renew deadline, so it keeps the lease), so
	// whatever the old one writes is not hidden by a conflict with it.
	c.signal(t, syscall.SIGSTOP)
	pending := createServers(t, env, ns, "pending", 2)
	mark := leader.out.Len()
	if len(writeLines(leader.out.String()[:mark])) == 0 {
		t.Fatalf("writeLog matches none of the writes %s made as leader; the log messages changed, update writeLog", leader.name)
	}
	leader.signal(t, syscall.SIGCONT)
	time.Sleep(time.Second)
	c.signal(t, syscall.SIGCONT)
	select {
	case <-leader.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s still running 2m after it was thawed without the lease", leader.name)
	}
	t.Logf("%s exited after losing the lease: %v", leader.name, leader.err)
	if leader.err == nil {
		t.Errorf("%s exited with status 0 after losing the lease; want a failure exit so the pod restarts", leader.name)
	}
	thawedWrites := writeLines(leader.out.String()[mark:])
	if len(thawedWrites) > 0 {
		t.Errorf("%s wrote %d times after it was thawed, holding no lease (writes_total was %g before the freeze); first writes:\n%s",
			leader.name, len(thawedWrites), beforeFreeze, strings.Join(thawedWrites[:min(len(thawedWrites), 8)], "\n"))
	}
	waitConverged(t, env, ns, pending)
	lease, err = env.Kube.CoordinationV1().Leases(ns).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lease holder at the end: %s", *lease.Spec.HolderIdentity)
	if len(leading(c)) != 1 {
		t.Errorf("%s does not lead at the end", c.name)
	}
	recordFault(t,
		fmt.Sprintf("with a lease shortened to %v for the test (the failover time with the chart's lease is the row below), the standby took over after the leader was killed and converged new servers; the thawed ex-leader exited (%v) without a write and a third replica leads",
			leaseDuration, leader.err),
		fmt.Sprintf("standby before taking over: %g; thawed ex-leader: %d", standbyWrites, len(thawedWrites)))
}

// writeLines returns the log lines of writes in out, shortened.
func writeLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if writeLog.MatchString(l) {
			if len(l) > 300 {
				l = l[:300] + "..."
			}
			lines = append(lines, l)
		}
	}
	return lines
}

// waitConverged waits until every named server converged.
func waitConverged(t *testing.T, env *framework.Env, ns string, names []string) {
	t.Helper()
	framework.Eventually(t, 60*time.Second, slowly(100*time.Millisecond, func() (bool, error) {
		c, err := observe(env, ns)
		if err != nil {
			return false, err
		}
		n := c.countConverged(names)
		return n == len(names), fmt.Errorf("%d of %d converged", n, len(names))
	}), "%d MCPServers to converge", len(names))
}
