package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

// spyQueue records the retry-policy calls the loop makes and delegates
// everything to a real queue.
type spyQueue struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]

	mu          sync.Mutex
	rateLimited []cache.ObjectName
	forgotten   []cache.ObjectName
	addedAfter  []time.Duration
}

func (q *spyQueue) AddRateLimited(key cache.ObjectName) {
	q.mu.Lock()
	q.rateLimited = append(q.rateLimited, key)
	q.mu.Unlock()
	q.TypedRateLimitingInterface.AddRateLimited(key)
}

func (q *spyQueue) Forget(key cache.ObjectName) {
	q.mu.Lock()
	q.forgotten = append(q.forgotten, key)
	q.mu.Unlock()
	q.TypedRateLimitingInterface.Forget(key)
}

func (q *spyQueue) AddAfter(key cache.ObjectName, d time.Duration) {
	q.mu.Lock()
	q.addedAfter = append(q.addedAfter, d)
	q.mu.Unlock()
	q.TypedRateLimitingInterface.AddAfter(key, d)
}

func (q *spyQueue) counts() (rateLimited, forgotten, addedAfter int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.rateLimited), len(q.forgotten), len(q.addedAfter)
}

// zeroDelayLimiter counts failures per item like the production limiter
// but never delays, so a rate-limited re-add is immediately visible in Len.
func zeroDelayLimiter() workqueue.TypedRateLimiter[cache.ObjectName] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](0, 0)
}

// newTestLoop returns a loop whose queue is wrapped by a spy.
func newTestLoop(t *testing.T, name string, sync SyncFunc) (*Loop, *spyQueue) {
	t.Helper()
	l := NewLoopWithRateLimiter(name, sync, zeroDelayLimiter())
	spy := &spyQueue{TypedRateLimitingInterface: l.Queue}
	l.Queue = spy
	t.Cleanup(spy.ShutDown)
	return l, spy
}

// nsA is the key most tests enqueue.
var nsA = cache.NewObjectName("ns", "a")

func reconcileCount(controller, result string) float64 {
	return testutil.ToFloat64(metrics.ReconcileTotal.WithLabelValues(controller, result))
}

// oldRetryBudget is more attempts than the 15 retries after which a
// failing key used to be dropped.
const oldRetryBudget = 40

// A failing key is retried with backoff for as long as it fails: it is
// never forgotten, its requeue count keeps growing, and each attempt
// counts as an error.
func TestLoopRetriesFailingKeyForever(t *testing.T) {
	const name = "test-loop-fail"
	var calls atomic.Int32
	l, spy := newTestLoop(t, name, func(context.Context, cache.ObjectName) error {
		calls.Add(1)
		return errors.New("boom")
	})
	errBefore := reconcileCount(name, metrics.ResultError)
	okBefore := reconcileCount(name, metrics.ResultSuccess)

	l.EnqueueKey(nsA)
	for i := 1; i <= oldRetryBudget; i++ {
		if !l.processNextWorkItem(context.Background()) {
			t.Fatalf("attempt %d: queue shut down", i)
		}
		if got := l.Queue.NumRequeues(nsA); got != i {
			t.Fatalf("attempt %d: NumRequeues = %d, want %d", i, got, i)
		}
		if got := l.Queue.Len(); got != 1 {
			t.Fatalf("attempt %d: key not re-added, Len = %d", i, got)
		}
	}
	rl, forgotten, _ := spy.counts()
	if rl != oldRetryBudget {
		t.Fatalf("AddRateLimited called %d times, want %d", rl, oldRetryBudget)
	}
	if forgotten != 0 {
		t.Fatalf("Forget called %d times for a key that never succeeded", forgotten)
	}
	if got := calls.Load(); got != oldRetryBudget {
		t.Fatalf("sync called %d times, want %d", got, oldRetryBudget)
	}
	if d := reconcileCount(name, metrics.ResultError) - errBefore; d != oldRetryBudget {
		t.Fatalf("reconcile_total{result=error} grew by %v, want %d", d, oldRetryBudget)
	}
	if d := reconcileCount(name, metrics.ResultSuccess) - okBefore; d != 0 {
		t.Fatalf("reconcile_total{result=success} grew by %v, want 0", d)
	}
}

