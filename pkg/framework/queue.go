package framework

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

// MaxRetryDelay caps the per-item backoff of a failing key. A key is never
// dropped: a sync that keeps failing (a quota, an admission webhook or a
// missing grant refusing a write, none of which sends the object an event
// when it is fixed) is retried at this interval for as long as it fails,
// so it converges at most this long after the cause went away.
const MaxRetryDelay = 5 * time.Minute

// LongFailure is how long a key fails before each further failure is
// logged as an error rather than at verbosity 2.
const LongFailure = time.Minute

// SyncFunc converges one object, named by its namespace and name. A sync
// that wants to look again later calls the loop's EnqueueAfter; its error
// is only ever an error, retried with backoff.
type SyncFunc func(ctx context.Context, key cache.ObjectName) error

// Loop is the shared workqueue loop: one named queue, N workers and a retry
// policy. A controller embeds a *Loop and gives it its sync function.
type Loop struct {
	// Name names the queue (workqueue_* metrics) and the controller label of
	// the hivekeeper_* series.
	Name string
	// Queue holds the names of the objects to sync.
	Queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// Sync is the sync handler; tests may replace it.
	Sync SyncFunc
	// Clock times how long keys have been failing; tests replace it.
	Clock clock.PassiveClock

	// failing holds, for each key whose last sync failed, when the run of
	// failures began; a successful sync removes it.
	failingMu sync.Mutex
	failing   map[cache.ObjectName]time.Time

	synced []cache.InformerSynced
	// after are closed when the loops whose objects this one reads have
	// synced each of theirs once (StartAfter).
	after []<-chan struct{}
	// drained is closed the first time the queue is empty with no sync
	// in flight, after the caches synced.
	drained     chan struct{}
	drainedOnce sync.Once
	inFlight    atomic.Int32

	// held is the queue Hold wrapped Queue in, nil when not held.
	held *heldQueue
	// primaries are the caches of the loop's own kind (AddPrimary): Run
	// enqueues every object in them when it releases a held loop.
	primaries []cache.Store
}

// heldQueue drops every add while held is set: a standby replica's
// informers run and call the handlers, but its queue stays empty (no
// queue depth that never drains, no keys of objects long deleted), and
// Run enqueues every object of the loop's kind when it releases it.
type heldQueue struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]
	held atomic.Bool
}

func (q *heldQueue) Add(key cache.ObjectName) {
	if !q.held.Load() {
		q.TypedRateLimitingInterface.Add(key)
	}
}

func (q *heldQueue) AddAfter(key cache.ObjectName, d time.Duration) {
	if !q.held.Load() {
		q.TypedRateLimitingInterface.AddAfter(key, d)
	}
}

func (q *heldQueue) AddRateLimited(key cache.ObjectName) {
	if !q.held.Load() {
		q.TypedRateLimitingInterface.AddRateLimited(key)
	}
}

// Hold makes the loop a warm standby's: until Run, every add to its queue
// is dropped, and Run then enqueues every object of the caches given to
// AddPrimary, as the informers' initial list does at a cold start. Call it
// before the informers start (pkg/app does, for a replica that waits for
// the leader-election lease).
func (l *Loop) Hold() {
	if l.held != nil {
		return
	}
	l.held = &heldQueue{TypedRateLimitingInterface: l.Queue}
	l.held.held.Store(true)
	l.Queue = l.held
}

// AddPrimary adds the cache of the loop's own kind, whose objects Run
// enqueues when it releases a held loop; a controller calls it while it
// registers its handlers, before Run.
func (l *Loop) AddPrimary(s cache.Store) { l.primaries = append(l.primaries, s) }

