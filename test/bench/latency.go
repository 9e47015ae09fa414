package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// This file reads where a timed phase's time went, from both sides of the
// wire: the API server's latency per verb and resource
// (apiserver_request_duration_seconds), the writer's own latency per verb
// (client-go's rest_client_request_duration_seconds for hivekeeper, a
// timing transport for the floors), and API Priority and Fairness: which
// priority level each writer's requests are classified into and how long
// requests waited in each level.

// verbStat is the latency of one kind of request over a phase.
type verbStat struct {
	key         string
	count, mean float64
	// p99 is interpolated inside histogram buckets where the source is a
	// histogram, exact where it is a list of durations.
	p99 float64
}

// levelStat is one APF priority level over a phase.
type levelStat struct {
	level                string
	dispatched, meanWait float64
}

// phaseStats is what one phase's requests cost, seen from both sides.
type phaseStats struct {
	server []verbStat
	// otherWrites is every other write the API server served meanwhile
	// (the controller manager's, the scheduler's, kwok's, events, its own
	// IPAddresses), the most frequent first.
	otherWrites []verbStat
	client      []verbStat
	apf         []levelStat
	// flowSchema and priorityLevel classify the writer's identity.
	flowSchema, priorityLevel string
	// cpu is the CPU seconds of kube-apiserver, etcd and the writer
	// (hivekeeper, or the benchmark process for the floor) over the phase.
	cpu map[string]float64
}

// writerResources are the resources the writer under test writes, whose
// API server latency is (nearly) all its own.
var writerResources = []string{"serviceaccounts", "rolebindings", "roles", "configmaps", "services", "deployments", "mcpservers", "mcpservers/status"}

var writeVerbs = []string{"POST", "PATCH", "PUT", "DELETE", "APPLY"}

// histogramDelta is the count and sum of a histogram's observations
// between two scrapes, over the series that match.
func histogramDelta(before, after scrape, name string, match map[string]string) (count, sum float64) {
	for _, s := range []struct {
		m    scrape
		sign float64
	}{{after, 1}, {before, -1}} {
		f := s.m[name]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.Histogram == nil || !matches(m, match) {
				continue
			}
			count += s.sign * float64(m.GetHistogram().GetSampleCount())
			sum += s.sign * m.GetHistogram().GetSampleSum()
		}
	}
	return count, sum
}

// labelValues lists the distinct values of label over the series of name
// that match.
func (s scrape) labelValues(name, label string, match map[string]string) []string {
	var out []string
	f := s[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		if !matches(m, match) {
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == label && !slices.Contains(out, l.GetValue()) {
				out = append(out, l.GetValue())
			}
		}
	}
	sort.Strings(out)
	return out
}

const apiLatency = "apiserver_request_duration_seconds"

// phaseStatsOf assembles the stats of the phase called name: the API
// server's side from its scrapes before and after, the writer's client
// latencies and the CPU the phase took, and the APF level the writer's
// identity (cfg) is classified into in namespace ns. It logs them.
func (e *env) phaseStatsOf(ctx context.Context, name string, client []verbStat, apiBefore, apiAfter scrape, cpu map[string]float64, cfg *rest.Config, ns string) (*phaseStats, error) {
	st := &phaseStats{client: client, apf: apfStats(apiBefore, apiAfter), cpu: cpu}
	st.server, st.otherWrites = serverStats(apiBefore, apiAfter)
	var err error
	if st.flowSchema, st.priorityLevel, err = framework.Classify(ctx, e.kube, cfg, ns); err != nil {
		return nil, err
	}
	var b strings.Builder
	st.render(&b, name)
	logf("%s", b.String())
	return st, nil
}

// serverStats reads the API server's latency of the writer's writes, and
// of every other write, between two of its scrapes.
func serverStats(before, after scrape) (mine, other []verbStat) {
	for _, verb := range writeVerbs {
		for _, res := range after.labelValues(apiLatency, "resource", map[string]string{"verb": verb}) {
			for _, sub := range after.labelValues(apiLatency, "subresource", map[string]string{"verb": verb, "resource": res}) {
				match := map[string]string{"verb": verb, "resource": res, "subresource": sub}
				count, sum := histogramDelta(before, after, apiLatency, match)
				if count <= 0 {
					continue
				}
				key := res
				if sub != "" {
					key += "/" + sub
				}
				v := verbStat{key: verb + " " + key, count: count, mean: sum / count, p99: quantile(0.99, before, after, apiLatency, match)}
				if slices.Contains(writerResources, key) {
					mine = append(mine, v)
				} else {
					other = append(other, v)
				}
			}
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].key < mine[j].key })
	sort.Slice(other, func(i, j int) bool { return other[i].count > other[j].count })
	return mine, other
}

// clientStats reads client-go's request latency per verb from a process's
// scrapes (before may be nil: a process that just started).
func clientStats(before, after scrape) []verbStat {
	const name = "rest_client_request_duration_seconds"
	var out []verbStat
	for _, verb := range after.labelValues(name, "verb", nil) {
		match := map[string]string{"verb": verb}
		count, sum := histogramDelta(before, after, name, match)
		if count <= 0 {
			continue
		}
		out = append(out, verbStat{key: verb, count: count, mean: sum / count, p99: quantile(0.99, before, after, name, match)})
	}
	return out
}