// The queue's own limiter, after many failures, retries a key every
// MaxRetryDelay: the delay the loop asks for is capped, never infinite.
func TestLoopRetriesAtTheCap(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	l := NewLoop("test-loop-cap", func(context.Context, cache.ObjectName) error { return errors.New("quota exceeded") })
	l.Queue.ShutDown()
	l.Queue = workqueue.NewTypedRateLimitingQueueWithConfig(NewRateLimiter(),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Clock: clk})
	t.Cleanup(l.Queue.ShutDown)
	l.EnqueueKey(nsA)
	// 5ms·2^16 exceeds the cap: from the 17th failure on, every retry waits
	// exactly MaxRetryDelay.
	for i := 1; i <= 20; i++ {
		l.processNextWorkItem(context.Background())
		clk.Step(MaxRetryDelay - time.Millisecond)
		if i >= 17 && l.Queue.Len() != 0 {
			t.Fatalf("failure %d: retried before the cap had passed", i)
		}
		clk.Step(time.Millisecond)
		waitFor(t, fmt.Sprintf("retry %d after the cap", i), func() bool { return l.Queue.Len() == 1 })
	}
}

// Backoff counts the keys whose last sync failed and times the oldest
// run of failures on the loop's clock; a success ends a key's run.
func TestLoopBackoffTracksFailingKeys(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	nsB := cache.NewObjectName("ns", "b")
	fail := map[cache.ObjectName]bool{nsA: true, nsB: true}
	// Retries wait an hour, so each sync below is of the key just added.
	l := NewLoopWithRateLimiter("test-loop-backoff", func(_ context.Context, key cache.ObjectName) error {
		if fail[key] {
			return errors.New("refused")
		}
		return nil
	}, workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](time.Hour, time.Hour))
	t.Cleanup(l.Queue.ShutDown)
	l.Clock = clk
	sync := func(key cache.ObjectName) {
		t.Helper()
		l.EnqueueKey(key)
		if !l.processNextWorkItem(context.Background()) {
			t.Fatal("queue shut down")
		}
	}
	check := func(wantKeys int, wantOldest time.Duration) {
		t.Helper()
		if keys, oldest := l.Backoff(); keys != wantKeys || oldest != wantOldest {
			t.Fatalf("Backoff() = %d keys, oldest %v; want %d, %v", keys, oldest, wantKeys, wantOldest)
		}
	}
	check(0, 0)
	sync(nsA)
	check(1, 0)
	clk.Step(90 * time.Second)
	check(1, 90*time.Second)
	sync(nsA) // a second failure keeps the start of the run
	sync(nsB)
	check(2, 90*time.Second)
	clk.Step(10 * time.Second)
	check(2, 100*time.Second)
	fail[nsA] = false
	sync(nsA)
	check(1, 10*time.Second)
	fail[nsB] = false
	sync(nsB)
	check(0, 0)
}

// A key failing for LongFailure or more is logged as an error on each
// further failure; before that only at verbosity 2.
func TestLoopLogsLongFailuresAsErrors(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	l, _ := newTestLoop(t, "test-loop-long", func(context.Context, cache.ObjectName) error { return errors.New("webhook down") })
	l.Clock = clk
	for _, step := range []struct {
		after     time.Duration
		wantError bool
	}{
		{0, false},
		{LongFailure - time.Second, false},
		{time.Second, true},
		{MaxRetryDelay, true},
	} {
		clk.Step(step.after)
		ctx, logs := bufferedLogs(t)
		l.EnqueueKey(nsA)
		l.processNextWorkItem(ctx)
		out := logs()
		if got := strings.Contains(out, "ERROR Sync keeps failing"); got != step.wantError {
			t.Errorf("after %v more: error logged = %v, want %v:\n%s", step.after, got, step.wantError, out)
		}
	}
}