// release lets a held loop's adds through and enqueues every object of its
// kind, returning how many. The informers update their cache before they
// call the handlers, so an add dropped before the release is of an object
// already in the cache listed after it.
func (l *Loop) release(ctx context.Context) int {
	if l.held == nil || !l.held.held.Load() {
		return 0
	}
	l.held.held.Store(false)
	n := 0
	for _, s := range l.primaries {
		for _, k := range s.ListKeys() {
			if name, err := cache.ParseObjectName(k); err == nil {
				l.Queue.Add(name)
				n++
			}
		}
	}
	klog.FromContext(ctx).Info("Enqueued every object of the warm caches", "count", n)
	return n
}

// MaxStartDelay bounds how long StartAfter holds a loop's workers, so
// that a referenced kind whose queue never empties cannot stop the
// workloads from being synced at all.
const MaxStartDelay = 30 * time.Second

// StartAfter holds the loop's workers, once its caches have synced, until
// every channel is closed (or MaxStartDelay has passed). pkg/app passes the
// Drained channels of the config and group controllers to the workload
// controllers: at a cold start every config is then validated before a
// workload reads it, instead of each workload syncing once against a config
// without status (and writing a Pending status) and again when the config
// turns valid.
func (l *Loop) StartAfter(chs ...<-chan struct{}) { l.after = append(l.after, chs...) }

// Drained is closed the first time, after the caches synced, that the
// queue is empty and no sync is in flight: every object the loop had at
// start has been synced once.
func (l *Loop) Drained() <-chan struct{} { return l.drained }

// waitForReferenced waits for the StartAfter channels, at most
// MaxStartDelay; false means ctx ended meanwhile.
func (l *Loop) waitForReferenced(ctx context.Context) bool {
	wctx, cancel := context.WithTimeout(ctx, MaxStartDelay)
	defer cancel()
	for _, ch := range l.after {
		select {
		case <-ch:
		case <-wctx.Done():
			if ctx.Err() != nil {
				return false
			}
			klog.FromContext(ctx).Info("Starting before the controllers this one reads from synced everything once", "waited", MaxStartDelay)
			return true
		}
	}
	return true
}

// Idle reports whether the queue is empty and no sync is in flight. Keys
// waiting out a delay (EnqueueAfter, a retry's backoff) are not counted:
// they are not due yet.
func (l *Loop) Idle() bool { return l.Queue.Len() == 0 && l.inFlight.Load() == 0 }

func (l *Loop) markIfDrained() {
	if l.Idle() {
		l.drainedOnce.Do(func() { close(l.drained) })
	}
}

// NewRateLimiter returns the rate limiter of every queue: the slower of a
// per-item exponential backoff (5ms doubling up to MaxRetryDelay) and a
// global token bucket (10 qps, burst 100) so that a storm of failures
// cannot flood the API server.
func NewRateLimiter() workqueue.TypedRateLimiter[cache.ObjectName] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// NewLoop creates a loop with a named, metered, rate-limited queue. synced
// are the informers the workers wait for.
func NewLoop(name string, sync SyncFunc, synced ...cache.InformerSynced) *Loop {
	return NewLoopWithRateLimiter(name, sync, NewRateLimiter(), synced...)
}

// NewLoopWithRateLimiter is NewLoop with a chosen rate limiter (tests use a
// fast one).
func NewLoopWithRateLimiter(name string, sync SyncFunc, rl workqueue.TypedRateLimiter[cache.ObjectName], synced ...cache.InformerSynced) *Loop {
	return &Loop{
		Name: name,
		Queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{
			Name:            name,
			MetricsProvider: metrics.WorkqueueProvider,
		}),
		Sync:    sync,
		Clock:   clock.RealClock{},
		failing: map[cache.ObjectName]time.Time{},
		synced:  synced,
		drained: make(chan struct{}),
	}
}

// Enqueue adds the name of obj (a live object or a tombstone).
func (l *Loop) Enqueue(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	l.Queue.Add(key)
}

// EnqueueKey adds an object's name.
func (l *Loop) EnqueueKey(key cache.ObjectName) { l.Queue.Add(key) }

