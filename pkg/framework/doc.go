// Package framework is the shared loop every hivekeeper controller runs on:
// a named rate-limited workqueue with workers and a retry cap, informer
// event-handler helpers, condition helpers, and the only write helpers the
// controllers use. Every write goes through a Writer so that it is counted in
// the hivekeeper_writes_total, hivekeeper_writes_skipped_total and
// hivekeeper_churn_writes_total series.
package framework