// A sync that panics is recovered: the panic is counted and logged with the
// key, the key is retried with backoff, and the other keys are synced.
func TestLoopRecoversPanics(t *testing.T) {
	const name = "test-loop-panic"
	nsB := cache.NewObjectName("ns", "b")
	var synced sync.Map
	l, spy := newTestLoop(t, name, func(_ context.Context, key cache.ObjectName) error {
		if key == nsA {
			var m map[string]int
			m["boom"]++ // a nil map: a builder's bug
		}
		synced.Store(key, true)
		return nil
	})
	panics := func() float64 { return testutil.ToFloat64(metrics.SyncPanics.WithLabelValues(name)) }
	before, errBefore := panics(), reconcileCount(name, metrics.ResultError)
	ctx, logs := bufferedLogs(t)
	l.EnqueueKey(nsA)
	l.EnqueueKey(nsB)
	for range 2 {
		if !l.processNextWorkItem(ctx) {
			t.Fatal("queue shut down")
		}
	}
	if _, ok := synced.Load(nsB); !ok {
		t.Error("the other key was not synced")
	}
	if d := panics() - before; d != 1 {
		t.Errorf("sync_panics_total grew by %v, want 1", d)
	}
	if d := reconcileCount(name, metrics.ResultError) - errBefore; d != 1 {
		t.Errorf("reconcile_total{result=error} grew by %v, want 1", d)
	}
	if rl, _, _ := spy.counts(); rl != 1 || l.Queue.NumRequeues(nsA) != 1 {
		t.Errorf("AddRateLimited called %d times, NumRequeues(ns/a) = %d; want the panicking key retried with backoff once", rl, l.Queue.NumRequeues(nsA))
	}
	if keys, _ := l.Backoff(); keys != 1 {
		t.Errorf("%d keys in backoff, want the panicking one", keys)
	}
	out := logs()
	for _, want := range []string{"Sync panicked", `key="ns/a"`, "assignment to entry in nil map", "queue_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}

// bufferedLogs returns a context whose logger writes through t and keeps
// a copy, and a function that returns the copy.
func bufferedLogs(t *testing.T) (context.Context, func() string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(2)))
	return klog.NewContext(context.Background(), logger), func() string {
		return logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
}

// A running loop exports its failing keys under its name, read at scrape
// time, and stops exporting them when it stops.
func TestRunExportsBackoff(t *testing.T) {
	const name = "test-loop-backoff-metrics"
	clk := testingclock.NewFakeClock(time.Now())
	failed := make(chan struct{}, 10)
	l := NewLoopWithRateLimiter(name, func(context.Context, cache.ObjectName) error {
		failed <- struct{}{}
		return errors.New("forbidden")
	}, workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](time.Hour, time.Hour))
	l.Clock = clk
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Run(ctx, 1)
	}()
	l.EnqueueKey(nsA)
	<-failed
	// The failure is recorded after the sync returned.
	waitFor(t, "the failure recorded", func() bool { keys, _ := gatherBackoff(t, name); return keys == 1 })
	clk.Step(42 * time.Second)
	waitFor(t, "the failing key exported", func() bool {
		keys, oldest := gatherBackoff(t, name)
		return keys == 1 && oldest == 42
	})
	cancel()
	<-done
	if keys, oldest := gatherBackoff(t, name); keys != -1 || oldest != -1 {
		t.Errorf("a stopped loop still exports %v keys in backoff, oldest %vs", keys, oldest)
	}
}

