package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BackoffSource reports a queue's failing keys: how many keys' last sync
// failed (each waits out its backoff or is being retried), and how long
// the one failing longest has been failing.
type BackoffSource func() (keys int, oldest time.Duration)

var (
	keysInBackoffDesc = prometheus.NewDesc(Namespace+"_keys_in_backoff",
		"Keys whose last sync failed and that are retried with backoff, by controller.",
		[]string{"controller"}, nil)
	oldestFailingDesc = prometheus.NewDesc(Namespace+"_oldest_failing_key_seconds",
		"How long the key failing longest has been failing without a successful sync, by controller (0 when none fails).",
		[]string{"controller"}, nil)
)

// backoffCollector reads every running queue's BackoffSource at scrape
// time, so the age of a failing key grows between its retries (which are
// up to 5 minutes apart) instead of being as old as the last retry.
type backoffCollector struct {
	mu      sync.Mutex
	sources map[*backoffEntry]struct{}
}

type backoffEntry struct {
	controller string
	source     BackoffSource
}

var backoff = &backoffCollector{sources: map[*backoffEntry]struct{}{}}

// RegisterBackoff exports src under controller until the returned function
// is called. Queues of the same controller name (one per namespace, or a
// replacement after a restart of the loop) add up: their keys are summed
// and the oldest failure is the oldest of all.
func RegisterBackoff(controller string, src BackoffSource) (unregister func()) {
	e := &backoffEntry{controller: controller, source: src}
	backoff.mu.Lock()
	backoff.sources[e] = struct{}{}
	backoff.mu.Unlock()
	return func() {
		backoff.mu.Lock()
		delete(backoff.sources, e)
		backoff.mu.Unlock()
	}
}

func (c *backoffCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- keysInBackoffDesc
	ch <- oldestFailingDesc
}

func (c *backoffCollector) Collect(ch chan<- prometheus.Metric) {
	type stat struct {
		keys   int
		oldest time.Duration
	}
	stats := map[string]*stat{}
	c.mu.Lock()
	entries := make([]*backoffEntry, 0, len(c.sources))
	for e := range c.sources {
		entries = append(entries, e)
	}
	c.mu.Unlock()
	for _, e := range entries {
		keys, oldest := e.source()
		s := stats[e.controller]
		if s == nil {
			s = &stat{}
			stats[e.controller] = s
		}
		s.keys += keys
		s.oldest = max(s.oldest, oldest)
	}
	for controller, s := range stats {
		ch <- prometheus.MustNewConstMetric(keysInBackoffDesc, prometheus.GaugeValue, float64(s.keys), controller)
		ch <- prometheus.MustNewConstMetric(oldestFailingDesc, prometheus.GaugeValue, s.oldest.Seconds(), controller)
	}
}
