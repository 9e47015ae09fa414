package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestServiceCIDRExhausted gives the API server a /29 Service range (six
// usable addresses, one of them taken by the kubernetes Service) and asks
// for more MCPServers than fit. The servers whose Service cannot get an
// address must back off instead of hot-looping on the create, and the ones
// that fit must converge.
func TestServiceCIDRExhausted(t *testing.T) {
	env := privateServer(t, "--service-cluster-ip-range=10.0.0.0/29")
	ctx := context.Background()
	existing, err := env.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var taken []string
	for _, s := range existing.Items {
		taken = append(taken, fmt.Sprintf("%s/%s=%s", s.Namespace, s.Name, s.Spec.ClusterIP))
	}
	t.Logf("Services before the test: %v", taken)

	ns := env.Namespace(t)
	hk := startHivekeeper(t, "hivekeeper", env.Kubeconfig, ns)
	hk.waitReady(t)
	failedCreates := func(m samples) float64 {
		return m.sum(writesTotal, map[string]string{"resource": "services", "verb": "create", "outcome": "error"})
	}
	base := failedCreates(hk.mustScrape(t))

	const n = 10
	const window = 20 * time.Second
	start := time.Now()
	names := createServers(t, env, ns, "cidr", n)

	// Which servers got a Service is up to the order of the workers; wait
	// until every server either has one or has failed to get one.
	var fit, fail []string
	framework.Eventually(t, 30*time.Second, slowly(250*time.Millisecond, func() (bool, error) {
		c, err := observe(env, ns)
		if err != nil {
			return false, err
		}
		fit, fail = fit[:0], fail[:0]
		for _, name := range names {
			s := c.servers[name]
			if s == nil {
				return false, fmt.Errorf("%s missing", name)
			}
			if len(c.services[s.UID]) == 1 {
				fit = append(fit, name)
			} else {
				fail = append(fail, name)
			}
		}
		m, err := hk.scrape()
		if err != nil {
			return false, err
		}
		return len(fail) > 0 && failedCreates(m)-base >= float64(len(fail)) && c.countConverged(fit) == len(fit),
			fmt.Errorf("%d fit (%d converged), %d without a Service, %g failed creates", len(fit), c.countConverged(fit), len(fail), failedCreates(m)-base)
	}), "the servers that fit to converge and the others to fail their Service")
	t.Logf("%d of %d MCPServers got a Service address; %d did not: %v", len(fit), n, len(fail), fail)

	// The window starts at creation, so it includes the first burst of
	// retries, the worst part of the backoff.
	time.Sleep(window/2 - time.Since(start))
	mid := failedCreates(hk.mustScrape(t)) - base
	time.Sleep(window - time.Since(start))
	m := hk.mustScrape(t)
	total := failedCreates(m) - base
	elapsed := time.Since(start)
	perServer := total / float64(len(fail))
	t.Logf("failed Service creates in the first %v: %g (%.1f per failing server; %g in the first half, %g in the second half); %.0f/minute over the window, %.0f/minute in its second half",
		elapsed.Round(time.Second), total, perServer, mid, total-mid, total/elapsed.Minutes(), (total-mid)/(elapsed.Minutes()/2))
	t.Logf("all writes: %s", m.series(writesTotal, all))
	// The window starts at creation, so it also holds the syncs the other
	// children's creation events bring.
	bound := backoffAttempts(elapsed) + childEventSyncs
	if perServer > float64(bound) {
		t.Errorf("%.1f failed Service creates per failing server in %v, want at most %d (backoff, not a hot loop)", perServer, elapsed.Round(time.Second), bound)
	}

	// The servers that fit stay converged.
	c, err := observe(env, ns)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.countConverged(fit); got != len(fit) {
		t.Errorf("%d of the %d servers with a Service are converged", got, len(fit))
	}
	// What does a user see on a server without a Service?
	var unreported []string
	for _, name := range fail {
		s := c.servers[name]
		var conds []string
		mentions := strings.Contains(s.Status.Message, naming.MCPServerServiceName(name)) || strings.Contains(strings.ToLower(s.Status.Message), "service")
		for _, cond := range s.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s/%s: %s", cond.Type, cond.Status, cond.Reason, cond.Message))
			if cond.Status != metav1.ConditionTrue && strings.Contains(strings.ToLower(cond.Message), "service") {
				mentions = true
			}
		}
		t.Logf("%s: phase %q, message %q, conditions %v, has Deployment: %v", name, s.Status.Phase, s.Status.Message, conds, len(c.deployments[s.UID]) > 0)
		if !mentions {
			unreported = append(unreported, name)
		}
	}
	if len(unreported) > 0 {
		// A user must see why: Ready=False's message names the Service
		// that was refused.
		t.Errorf("%d MCPServers whose Service create fails carry no condition or message saying so: %v", len(unreported), unreported)
	}
	recordFault(t,
		fmt.Sprintf("the %d servers that got an address converged; the other %d report Ready=False naming their Service (a %s event), and retry with backoff", len(fit), len(fail), thv1.ReasonChildWriteFailed),
		fmt.Sprintf("%.1f failed Service creates per failing server in %v (backoff allows %d, plus %d from child events)", perServer, elapsed.Round(time.Second), backoffAttempts(elapsed), childEventSyncs))
}