// gatherBackoff reads controller's hivekeeper_keys_in_backoff and
// hivekeeper_oldest_failing_key_seconds from the registry, -1 when absent.
func gatherBackoff(t *testing.T, controller string) (keys, oldest float64) {
	t.Helper()
	fams, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	keys, oldest = -1, -1
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != controller {
				continue
			}
			switch f.GetName() {
			case "hivekeeper_keys_in_backoff":
				keys = m.GetGauge().GetValue()
			case "hivekeeper_oldest_failing_key_seconds":
				oldest = m.GetGauge().GetValue()
			}
		}
	}
	return keys, oldest
}

func TestLoopSuccessForgetsBackoff(t *testing.T) {
	const name = "test-loop-success"
	fail := true
	l, spy := newTestLoop(t, name, func(context.Context, cache.ObjectName) error {
		if fail {
			return errors.New("transient")
		}
		return nil
	})
	okBefore := reconcileCount(name, metrics.ResultSuccess)
	errBefore := reconcileCount(name, metrics.ResultError)

	l.EnqueueKey(nsA)
	l.processNextWorkItem(context.Background())
	if got := l.Queue.NumRequeues(nsA); got != 1 {
		t.Fatalf("NumRequeues after failure = %d, want 1", got)
	}

	fail = false
	l.processNextWorkItem(context.Background())
	if got := l.Queue.NumRequeues(nsA); got != 0 {
		t.Fatalf("NumRequeues after success = %d, want 0", got)
	}
	if got := l.Queue.Len(); got != 0 {
		t.Fatalf("Len after success = %d, want 0", got)
	}
	if _, forgotten, _ := spy.counts(); forgotten != 1 {
		t.Fatalf("Forget called %d times, want 1", forgotten)
	}
	if d := reconcileCount(name, metrics.ResultSuccess) - okBefore; d != 1 {
		t.Fatalf("reconcile_total{result=success} grew by %v, want 1", d)
	}
	if d := reconcileCount(name, metrics.ResultError) - errBefore; d != 1 {
		t.Fatalf("reconcile_total{result=error} grew by %v, want 1", d)
	}
}

func TestLoopRequeueAfter(t *testing.T) {
	const name = "test-loop-requeue"
	const delay = 30 * time.Second
	clk := testingclock.NewFakeClock(time.Now())
	var l *Loop
	l = NewLoopWithRateLimiter(name, func(_ context.Context, key cache.ObjectName) error {
		l.EnqueueAfter(key, delay)
		return nil
	}, zeroDelayLimiter())
	// The delaying queue needs the fake clock; metrics are not what this
	// test is about, so the replacement queue is unnamed.
	l.Queue.ShutDown()
	spy := &spyQueue{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(zeroDelayLimiter(),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Clock: clk})}
	l.Queue = spy
	t.Cleanup(spy.ShutDown)

	reqBefore := reconcileCount(name, metrics.ResultRequeue)
	errBefore := reconcileCount(name, metrics.ResultError)

	l.EnqueueKey(nsA)
	l.processNextWorkItem(context.Background())

	rl, _, after := spy.counts()
	if rl != 0 {
		t.Fatalf("AddRateLimited called %d times for a requeue", rl)
	}
	if after != 1 || spy.addedAfter[0] != delay {
		t.Fatalf("AddAfter calls = %v, want [%s]", spy.addedAfter, delay)
	}
	if got := l.Queue.NumRequeues(nsA); got != 0 {
		t.Fatalf("NumRequeues = %d, a requeue must not count as a failure", got)
	}
	if got := l.Queue.Len(); got != 0 {
		t.Fatalf("key re-added before the delay: Len = %d", got)
	}
	if d := reconcileCount(name, metrics.ResultRequeue) - reqBefore; d != 1 {
		t.Fatalf("reconcile_total{result=requeue} grew by %v, want 1", d)
	}
	if d := reconcileCount(name, metrics.ResultError) - errBefore; d != 0 {
		t.Fatalf("reconcile_total{result=error} grew by %v, want 0", d)
	}

	clk.Step(delay)
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return l.Queue.Len() == 1, nil })
	if err != nil {
		t.Fatalf("key not re-added after the delay: %v", err)
	}
	key, _ := l.Queue.Get()
	l.Queue.Done(key)
	if key != nsA {
		t.Fatalf("re-added key = %q, want ns/a", key)
	}
}