// EnqueueAfter adds key once d has passed: a sync that waits for something
// no event announces (a conflict another controller may resolve) asks to
// be looked at again this way, as kube-controller-manager's controllers do.
// It counts in hivekeeper_reconcile_total{result="requeue"}.
func (l *Loop) EnqueueAfter(key cache.ObjectName, d time.Duration) {
	metrics.ReconcileTotal.WithLabelValues(l.Name, metrics.ResultRequeue).Inc()
	l.Queue.AddAfter(key, d)
}

// CatchUpDelay is how long a sync that found its object behind its own
// status write (Writer.StatusBehind) waits before it looks again: the
// informer usually delivers the write within milliseconds.
const CatchUpDelay = 200 * time.Millisecond

// DeferBehind reports whether obj is behind w's own last status write of
// it and, if so, adds key again after CatchUpDelay: the sync is then
// skipped and runs from the object the write produced. The status write's
// own event does not enqueue the key (PrimaryHandler drops status-only
// updates), hence the timer.
func (l *Loop) DeferBehind(w *Writer, key cache.ObjectName, obj metav1.Object) bool {
	if !w.StatusBehind(obj) {
		return false
	}
	l.EnqueueAfter(key, CatchUpDelay)
	return true
}

// EnqueueCoalesced adds key once d has passed, unless it is already
// waiting to be added sooner: every event for the key during that time is
// folded into the one sync. It is how a status that lists many objects
// (a config's referrers, a group's members) is recomputed once per burst
// of changes instead of once per change. d <= 0 adds the key now.
func (l *Loop) EnqueueCoalesced(key cache.ObjectName, d time.Duration) {
	if d <= 0 {
		l.Queue.Add(key)
		return
	}
	l.Queue.AddAfter(key, d)
}

// FanInDelay is how long a fan-in status that lists listed entries waits
// for more changes before it is recomputed: window, plus one window per
// FanInEntriesPerWindow entries already listed. Each recompute re-sends the
// whole list, so a delay that grows with the list bounds the entries
// written per second by a constant, and the total by a multiple of the time
// the changes take, not of its square.
func FanInDelay(window time.Duration, listed int) time.Duration {
	if window <= 0 {
		return 0
	}
	return window * time.Duration(1+listed/FanInEntriesPerWindow)
}

// FanInEntriesPerWindow is how many listed entries add one window to
// FanInDelay, so a fan-in status re-sends at most about this many entries
// per window (200 a second at the default 500 ms, about 8 KiB of a
// config's referencingWorkloads). The API server's cost of a custom
// resource status write grows with its size (decoding, schema, managed
// fields, the watch event): at 1,000 entries per window, the referrer lists
// of 3 configs being emptied by the deletion of 3,000 MCPServers took 40% of
// kube-apiserver's CPU, and the deletion 77 s instead of 47 s. The price is
// a later status on a large config: 5.5 s at 1,000 referrers.
const FanInEntriesPerWindow = 100

// AddSynced adds informers (or handler registrations) the workers wait for;
// a controller calls it while it registers its handlers, before Run.
func (l *Loop) AddSynced(synced ...cache.InformerSynced) { l.synced = append(l.synced, synced...) }

// HasSynced reports whether every informer and handler registration the
// workers wait for (AddSynced) has synced.
func (l *Loop) HasSynced() bool {
	for _, synced := range l.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// Run waits for the caches, starts workers and blocks until ctx is done;
// then it shuts the queue down and waits for the workers to finish their
// current item.
func (l *Loop) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", l.Name)
	ctx = klog.NewContext(ctx, logger)

	if !cache.WaitForNamedCacheSyncWithContext(ctx, l.synced...) {
		// The wait only gives up when ctx ends: asked to stop while
		// starting is a clean shutdown, not a failure.
		l.Queue.ShutDown()
		return nil
	}
	l.release(ctx)
	if !l.waitForReferenced(ctx) {
		l.Queue.ShutDown()
		return nil
	}
	l.markIfDrained()
	defer metrics.RegisterBackoff(l.Name, l.Backoff)()
	logger.Info("Starting workers", "count", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for l.processNextWorkItem(ctx) {
			}
		})
	}
	<-ctx.Done()
	logger.Info("Shutting down workers")
	l.Queue.ShutDown()
	wg.Wait()
	return nil
}

