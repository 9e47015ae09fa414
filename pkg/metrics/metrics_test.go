package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

func gather(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// find returns the metric of family name whose labels include want.
func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f, ok := fams[name]
	if !ok {
		return nil
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
				break
			}
		}
		if match {
			return m
		}
	}
	return nil
}

// wqValues reads the counters of queue name that the test changes; the
// registry is process-global, so tests compare deltas.
type wqValues struct{ depth, adds, retries, work, latency float64 }

func readWorkqueue(fams map[string]*dto.MetricFamily, name string) wqValues {
	by := map[string]string{"name": name}
	return wqValues{
		depth:   find(fams, "workqueue_depth", by).GetGauge().GetValue(),
		adds:    find(fams, "workqueue_adds_total", by).GetCounter().GetValue(),
		retries: find(fams, "workqueue_retries_total", by).GetCounter().GetValue(),
		work:    float64(find(fams, "workqueue_work_duration_seconds", by).GetHistogram().GetSampleCount()),
		latency: float64(find(fams, "workqueue_queue_duration_seconds", by).GetHistogram().GetSampleCount()),
	}
}

func TestWorkqueueMetricsUseStandardNames(t *testing.T) {
	const name = "test-q"
	before := readWorkqueue(gather(t), name)
	l := framework.NewLoopWithRateLimiter(name, func(context.Context, cache.ObjectName) error { return nil },
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](0, 0))
	l.EnqueueKey(cache.NewObjectName("ns", "a"))

	fams := gather(t)
	byName := map[string]string{"name": name}
	for _, series := range []string{
		"workqueue_depth",
		"workqueue_adds_total",
		"workqueue_queue_duration_seconds",
		"workqueue_work_duration_seconds",
		"workqueue_retries_total",
		"workqueue_unfinished_work_seconds",
		"workqueue_longest_running_processor_seconds",
	} {
		if find(fams, series, byName) == nil {
			t.Errorf("%s{name=%q} missing from the registry", series, name)
		}
	}
	after := readWorkqueue(fams, name)
	if d := after.depth - before.depth; d != 1 {
		t.Errorf("workqueue_depth grew by %v, want 1", d)
	}
	if d := after.adds - before.adds; d != 1 {
		t.Errorf("workqueue_adds_total grew by %v, want 1", d)
	}

	// A rate-limited re-add counts as a retry; a processed item is observed.
	key, _ := l.Queue.Get()
	l.Queue.AddRateLimited(key)
	l.Queue.Done(key)
	key, _ = l.Queue.Get()
	l.Queue.Done(key)
	l.Queue.ShutDown()
	after = readWorkqueue(gather(t), name)
	if d := after.retries - before.retries; d != 1 {
		t.Errorf("workqueue_retries_total grew by %v, want 1", d)
	}
	if d := after.work - before.work; d != 2 {
		t.Errorf("workqueue_work_duration_seconds observed %v items, want 2", d)
	}
	if d := after.latency - before.latency; d != 2 {
		t.Errorf("workqueue_queue_duration_seconds observed %v items, want 2", d)
	}
	if d := after.depth - before.depth; d != 0 {
		t.Errorf("workqueue_depth is %v above where it started after draining", d)
	}
}

func TestRegistryHasProcessAndHivekeeperSeries(t *testing.T) {
	// Vectors only appear once a child exists.
	metrics.ReconcileTotal.WithLabelValues("test-registry", metrics.ResultSuccess)
	metrics.ReconcileWithoutWrites.WithLabelValues("test-registry")
	fams := gather(t)
	var goSeries, processSeries bool
	for n := range fams {
		goSeries = goSeries || strings.HasPrefix(n, "go_")
		processSeries = processSeries || strings.HasPrefix(n, "process_")
	}
	if !goSeries {
		t.Error("no go_* series")
	}
	if !processSeries {
		t.Error("no process_* series")
	}
	for _, name := range []string{"hivekeeper_reconcile_total", "hivekeeper_reconcile_without_writes_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	// Only this package's registry is exported, and it must be lint-clean
	// enough to scrape.
	if problems, err := testutil.GatherAndLint(metrics.Registry); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range problems {
			if strings.HasPrefix(p.Metric, "hivekeeper_") {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
		}
	}
}

func TestRESTClientMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`))
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host

	before := find(gather(t), "rest_client_requests_total", map[string]string{"code": "200", "method": "GET", "host": host}).GetCounter().GetValue()

	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "x", metav1.GetOptions{}); err != nil {
		t.Fatalf("Get: %v", err)
	}

	fams := gather(t)
	m := find(fams, "rest_client_requests_total", map[string]string{"code": "200", "method": "GET", "host": host})
	if m == nil {
		t.Fatalf("rest_client_requests_total{code=200,method=GET,host=%s} missing", host)
	}
	if d := m.GetCounter().GetValue() - before; d != 1 {
		t.Fatalf("rest_client_requests_total grew by %v, want 1", d)
	}
	if find(fams, "rest_client_request_duration_seconds", map[string]string{"verb": "GET", "host": host}) == nil {
		t.Fatalf("rest_client_request_duration_seconds{verb=GET,host=%s} missing", host)
	}
}

func TestLeaderElectionMetric(t *testing.T) {
	const lease = "hivekeeper-test-lease"
	cs := kubefake.NewSimpleClientset()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: "default", Name: lease},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "test-identity"},
	}
	started := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		Name:          lease,
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{"name": lease}
	// A new elector reports that it does not lead yet.
	m := find(gather(t), "leader_election_master_status", byName)
	if m == nil {
		t.Fatal("leader_election_master_status missing after NewLeaderElector: provider not wired")
	}
	if v := m.GetGauge().GetValue(); v != 0 {
		t.Fatalf("leader_election_master_status = %v before leading, want 0", v)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); le.Run(ctx) }()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("never became leader on an empty fake cluster")
	}
	// leaderOn runs before OnStartedLeading is started.
	if v := find(gather(t), "leader_election_master_status", byName).GetGauge().GetValue(); v != 1 {
		t.Fatalf("leader_election_master_status = %v while leading, want 1", v)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("elector did not stop")
	}
}