// TestRequeueWithAnErrorIsAnError: a sync that asked for a requeue and
// then failed its status write must have the failure retried with backoff
// and counted as an error, not forgotten behind the requeue's delay.
func TestRequeueWithAnErrorIsAnError(t *testing.T) {
	const name = "test-loop-requeue-joined"
	var l *Loop
	var spy *spyQueue
	l, spy = newTestLoop(t, name, func(_ context.Context, key cache.ObjectName) error {
		l.EnqueueAfter(key, time.Hour)
		return errors.New("patching status: connection refused")
	})
	reqBefore := reconcileCount(name, metrics.ResultRequeue)
	errBefore := reconcileCount(name, metrics.ResultError)
	l.EnqueueKey(nsA)
	l.processNextWorkItem(context.Background())
	if rl, forgotten, after := spy.counts(); rl != 1 || forgotten != 0 || after != 1 {
		t.Fatalf("AddRateLimited=%d Forget=%d AddAfter=%d, want 1, 0 and 1", rl, forgotten, after)
	}
	if got := l.Queue.NumRequeues(nsA); got != 1 {
		t.Fatalf("NumRequeues = %d, want 1: the failure must count towards the backoff", got)
	}
	if d := reconcileCount(name, metrics.ResultError) - errBefore; d != 1 {
		t.Fatalf("reconcile_total{result=error} grew by %v, want 1", d)
	}
	if d := reconcileCount(name, metrics.ResultRequeue) - reqBefore; d != 1 {
		t.Fatalf("reconcile_total{result=requeue} grew by %v, want 1", d)
	}
}

func TestProcessNextWorkItemReturnsFalseOnShutdown(t *testing.T) {
	l, _ := newTestLoop(t, "test-loop-shutdown", func(context.Context, cache.ObjectName) error { return nil })
	l.Queue.ShutDown()
	if l.processNextWorkItem(context.Background()) {
		t.Fatal("processNextWorkItem returned true on a shut-down queue")
	}
}

func TestEnqueueTombstone(t *testing.T) {
	l, _ := newTestLoop(t, "test-loop-enqueue", func(context.Context, cache.ObjectName) error { return nil })
	l.Enqueue(newChild("ns", "child", "1"))
	l.Enqueue(tombstone(newChild("ns", "gone", "1")))
	got := map[string]bool{}
	for l.Queue.Len() > 0 {
		k, _ := l.Queue.Get()
		got[k.String()] = true
		l.Queue.Done(k)
	}
	if !got["ns/child"] || !got["ns/gone"] || len(got) != 2 {
		t.Fatalf("enqueued %v, want ns/child and ns/gone", got)
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// bound (a hang guard, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestRunWaitsForCachesAndDrainsOnCancel(t *testing.T) {
	var (
		synced   atomic.Bool
		polls    atomic.Int32
		calls    atomic.Int32
		finished atomic.Bool
		entered  = make(chan struct{})
		release  = make(chan struct{})
	)
	hasSynced := func() bool {
		polls.Add(1)
		return synced.Load()
	}
	l := NewLoopWithRateLimiter("test-loop-run", func(ctx context.Context, key cache.ObjectName) error {
		if calls.Add(1) == 1 {
			close(entered)
			<-release
			finished.Store(true)
		}
		return nil
	}, zeroDelayLimiter(), hasSynced)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, 2) }()
	l.EnqueueKey(nsA)

	// Run has asked the cache twice and said no: no worker may have started.
	waitFor(t, "cache sync polls", func() bool { return polls.Load() >= 2 })
	if got := calls.Load(); got != 0 {
		t.Fatalf("sync ran %d times before caches synced", got)
	}

	synced.Store(true)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("sync never ran after caches synced")
	}

	cancel()
	waitFor(t, "queue shutdown", l.Queue.ShuttingDown)
	select {
	case <-done:
		t.Fatal("Run returned while a worker was still syncing")
	default:
	}

	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after workers finished")
	}
	if !finished.Load() {
		t.Fatal("Run returned before the in-flight sync finished")
	}
}

