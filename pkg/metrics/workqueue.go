package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Workqueue series use client-go's standard names so that existing
// dashboards and alerts work. Every queue must be created with a Name and
// with WorkqueueProvider (passed in the queue config rather than through
// workqueue.SetProvider, which is first-caller-wins process-wide).
var (
	wqDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "depth",
		Help: "Current depth of the workqueue.",
	}, []string{"name"})
	wqAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "adds_total",
		Help: "Total number of adds handled by the workqueue.",
	}, []string{"name"})
	wqLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help:    "How long an item stays in the workqueue before being requested.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	wqWorkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "work_duration_seconds",
		Help:    "How long processing an item from the workqueue takes.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	wqUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "Seconds of work in progress not yet observed by work_duration.",
	}, []string{"name"})
	wqLongestRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "Seconds the longest running processor has been running.",
	}, []string{"name"})
	wqRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "retries_total",
		Help: "Total number of retries handled by the workqueue.",
	}, []string{"name"})
)

func registerWorkqueueMetrics() {
	Registry.MustRegister(wqDepth, wqAdds, wqLatency, wqWorkDuration, wqUnfinished, wqLongestRunning, wqRetries)
}

type workqueueProvider struct{}

// WorkqueueProvider publishes workqueue metrics into Registry.
var WorkqueueProvider workqueue.MetricsProvider = workqueueProvider{}

func (workqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return wqDepth.WithLabelValues(name)
}

func (workqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return wqAdds.WithLabelValues(name)
}

func (workqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return wqLatency.WithLabelValues(name)
}

func (workqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return wqWorkDuration.WithLabelValues(name)
}

func (workqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return wqUnfinished.WithLabelValues(name)
}

func (workqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return wqLongestRunning.WithLabelValues(name)
}

func (workqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return wqRetries.WithLabelValues(name)
}
