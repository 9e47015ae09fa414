// Package grafana_test checks the Grafana dashboard shipped in
// deploy/grafana against the metrics the hivekeeper binary exports, so that a
// renamed or removed series breaks a test instead of silently emptying a
// panel.
package grafana_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

const dashboardFile = "hivekeeper-dashboard.json"

// dashboard is the part of Grafana's dashboard model the checks read.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // collapsed rows
}

type variable struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Query json.RawMessage `json:"query"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s is not valid dashboard JSON: %v", dashboardFile, err)
	}
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// query is one PromQL expression of the dashboard and where it is.
type query struct {
	where string
	expr  string
}

func queries(t *testing.T, d dashboard) []query {
	t.Helper()
	var qs []query
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			qs = append(qs, query{where: "panel " + p.Title + " target " + tg.RefID, expr: tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		// Grafana stores a query variable's query as a string (old) or as
		// an object with a "query" field (new).
		var s string
		if err := json.Unmarshal(v.Query, &s); err != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Fatalf("variable %s: unreadable query %s", v.Name, v.Query)
			}
			s = obj.Query
		}
		qs = append(qs, query{where: "variable " + v.Name, expr: s})
	}
	return qs
}

var (
	// label_values(metric{...}, label): the metric is the only series name.
	labelValuesRE = regexp.MustCompile(`^\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{,]`)
	stringRE      = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	// Label lists after grouping and vector-matching keywords name labels,
	// not series.
	groupingRE = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identRE    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// Words that are PromQL syntax rather than series names.
	keywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true,
		"group_left": true, "group_right": true, "inf": true, "nan": true,
		"atan2": true, "start": true, "end": true,
	}
)

// metricNames returns the series names a PromQL expression selects. It is a
// tokenizer, not a parser: strings, label matchers, ranges and grouping
// clauses are removed, and of the remaining identifiers those that call a
// function or aggregation (followed by "(") or are keywords are dropped.
// Grafana variables ($x, ${x}, [[x]]) are removed first.
func metricNames(expr string) []string {
	if m := labelValuesRE.FindStringSubmatch(expr); m != nil {
		return []string{m[1]}
	}
	if strings.HasPrefix(strings.TrimSpace(expr), "label_values(") {
		return nil // label_values(label): no series named
	}
	s := stringRE.ReplaceAllString(expr, `""`)
	s = stripBalanced(s, '{', '}')
	s = stripBalanced(s, '[', ']')
	s = regexp.MustCompile(`\$\{?[a-zA-Z0-9_]+(:[a-z]+)?\}?`).ReplaceAllString(s, " ")
	s = groupingRE.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range identRE.FindAllStringIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		if keywords[strings.ToLower(word)] {
			continue
		}
		// Part of a number such as 1e-9 or 0x1f.
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue
		}
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") {
			continue // function or aggregation
		}
		out = append(out, word)
	}
	return out
}

// stripBalanced removes every open…close section (they do not nest in
// PromQL matchers or ranges, but a subquery range may follow a matcher).
func stripBalanced(s string, open, close byte) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == open:
			depth++
		case s[i] == close && depth > 0:
			depth--
		case depth == 0:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func TestMetricNamesTokenizer(t *testing.T) {
	cases := map[string][]string{
		`sum by (controller, result) (rate(hivekeeper_reconcile_total{job=~"$job", result="error"}[$__rate_interval]))`: {"hivekeeper_reconcile_total"},
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="y{z}"}[5m])))`:                                          {"a_bucket"},
		`(sum(rate(a_total[5m])) or vector(0)) / clamp_min(sum(rate(b_total[5m])), 1e-9)`:                               {"a_total", "b_total"},
		`x / on (pod) group_left (node) y offset 5m`:                                                                    {"x", "y"},
		`label_values(hivekeeper_reconcile_total{job=~"$job"}, namespace)`:                                              {"hivekeeper_reconcile_total"},
		`label_values(namespace)`: nil,
		`up`:                      {"up"},
		`sum(max_over_time(c_total{a="b"}[$__range])) or vector(0)`: {"c_total"},
	}
	for expr, want := range cases {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

// exportedSeries returns every series name /metrics can serve, with the
// suffixes Prometheus queries use: counters as exposed (client_golang names
// them with _total), histograms and summaries as _bucket/_sum/_count.
//
// A vec appears in Gather only once it has a child, so every vec is given
// one label set first: the exported hivekeeper_* vecs directly, the client-go
// adapters through the same hooks client-go calls (workqueue provider, REST
// client metrics, a leader elector's construction).
func exportedSeries(t *testing.T) map[string]bool {
	t.Helper()
	seed := func(labels int) []string {
		v := make([]string, labels)
		for i := range v {
			v[i] = "dashboard-test"
		}
		return v
	}
	metrics.ReconcileTotal.WithLabelValues(seed(2)...)
	metrics.ReconcileDuration.WithLabelValues(seed(1)...)
	metrics.DriftDetections.WithLabelValues(seed(3)...)
	metrics.Writes.WithLabelValues(seed(4)...)
	metrics.WritesSkipped.WithLabelValues(seed(2)...)
	metrics.ChurnWrites.WithLabelValues(seed(2)...)
	metrics.ReferencingWorkloadsRecomputes.WithLabelValues(seed(1)...)

	p := metrics.WorkqueueProvider
	p.NewDepthMetric("dashboard-test")
	p.NewAddsMetric("dashboard-test")
	p.NewLatencyMetric("dashboard-test")
	p.NewWorkDurationMetric("dashboard-test")
	p.NewUnfinishedWorkSecondsMetric("dashboard-test")
	p.NewLongestRunningProcessorSecondsMetric("dashboard-test")
	p.NewRetriesMetric("dashboard-test")

	clientmetrics.RequestResult.Increment(context.Background(), "200", "GET", "dashboard-test")
	clientmetrics.RequestLatency.Observe(context.Background(), "GET", url.URL{Host: "dashboard-test"}, time.Millisecond)

	// Constructing an elector reports the lease as not held (0), which
	// creates leader_election_master_status through hivekeeper's provider.
	// The lock is never called: the elector is not run.
	if _, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "dashboard-test"}},
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		Name:          "dashboard-test",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {},
			OnStoppedLeading: func() {},
		},
	}); err != nil {
		t.Fatalf("NewLeaderElector: %v", err)
	}

	fams, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		n := f.GetName()
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[n], names[n+"_sum"], names[n+"_count"] = true, true, true
		default:
			names[n] = true
		}
	}
	return names
}