// TestRunStoppedBeforeCachesSync: a stop (SIGTERM) while the caches are
// still syncing is a clean shutdown: no sync runs, the queue shuts down and
// Run returns nil, so the process exits 0.
func TestRunStoppedBeforeCachesSync(t *testing.T) {
	l := NewLoopWithRateLimiter("test-loop-nosync", func(context.Context, cache.ObjectName) error {
		t.Error("sync ran although caches never synced")
		return nil
	}, zeroDelayLimiter(), func() bool { return false })
	l.EnqueueKey(nsA)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, 1) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a stop during startup is not a failure: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if !l.Queue.ShuttingDown() {
		t.Fatal("queue not shut down")
	}
}

// The fan-in delay is one window per hundred entries already listed, and
// no delay without a window.
func TestFanInDelay(t *testing.T) {
	for _, tc := range []struct {
		window time.Duration
		listed int
		want   time.Duration
	}{
		{0, 5000, 0},
		{-time.Second, 0, 0},
		{time.Second, 0, time.Second},
		{time.Second, 99, time.Second},
		{time.Second, 100, 2 * time.Second},
		{500 * time.Millisecond, 1000, 5500 * time.Millisecond},
		{500 * time.Millisecond, 3333, 17 * time.Second},
	} {
		if got := FanInDelay(tc.window, tc.listed); got != tc.want {
			t.Errorf("FanInDelay(%v, %d) = %v, want %v", tc.window, tc.listed, got, tc.want)
		}
	}
}

// EnqueueCoalesced folds every add of a key within the delay into one, and
// adds at once without a delay.
func TestEnqueueCoalesced(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	l := NewLoop("coalesce", nil)
	l.Queue.ShutDown()
	l.Queue = workqueue.NewTypedRateLimitingQueueWithConfig(NewRateLimiter(),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Clock: clk})
	defer l.Queue.ShutDown()
	key := cache.ObjectName{Namespace: "ns", Name: "a"}
	for range 100 {
		l.EnqueueCoalesced(key, time.Second)
		clk.Step(5 * time.Millisecond)
	}
	if n := l.Queue.Len(); n != 0 {
		t.Fatalf("%d keys ready before the delay passed, want 0", n)
	}
	clk.Step(time.Second)
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return l.Queue.Len() > 0, nil }); err != nil {
		t.Fatal("the key never became ready")
	}
	if n := l.Queue.Len(); n != 1 {
		t.Errorf("%d keys ready, want the one", n)
	}
	l.EnqueueCoalesced(cache.ObjectName{Namespace: "ns", Name: "b"}, 0)
	if n := l.Queue.Len(); n != 2 {
		t.Errorf("a zero delay did not add at once: %d keys ready", n)
	}
}

// A zero delay adds the key straight away rather than through AddAfter,
// which the workqueue counts in workqueue_retries_total: with the fan-in
// window off (FanInDelay 0), every change would otherwise count as a retry.
func TestEnqueueCoalescedZeroDelayIsNoRetry(t *testing.T) {
	l, spy := newTestLoop(t, "coalesce-now", nil)
	l.EnqueueCoalesced(nsA, 0)
	if _, _, after := spy.counts(); after != 0 {
		t.Errorf("a zero delay went through AddAfter %d times (a workqueue retry each)", after)
	}
	if n := l.Queue.Len(); n != 1 {
		t.Errorf("%d keys ready after a zero-delay add, want 1", n)
	}
}

