package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape is one read of the controller's /metrics: the benchmark counts the
// controller's own API requests and writes from its own client metrics.
type scrape map[string]*dto.MetricFamily

func scrapeMetrics(url string) (scrape, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return scrape(fams), nil
}

// apiCounters is what the API server's own /metrics says it received and
// sent: request bodies of writes, and watch events to every watcher.
type apiCounters struct {
	writeBytes, watchBytes float64
}

// scrapeAPIServer reads the API server's /metrics with the admin client.
func (e *env) scrapeAPIServer(ctx context.Context) (apiCounters, error) {
	m, err := e.apiScrape(ctx)
	if err != nil {
		return apiCounters{}, err
	}
	return countersOf(m), nil
}

// apiScrape is one read of the API server's /metrics.
func (e *env) apiScrape(ctx context.Context) (scrape, error) {
	raw, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(bytes.NewReader(raw))
}

func countersOf(m scrape) apiCounters {
	var c apiCounters
	for _, verb := range []string{"create", "update", "patch"} {
		c.writeBytes += m.sum("apiserver_request_body_size_bytes", map[string]string{"verb": verb})
	}
	c.watchBytes = m.sum("apiserver_watch_events_sizes", nil)
	return c
}

func (c apiCounters) minus(o apiCounters) apiCounters {
	return apiCounters{writeBytes: c.writeBytes - o.writeBytes, watchBytes: c.watchBytes - o.watchBytes}
}

func matches(m *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		ok := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// sum adds every sample of a counter or gauge, or the sums of a histogram,
// whose labels match.
func (s scrape) sum(name string, match map[string]string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	var total float64
	for _, m := range f.GetMetric() {
		if !matches(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		case m.Histogram != nil:
			// A histogram's sum: bytes for the API server's size histograms.
			total += m.GetHistogram().GetSampleSum()
		}
	}
	return total
}

// byLabel sums a counter per value of one label.
func (s scrape) byLabel(name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	f := s[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		if !matches(m, match) {
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// histogram returns the cumulative bucket counts of a histogram (summed
// over matching series).
func (s scrape) histogram(name string, match map[string]string) (bounds []float64, counts []float64) {
	f := s[name]
	if f == nil {
		return nil, nil
	}
	acc := map[float64]float64{}
	for _, m := range f.GetMetric() {
		if !matches(m, match) || m.Histogram == nil {
			continue
		}
		hasInf := false
		for _, b := range m.GetHistogram().GetBucket() {
			acc[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			hasInf = hasInf || math.IsInf(b.GetUpperBound(), 1)
		}
		// The text format carries the +Inf bucket; add the count only
		// where a source left it out.
		if !hasInf {
			acc[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
		}
	}
	for b := range acc {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	for _, b := range bounds {
		counts = append(counts, acc[b])
	}
	return bounds, counts
}

// quantile estimates a quantile of the observations made between two
// scrapes, interpolating linearly inside the bucket, as PromQL does.
func quantile(q float64, before, after scrape, name string, match map[string]string) float64 {
	bounds, ca := after.histogram(name, match)
	_, cb := before.histogram(name, match)
	if len(bounds) == 0 {
		return math.NaN()
	}
	delta := make([]float64, len(ca))
	for i := range ca {
		delta[i] = ca[i]
		if i < len(cb) {
			delta[i] -= cb[i]
		}
	}
	total := delta[len(delta)-1]
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range bounds {
		if delta[i] >= rank {
			if math.IsInf(b, 1) {
				return prevBound
			}
			if delta[i] == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(delta[i]-prevCount)
		}
		prevBound, prevCount = b, delta[i]
	}
	return prevBound
}

func formatVerbs(m map[string]float64, per float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if m[k] == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", k, m[k]/per))
	}
	return strings.Join(parts, ", ")
}
