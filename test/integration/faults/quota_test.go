package faults

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// backoffAttempts is the most attempts a failing key can make in d under
// the queue's per-item exponential backoff (5 ms, doubling): the first at
// once, the k-th retry after 5 ms·(2^k − 1).
func backoffAttempts(d time.Duration) int {
	return int(math.Log2(float64(d)/float64(5*time.Millisecond)+1)) + 1
}

// childEventSyncs are the syncs of a new MCPServer that the creation events
// of its other children trigger without waiting for the backoff: each
// re-queues the server at once, and the queue folds those that arrive
// while a sync runs into one.
const childEventSyncs = 4

// churnQuotaUsage keeps rewriting status.used of quota (services), always
// above its hard limit of 1 and different every time, until ctx ends. The
// test API server runs no quota controller; this is what one would write
// for a namespace whose other Services come and go. It returns once the
// first usage is in place.
func churnQuotaUsage(ctx context.Context, t *testing.T, env *framework.Env, quota *corev1.ResourceQuota, wg *sync.WaitGroup) {
	t.Helper()
	quotas := env.Kube.CoreV1().ResourceQuotas(quota.Namespace)
	set := func(q *corev1.ResourceQuota, used int) (*corev1.ResourceQuota, error) {
		q = q.DeepCopy()
		q.Status = corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("1")},
			Used: corev1.ResourceList{corev1.ResourceServices: *resource.NewQuantity(int64(used), resource.DecimalSI)},
		}
		return quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{})
	}
	q, err := set(quota, 1)
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		for i := 2; ctx.Err() == nil; i++ {
			next, err := set(q, 1+i%1000)
			switch {
			case err == nil:
				q = next
			case apierrors.IsConflict(err):
				if fresh, err := quotas.Get(ctx, q.Name, metav1.GetOptions{}); err == nil {
					q = fresh
				}
			case ctx.Err() == nil:
				t.Errorf("updating the quota's usage: %v", err)
				return
			}
		}
	})
}

// TestQuotaRefusalBacksOff: a ResourceQuota refuses the proxy Service, and
// its message carries the namespace's current usage, which changes between
// attempts. hivekeeper must retry with the same exponential backoff as for
// a constant message. The condition it reports must not quote the
// changing message: a status write per attempt, whose own watch event
// re-queued the server at once, was a hot loop (2,634 attempts in 20 s
// against 12 with a constant message).
func TestQuotaRefusalBacksOff(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	quota, err := env.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "services", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("1")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	churnCtx, stopChurn := context.WithCancel(ctx)
	var churn sync.WaitGroup
	defer churn.Wait()
	defer stopChurn()
	churnQuotaUsage(churnCtx, t, env, quota, &churn)

	hk := startHivekeeper(t, "hivekeeper", env.Kubeconfig, ns)
	hk.waitReady(t)
	failedCreates := func(m samples) float64 {
		return m.sum(writesTotal, map[string]string{"resource": "services", "verb": "create", "outcome": "error"})
	}
	statusWrites := func(m samples) float64 {
		return m.sum(writesTotal, map[string]string{"resource": "mcpservers/status", "verb": "patch"})
	}
	base := hk.mustScrape(t)
	name := createServers(t, env, ns, "quota", 1)[0]

	var start time.Time
	framework.Eventually(t, 30*time.Second, slowly(20*time.Millisecond, func() (bool, error) {
		m, err := hk.scrape()
		if err != nil {
			return false, err
		}
		start = time.Now()
		return failedCreates(m) > failedCreates(base), nil
	}), "the first refused Service create")
	const window = 15 * time.Second
	time.Sleep(window)
	m := hk.mustScrape(t)
	elapsed := time.Since(start)
	stopChurn()

	attempts := int(failedCreates(m) - failedCreates(base))
	statuses := int(statusWrites(m) - statusWrites(base))
	bound := backoffAttempts(elapsed) + childEventSyncs
	t.Logf("%d refused Service creates and %d status writes in %v (exponential backoff allows %d, plus %d syncs from child events)",
		attempts, statuses, elapsed.Round(time.Second), backoffAttempts(elapsed), childEventSyncs)
	if attempts > bound {
		t.Errorf("%d Service create attempts in %v, want at most %d: the retries do not back off", attempts, elapsed.Round(time.Second), bound)
	}
	// One status write reports the failure; the retries change nothing.
	if statuses > 2 {
		t.Errorf("%d status writes while the create kept failing, want 1 (2 at most)", statuses)
	}

	s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionReady)
	// An MCPServer's Ready reason is ToolHive's NotReady; the cause,
	// ChildWriteFailed, is the event's reason below.
	if cond == nil || cond.Reason != thv1.ReasonNotReady || !strings.Contains(cond.Message, naming.MCPServerServiceName(name)) || strings.Contains(cond.Message, "used") {
		t.Errorf("Ready = %+v, want reason %s naming the Service, without the quota's changing usage", cond, thv1.ReasonNotReady)
	}
	// The API server's own message reaches the user in an event.
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name && e.Reason == thv1.ReasonChildWriteFailed && strings.Contains(e.Message, "exceeded quota") {
				return true, nil
			}
		}
		return false, fmt.Errorf("no %s event with the quota's message among %d", thv1.ReasonChildWriteFailed, len(events.Items))
	}, "an event carrying the API server's message")

	recordFault(t,
		fmt.Sprintf("retried with exponential backoff; Ready=False %s: %q; the API server's message in an event", cond.Reason, cond.Message),
		fmt.Sprintf("%d refused Service creates in %v (backoff allows %d, plus %d from child events); status writes: %d",
			attempts, elapsed.Round(time.Second), backoffAttempts(elapsed), childEventSyncs, statuses))
}