// A loop started after another syncs nothing before the other has synced
// every key it had at start once; Drained says when that was.
func TestStartAfterWaitsForTheFirstDrain(t *testing.T) {
	var configsDone atomic.Int32
	release := make(chan struct{})
	configs := NewLoop("configs", func(ctx context.Context, key cache.ObjectName) error {
		<-release
		configsDone.Add(1)
		return nil
	})
	var early atomic.Bool
	synced := make(chan cache.ObjectName, 10)
	workloads := NewLoop("workloads", func(ctx context.Context, key cache.ObjectName) error {
		if configsDone.Load() != 3 {
			early.Store(true)
		}
		synced <- key
		return nil
	})
	for _, n := range []string{"a", "b", "c"} {
		configs.EnqueueKey(cache.ObjectName{Namespace: "ns", Name: n})
	}
	workloads.EnqueueKey(cache.ObjectName{Namespace: "ns", Name: "w"})
	workloads.StartAfter(configs.Drained())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = configs.Run(ctx, 2) }()
	go func() { _ = workloads.Run(ctx, 2) }()
	close(release)
	select {
	case <-synced:
	case <-time.After(30 * time.Second):
		t.Fatal("the workload was never synced")
	}
	if early.Load() {
		t.Error("a workload was synced before every config had been synced once")
	}
	select {
	case <-configs.Drained():
	default:
		t.Error("Drained is still open after every config was synced")
	}
}

// An empty queue is drained as soon as the caches synced.
func TestDrainedWithNothingToSync(t *testing.T) {
	l := NewLoop("empty", func(context.Context, cache.ObjectName) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Run(ctx, 1) }()
	select {
	case <-l.Drained():
	case <-time.After(30 * time.Second):
		t.Fatal("Drained never closed")
	}
}

// Idle is false while a key is queued or being synced, and true again
// once the sync returned; a key waiting out a delay is not due, so it
// leaves the loop idle.
func TestIdle(t *testing.T) {
	inSync, release := make(chan struct{}), make(chan struct{})
	l := NewLoop("idle", func(context.Context, cache.ObjectName) error {
		inSync <- struct{}{}
		<-release
		return nil
	})
	if !l.Idle() {
		t.Fatal("a new loop is not idle")
	}
	l.EnqueueKey(cache.ObjectName{Namespace: "ns", Name: "a"})
	if l.Idle() {
		t.Fatal("idle with a key queued")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Run(ctx, 1) }()
	<-inSync
	if l.Idle() {
		t.Fatal("idle with a sync in flight")
	}
	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for !l.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("never idle after the sync returned")
		}
		time.Sleep(time.Millisecond)
	}
	l.Queue.AddAfter(cache.ObjectName{Namespace: "ns", Name: "b"}, time.Hour)
	if !l.Idle() {
		t.Error("a key due in an hour makes the loop busy")
	}
}

// TestSyncsWithoutWritesCounted: a successful sync that wrote nothing is
// counted in reconcile_without_writes_total; one that wrote through the
// Writer (even a write the server refused with a conflict) is not, nor is
// a failed sync.
func TestSyncsWithoutWritesCounted(t *testing.T) {
	const name = "test-loop-without-writes"
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	w := NewWriter(name, nil)
	var write bool
	var fail error
	l, _ := newTestLoop(t, name, func(ctx context.Context, _ cache.ObjectName) error {
		if write {
			modified := srv.DeepCopy()
			modified.Finalizers = append(modified.Finalizers, "example.com/f")
			if _, err := PatchObject(ctx, w, resServers, cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv, modified); err != nil {
				return err
			}
		}
		return fail
	})
	idle := func() float64 { return testutil.ToFloat64(metrics.ReconcileWithoutWrites.WithLabelValues(name)) }
	for _, step := range []struct {
		write bool
		fail  error
		want  float64
	}{
		{write: false, want: 1},
		{write: true, want: 0},
		{write: false, fail: errors.New("boom"), want: 0},
	} {
		write, fail = step.write, step.fail
		before := idle()
		l.EnqueueKey(nsA)
		l.processNextWorkItem(context.Background())
		if d := idle() - before; d != step.want {
			t.Errorf("write=%v fail=%v: reconcile_without_writes_total grew by %v, want %v", step.write, step.fail, d, step.want)
		}
	}
}

