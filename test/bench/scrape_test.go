package main

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func parse(t *testing.T, txt string) scrape {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(strings.NewReader(txt))
	if err != nil {
		t.Fatal(err)
	}
	return scrape(f)
}

// TestQuantileBetweenScrapes checks the estimate over the observations
// made between two scrapes, interpolated inside the bucket as PromQL's
// histogram_quantile does.
func TestQuantileBetweenScrapes(t *testing.T) {
	before := parse(t, `# TYPE h histogram
h_bucket{controller="a",le="0.1"} 0
h_bucket{controller="a",le="1"} 0
h_bucket{controller="a",le="+Inf"} 0
h_sum{controller="a"} 0
h_count{controller="a"} 0
`)
	after := parse(t, `# TYPE h histogram
h_bucket{controller="a",le="0.1"} 50
h_bucket{controller="a",le="1"} 100
h_bucket{controller="a",le="+Inf"} 100
h_sum{controller="a"} 20
h_count{controller="a"} 100
`)
	match := map[string]string{"controller": "a"}
	if got := quantile(0.5, before, after, "h", match); math.Abs(got-0.1) > 1e-9 {
		t.Errorf("p50 = %v, want 0.1", got)
	}
	if got := quantile(0.75, before, after, "h", match); math.Abs(got-0.55) > 1e-9 {
		t.Errorf("p75 = %v, want 0.55", got)
	}
	if got := quantile(0.99, parse(t, ""), parse(t, ""), "h", match); !math.IsNaN(got) {
		t.Errorf("no observations: %v, want NaN", got)
	}
}