// apfStats reads, per priority level, the requests APF dispatched and
// their mean wait in its queues.
func apfStats(before, after scrape) []levelStat {
	const dispatched = "apiserver_flowcontrol_dispatched_requests_total"
	const wait = "apiserver_flowcontrol_request_wait_duration_seconds"
	var out []levelStat
	for _, level := range after.labelValues(dispatched, "priority_level", nil) {
		match := map[string]string{"priority_level": level}
		n := after.sum(dispatched, match)
		if before != nil {
			n -= before.sum(dispatched, match)
		}
		if n <= 0 {
			continue
		}
		count, sum := histogramDelta(before, after, wait, match)
		l := levelStat{level: level, dispatched: n}
		if count > 0 {
			l.meanWait = sum / count
		}
		out = append(out, l)
	}
	return out
}

// timings records the duration of every request a client sends, by
// method: the floors' side of the latency comparison (hivekeeper's comes
// from its own client-go metrics).
type timings struct {
	mu   sync.Mutex
	byVb map[string][]float64
}

func newTimings() *timings { return &timings{byVb: map[string][]float64{}} }

// wrap returns a copy of cfg whose requests are timed.
func (t *timings) wrap(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			d := time.Since(start).Seconds()
			t.mu.Lock()
			t.byVb[req.Method] = append(t.byVb[req.Method], d)
			t.mu.Unlock()
			return resp, err
		})
	})
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// take returns the latency per method recorded so far, and forgets it.
func (t *timings) take() []verbStat {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []verbStat
	for verb, ds := range t.byVb {
		sort.Float64s(ds)
		var sum float64
		for _, d := range ds {
			sum += d
		}
		i := int(math.Ceil(0.99*float64(len(ds)))) - 1
		out = append(out, verbStat{key: verb, count: float64(len(ds)), mean: sum / float64(len(ds)), p99: ds[max(i, 0)]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	t.byVb = map[string][]float64{}
	return out
}

// render writes the phase's numbers as indented lines of the text table.
func (p *phaseStats) render(b *strings.Builder, name string) {
	if p == nil {
		return
	}
	fmt.Fprintf(b, "    %s, identity in APF: flow schema %s, priority level %s; CPU-s %s\n", name, orDash(p.flowSchema), orDash(p.priorityLevel), formatVerbs(p.cpu, 1))
	line := func(label string, vs []verbStat) {
		parts := make([]string, 0, len(vs))
		for _, v := range vs {
			parts = append(parts, fmt.Sprintf("%s %.0f× mean %.1f ms p99 %.0f ms", v.key, v.count, v.mean*1000, v.p99*1000))
		}
		fmt.Fprintf(b, "      %s: %s\n", label, strings.Join(parts, "; "))
	}
	line("client", p.client)
	line("API server", p.server)
	line("API server, other writes", p.otherWrites[:min(len(p.otherWrites), 10)])
	parts := make([]string, 0, len(p.apf))
	for _, l := range p.apf {
		parts = append(parts, fmt.Sprintf("%s %.0f (wait %.2f ms)", l.level, l.dispatched, l.meanWait*1000))
	}
	fmt.Fprintf(b, "      APF dispatched: %s\n", strings.Join(parts, ", "))
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// latencyReport writes, per N, where the cold start's time went beside the
// request floor's: the identity each was classified as by API Priority and
// Fairness, the syncs that wrote nothing, and the latency of each kind of
// request on both sides of the wire.
func latencyReport(b *strings.Builder, results []*result) {
	b.WriteString("\n## Where the cold start's time goes\n\n")
	b.WriteString("Until every child exists, in the same run: the latency of the writer's requests as the API server measured it (`apiserver_request_duration_seconds`, by verb and resource; these resources are written by the writer alone) and as the writer measured it (hivekeeper: client-go's `rest_client_request_duration_seconds`; the request floor: a timing transport), mean and p99; the API Priority and Fairness flow schema and priority level each writer's identity was classified into (the headers `X-Kubernetes-PF-*` of a request made with it); and how many of hivekeeper's MCPServer syncs wrote nothing (`hivekeeper_reconcile_without_writes_total`). A Service create waits for kube-apiserver's ClusterIP allocator, which allocates one address at a time (docs/scale.md).\n\n")
	for _, r := range results {
		cold, floor := r.coldStats, r.specFloorStats
		if cold == nil || floor == nil {
			continue
		}
		fmt.Fprintf(b, "N=%d: hivekeeper as %s / %s, the request floor as %s / %s; %.0f MCPServer syncs, %.0f of them without a write; cold ÷ request floor %.2f.\n\n",
			r.N, orDash(cold.flowSchema), orDash(cold.priorityLevel), orDash(floor.flowSchema), orDash(floor.priorityLevel),
			r.coldSyncs, r.coldSyncsWithoutWrites, r.coldSeconds/r.specFloorSeconds)
		b.WriteString("| request | cold start: count, mean / p99 | request floor: count, mean / p99 |\n|---|---|---|\n")
		row := func(side string, key string, c, f []verbStat) {
			cell := func(vs []verbStat) string {
				for _, v := range vs {
					if v.key == key {
						return fmt.Sprintf("%.0f, %.1f / %.0f ms", v.count, v.mean*1000, v.p99*1000)
					}
				}
				return "—"
			}
			fmt.Fprintf(b, "| %s %s | %s | %s |\n", side, key, cell(c), cell(f))
		}
		var keys []string
		for _, v := range append(append([]verbStat{}, cold.server...), floor.server...) {
			if !slices.Contains(keys, v.key) {
				keys = append(keys, v.key)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			row("API server:", k, cold.server, floor.server)
		}
		for _, k := range []string{"POST", "PATCH"} {
			row("client:", k, cold.client, floor.client)
		}
		b.WriteString("\n")
	}
}