// TestHeldLoop: a held loop (a warm standby's) drops every add, delayed
// and rate-limited ones included, so its queue stays empty however many
// events its informers deliver; Run releases it and enqueues each object
// of its primary caches once, and adds pass again.
func TestHeldLoop(t *testing.T) {
	var mu sync.Mutex
	var synced []string
	l := NewLoopWithRateLimiter("test-loop-held", func(_ context.Context, key cache.ObjectName) error {
		mu.Lock()
		synced = append(synced, key.String())
		mu.Unlock()
		return nil
	}, zeroDelayLimiter())
	primary := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, name := range []string{"a", "b"} {
		if err := primary.Add(&metav1.ObjectMeta{Namespace: "team-a", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	l.AddPrimary(primary)
	l.Hold()
	l.Hold() // a second Hold changes nothing: one release frees the queue
	l.EnqueueKey(nsA)
	l.EnqueueAfter(nsA, time.Millisecond)
	l.EnqueueCoalesced(nsA, time.Millisecond)
	l.Queue.AddRateLimited(nsA)
	time.Sleep(10 * time.Millisecond)
	if n := l.Queue.Len(); n != 0 {
		t.Fatalf("a held queue holds %d keys", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, 1) }()
	<-l.Drained()
	mu.Lock()
	got := slices.Clone(synced)
	mu.Unlock()
	slices.Sort(got)
	if want := []string{"team-a/a", "team-a/b"}; !slices.Equal(got, want) {
		t.Errorf("synced %q on release, want each primary object once: %q", got, want)
	}
	l.EnqueueKey(cache.NewObjectName("team-a", "c"))
	waitFor(t, "an add after the release to be synced", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(synced, "team-a/c")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReleaseEnqueuesEachPrimaryObjectOnce: a release enqueues every
// object of the primary caches once (a key that does not parse is
// skipped) and says how many; a second release, or one of a loop never
// held, enqueues nothing.
func TestReleaseEnqueuesEachPrimaryObjectOnce(t *testing.T) {
	l := NewLoopWithRateLimiter("test-loop-release", func(context.Context, cache.ObjectName) error { return nil }, zeroDelayLimiter())
	if n := l.release(context.Background()); n != 0 || l.Queue.Len() != 0 {
		t.Fatalf("a loop never held: released %d, queued %d", n, l.Queue.Len())
	}
	store := cache.NewStore(func(obj any) (string, error) { return obj.(string), nil })
	for _, k := range []string{"team-a/a", "team-b/b", "a/b/c"} {
		if err := store.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	l.AddPrimary(store)
	l.Hold()
	if n := l.release(context.Background()); n != 2 || l.Queue.Len() != 2 {
		t.Fatalf("released %d, queued %d; want 2 and 2", n, l.Queue.Len())
	}
	if n := l.release(context.Background()); n != 0 || l.Queue.Len() != 2 {
		t.Fatalf("a second release: released %d, queued %d; want 0 and still 2", n, l.Queue.Len())
	}
}

// TestLoopHasSynced: synced once every informer and handler registration
// it waits for has.
func TestLoopHasSynced(t *testing.T) {
	var second atomic.Bool
	l := NewLoopWithRateLimiter("test-loop-hassynced", func(context.Context, cache.ObjectName) error { return nil }, zeroDelayLimiter(),
		func() bool { return true })
	l.AddSynced(second.Load)
	if l.HasSynced() {
		t.Fatal("synced while a registration has not")
	}
	second.Store(true)
	if !l.HasSynced() {
		t.Fatal("not synced once every registration has")
	}
}
