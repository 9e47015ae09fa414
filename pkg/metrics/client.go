package metrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// REST client series, under client-go's standard names. They are how the
// benchmark counts API requests per object by verb.
var (
	restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Number of HTTP requests, partitioned by status code, method, and host.",
	}, []string{"code", "method", "host"})
	restLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Request latency in seconds, by verb and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	}, []string{"verb", "host"})
	leaderStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "1 while this process leads the named lease, 0 otherwise.",
	}, []string{"name"})
	leaderSlowpath = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leader_election_slowpath_total",
		Help: "Lease renewals that needed the slow path.",
	}, []string{"name"})
)

type resultAdapter struct{}

func (resultAdapter) Increment(_ context.Context, code, method, host string) {
	restRequests.WithLabelValues(code, method, host).Inc()
}

type latencyAdapter struct{}

func (latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	restLatency.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

func registerClientMetrics() {
	Registry.MustRegister(restRequests, restLatency)
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestResult:  resultAdapter{},
		RequestLatency: latencyAdapter{},
	})
}

type leaderProvider struct{}

func (leaderProvider) NewLeaderMetric() leaderelection.LeaderMetric { return leaderMetric{} }

type leaderMetric struct{}

func (leaderMetric) On(name string)                { leaderStatus.WithLabelValues(name).Set(1) }
func (leaderMetric) Off(name string)               { leaderStatus.WithLabelValues(name).Set(0) }
func (leaderMetric) SlowpathExercised(name string) { leaderSlowpath.WithLabelValues(name).Inc() }

func registerLeaderElectionMetrics() {
	Registry.MustRegister(leaderStatus, leaderSlowpath)
	leaderelection.SetProvider(leaderProvider{})
}