func TestDashboardQueriesUseExportedMetrics(t *testing.T) {
	d := loadDashboard(t)
	exported := exportedSeries(t)
	used := map[string]bool{}
	qs := queries(t, d)
	if len(qs) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, q := range qs {
		names := metricNames(q.expr)
		if len(names) == 0 && !strings.HasPrefix(strings.TrimSpace(q.expr), "label_values(") {
			t.Errorf("%s: no metric found in %q", q.where, q.expr)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("%s: %q is not a series hivekeeper exports (expr %q)", q.where, n, q.expr)
			}
		}
	}
	if t.Failed() {
		var all []string
		for n := range exported {
			all = append(all, n)
		}
		sort.Strings(all)
		t.Logf("exported series: %s", strings.Join(all, " "))
	}

	// What the dashboard exists to show (issue 7): each of these is in at
	// least one query.
	for _, n := range []string{
		"hivekeeper_reconcile_total",
		"hivekeeper_reconcile_duration_seconds_bucket",
		"workqueue_depth",
		"workqueue_queue_duration_seconds_bucket",
		"hivekeeper_drift_detections_total",
		"hivekeeper_writes_total",
		"hivekeeper_writes_skipped_total",
		"hivekeeper_churn_writes_total",
		"leader_election_master_status",
		"rest_client_requests_total",
		"process_resident_memory_bytes",
		"go_memstats_heap_alloc_bytes",
	} {
		if !used[n] {
			t.Errorf("no panel queries %s", n)
		}
	}
}

func TestDashboardLayout(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q and title %q must be set", d.UID, d.Title)
	}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range allPanels(d.Panels) {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at (%d,%d)", other, p.Title, x, y)
					goto next
				}
				taken[cell{x, y}] = p.Title
			}
		}
	next:
		if p.Type == "row" {
			continue
		}
		// Every panel follows the dashboard's data source variable, so the
		// dashboard works with whatever Prometheus it is imported into.
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource must be ${datasource}", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
}

// TestChurnPanelsTurnRed pins the one threshold an operator must not miss:
// any churn write is red.
func TestChurnPanelsTurnRed(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title       string                  `json:"title"`
			Targets     []struct{ Expr string } `json:"targets"`
			FieldConfig struct {
				Defaults struct {
					Thresholds struct {
						Steps []struct {
							Color string   `json:"color"`
							Value *float64 `json:"value"`
						} `json:"steps"`
					} `json:"thresholds"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range d.Panels {
		if len(p.Targets) == 0 || !strings.Contains(p.Targets[0].Expr, "hivekeeper_churn_writes_total") {
			continue
		}
		found++
		steps := p.FieldConfig.Defaults.Thresholds.Steps
		// Churn counts are integers: a red step at a value in (0, 1] turns
		// every non-zero value red and leaves 0 green.
		ok := len(steps) == 2 && steps[0].Color == "green" && steps[0].Value == nil &&
			steps[1].Color == "red" && steps[1].Value != nil && *steps[1].Value > 0 && *steps[1].Value <= 1
		if !ok {
			t.Errorf("panel %q: thresholds must be green, then red above 0", p.Title)
		}
	}
	if found == 0 {
		t.Error("no churn panel")
	}
}