// processNextWorkItem syncs one key; it returns false once the queue is
// shut down.
func (l *Loop) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := l.Queue.Get()
	if shutdown {
		return false
	}
	l.inFlight.Add(1)
	defer func() {
		l.Queue.Done(key)
		l.inFlight.Add(-1)
		l.markIfDrained()
	}()

	start := time.Now()
	tally := &writeTally{}
	err := l.syncRecovered(context.WithValue(ctx, tallyKey{}, tally), key)
	metrics.ReconcileDuration.WithLabelValues(l.Name).Observe(time.Since(start).Seconds())
	if err == nil && tally.n.Load() == 0 {
		metrics.ReconcileWithoutWrites.WithLabelValues(l.Name).Inc()
	}
	l.handleErr(ctx, key, err)
	return true
}

// writeTally counts the API writes of one sync (Writer.count adds to the
// one in its context), so that the loop can count the syncs an event
// caused that found nothing to write: the work a watch costs besides the
// work it asks for.
type writeTally struct{ n atomic.Int32 }

type tallyKey struct{}

// syncRecovered runs the sync of key and turns a panic into an error, so
// that one object that trips a bug in a builder is retried with backoff
// like any other failure while every other key is synced as usual, instead
// of taking the process (and every controller in it) down.
func (l *Loop) syncRecovered(ctx context.Context, key cache.ObjectName) (err error) {
	defer func() {
		if r := recover(); r != nil {
			metrics.SyncPanics.WithLabelValues(l.Name).Inc()
			err = fmt.Errorf("sync panicked: %v", r)
			klog.FromContext(ctx).Error(err, "Sync panicked; retrying with backoff", "key", key, "stack", string(debug.Stack()))
		}
	}()
	return l.Sync(ctx, key)
}

// handleErr applies the retry policy: success forgets the key's backoff;
// an error is retried with backoff, doubling up to MaxRetryDelay, for as
// long as the sync fails. A key is never dropped.
func (l *Loop) handleErr(ctx context.Context, key cache.ObjectName, err error) {
	if err == nil {
		metrics.ReconcileTotal.WithLabelValues(l.Name, metrics.ResultSuccess).Inc()
		l.Queue.Forget(key)
		l.failingMu.Lock()
		delete(l.failing, key)
		l.failingMu.Unlock()
		return
	}
	metrics.ReconcileTotal.WithLabelValues(l.Name, metrics.ResultError).Inc()
	now := l.Clock.Now()
	l.failingMu.Lock()
	since, ok := l.failing[key]
	if !ok {
		since = now
		l.failing[key] = now
	}
	l.failingMu.Unlock()
	failingFor := now.Sub(since)
	logger := klog.FromContext(ctx)
	if failingFor >= LongFailure {
		logger.Error(err, "Sync keeps failing, retrying with backoff", "key", key, "failingFor", failingFor.Round(time.Second), "retries", l.Queue.NumRequeues(key))
	} else {
		logger.V(2).Info("Sync failed, retrying with backoff", "key", key, "err", err.Error())
	}
	l.Queue.AddRateLimited(key)
}

// Backoff reports the keys whose last sync failed and how long the one
// failing longest has been failing (hivekeeper_keys_in_backoff and
// hivekeeper_oldest_failing_key_seconds).
func (l *Loop) Backoff() (keys int, oldest time.Duration) {
	now := l.Clock.Now()
	l.failingMu.Lock()
	defer l.failingMu.Unlock()
	for _, since := range l.failing {
		oldest = max(oldest, now.Sub(since))
	}
	return len(l.failing), oldest
}
