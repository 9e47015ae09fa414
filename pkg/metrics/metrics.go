// Package metrics owns hivekeeper's Prometheus registry and every series the
// process exports: the hivekeeper_* series that make drift and write churn
// visible, and adapters that publish client-go's workqueue, REST client and
// leader-election metrics under their standard names.
//
// The series live in one package-level registry (not the global default
// registry) so that the exported set is exactly what this package declares.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace is the prefix of every hivekeeper-specific series.
const Namespace = "hivekeeper"

// Reconcile results.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	ResultRequeue = "requeue"
)

// Write verbs and outcomes.
const (
	VerbCreate = "create"
	VerbPatch  = "patch"
	VerbUpdate = "update"
	VerbDelete = "delete"

	OutcomeSuccess  = "success"
	OutcomeConflict = "conflict"
	OutcomeError    = "error"
)

// Registry holds every series hivekeeper exports on /metrics.
var Registry = prometheus.NewRegistry()

var (
	// ReconcileTotal counts syncs by controller and result.
	ReconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "reconcile_total",
		Help:      "Syncs by controller and result (success, error, requeue).",
	}, []string{"controller", "result"})

	// ReconcileDuration observes how long one sync takes.
	ReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace,
		Name:      "reconcile_duration_seconds",
		Help:      "Duration of one sync by controller.",
		Buckets:   []float64{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"controller"})

	// ReconcileWithoutWrites counts the successful syncs that made no API
	// write: events that needed no work. Beside reconcile_total it shows
	// how much of a controller's time its watches cost.
	ReconcileWithoutWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "reconcile_without_writes_total",
		Help:      "Successful syncs that made no API write, by controller.",
	}, []string{"controller"})

	// DriftDetections counts comparisons between a desired and a live child
	// that found a difference, by the field that differed.
	DriftDetections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "drift_detections_total",
		Help:      "Drift found between desired and live children, by controller, resource and the comparison that fired.",
	}, []string{"controller", "resource", "field"})

	// Writes counts every API write by verb and outcome.
	Writes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "writes_total",
		Help:      "API writes by controller, resource, verb (create, patch, update, delete) and outcome (success, conflict, error).",
	}, []string{"controller", "resource", "verb", "outcome"})

	// WritesSkipped counts writes avoided because nothing changed.
	WritesSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "writes_skipped_total",
		Help:      "Writes avoided because the computed change was empty, by controller and resource.",
	}, []string{"controller", "resource"})

	// ChurnWrites counts writes to a child whose desired state is identical
	// to the one this process wrote last time: the signature of a hot loop.
	ChurnWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "churn_writes_total",
		Help:      "Writes of the same desired state to the same child twice in a row; must stay 0.",
	}, []string{"controller", "resource"})

	// SyncPanics counts syncs that panicked. The loop recovers the panic,
	// logs it with the object's key and the stack, and retries the key
	// with backoff; the other keys are synced as usual.
	SyncPanics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "sync_panics_total",
		Help:      "Syncs that panicked (recovered, logged with the key and stack, retried with backoff), by controller.",
	}, []string{"controller"})

	// ReferencingWorkloadsRecomputes counts recomputations of an
	// MCPOIDCConfig's referencing workloads.
	ReferencingWorkloadsRecomputes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "referencing_workloads_recomputes_total",
		Help:      "Recomputations of MCPOIDCConfig.status.referencingWorkloads by result (changed, unchanged, error).",
	}, []string{"result"})
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		ReconcileTotal, ReconcileDuration, ReconcileWithoutWrites, DriftDetections, Writes,
		WritesSkipped, ChurnWrites, ReferencingWorkloadsRecomputes, SyncPanics, backoff,
	)
	registerWorkqueueMetrics()
	registerClientMetrics()
	registerLeaderElectionMetrics()
}
