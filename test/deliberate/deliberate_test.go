package deliberate

import (
	"slices"
	"strings"
	"testing"
)

// Every difference says what each side writes, why and at what cost, and
// names the suites that accept it; a field appears once per table.
func TestEveryDifferenceIsComplete(t *testing.T) {
	for _, list := range [][]Difference{Workloads, Children} {
		seen := map[string]bool{}
		for _, d := range list {
			key := d.Owner + " " + d.Field
			if seen[key] {
				t.Errorf("%s is listed twice", key)
			}
			seen[key] = true
			if d.Field == "" || d.ToolHive == "" || d.Hivekeeper == "" || d.Why == "" || d.Cost == "" {
				t.Errorf("%s: every column must say something: %+v", key, d)
			}
			for _, s := range d.Suites {
				if !slices.Contains([]Suite{SuiteDifferential, SuiteChildren, SuiteHandover}, s) {
					t.Errorf("%s: unknown suite %q", key, s)
				}
			}
		}
	}
}

// Replace rewrites only what lies between the markers, and refuses a page
// without them.
func TestReplaceRewritesBetweenTheMarkers(t *testing.T) {
	doc := "# Page\n\nBefore.\n\n" + Begin + "\n\nstale table\n\n" + End + "\n\nAfter.\n"
	got, err := Replace(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Page\n\nBefore.\n\n" + Render() + "\n\nAfter.\n"; got != want {
		t.Errorf("Replace = %q, want %q", got, want)
	}
	for _, d := range Workloads {
		if !strings.Contains(got, "| `"+d.Field+"` | "+d.ToolHive+" |") {
			t.Errorf("the table has no row for %s", d.Field)
		}
	}
	if _, err := Replace("# Page\n\nNo markers.\n"); err == nil {
		t.Error("Replace accepted a page without markers")
	}
	if _, err := Replace(End + "\n" + Begin); err == nil {
		t.Error("Replace accepted markers out of order")
	}
}
