package docs_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tableAfter returns the rows (cells trimmed, the separator row left out)
// of the first Markdown table after the line that starts with heading,
// or of the table whose first row starts with heading.
func tableAfter(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("no %q", heading)
	}
	var rows [][]string
	started := false
	lines := strings.Split(doc[i:], "\n")
	if !strings.HasPrefix(heading, "|") {
		lines = lines[1:]
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	return rows
}

// The README's comparison with ToolHive's operator is the generated
// run's: each of its rows is a row of docs/performance.md's table against
// ToolHive's operator, with the same figures, and the ToolHive release
// is the one that run measured.
func TestReadmeComparisonIsTheGeneratedRun(t *testing.T) {
	perf := read(t, filepath.Join(root, "docs", "performance.md"))
	readme := read(t, filepath.Join(root, "README.md"))
	generated := tableAfter(t, perf, "## Against ToolHive's operator")
	release := regexp.MustCompile(`^ToolHive (v[0-9.]+)'s operator$`).FindStringSubmatch(generated[0][1])
	if release == nil {
		t.Fatalf("docs/performance.md's table against ToolHive's operator has the header %q", generated[0])
	}
	byMeasure := map[string][]string{}
	for _, r := range generated[1:] {
		byMeasure[r[0]] = r
	}
	quoted := tableAfter(t, readme, "| | hivekeeper | ToolHive's operator")
	if want := "ToolHive's operator " + release[1]; quoted[0][2] != want {
		t.Errorf("README.md compares with %q; docs/performance.md's run measured %q", quoted[0][2], want)
	}
	for _, vs := range regexp.MustCompile(`side by side with ToolHive's operator (v[0-9.]+)`).FindAllStringSubmatch(readme, -1) {
		if vs[1] != release[1] {
			t.Errorf("README.md says it measured ToolHive's operator %s; docs/performance.md's run measured %s", vs[1], release[1])
		}
	}
	if len(quoted) < 2 {
		t.Fatal("README.md's comparison table has no rows")
	}
	for _, q := range quoted[1:] {
		g, ok := byMeasure[q[0]]
		switch {
		case !ok:
			t.Errorf("README.md quotes %q, which docs/performance.md's table against ToolHive's operator does not hold", q[0])
		case q[1] != g[2] || q[2] != g[1]:
			t.Errorf("README.md quotes %q as %s (hivekeeper) and %s (ToolHive); docs/performance.md holds %s and %s", q[0], q[1], q[2], g[2], g[1])
		}
	}
}

// The README's bytes written per MCPServer are those of docs/performance.md's
// scale table, at every N it names.
func TestReadmeBytesPerMCPServerAreTheGeneratedRun(t *testing.T) {
	perf := read(t, filepath.Join(root, "docs", "performance.md"))
	readme := strings.Join(strings.Fields(read(t, filepath.Join(root, "README.md"))), " ")
	m := regexp.MustCompile(`bytes written per MCPServer stay the same \(([0-9.]+ kB) at ([0-9, and]+):`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README.md does not quote the bytes written per MCPServer as \"stay the same (<x> kB at <N>, <N> and <N>:\"")
	}
	table := tableAfter(t, perf, "## Scale")
	col := -1
	for j, h := range table[0] {
		if h == "written during create" {
			col = j
		}
	}
	if col < 0 {
		t.Fatalf("docs/performance.md's scale table has no column \"written during create\": %q", table[0])
	}
	perN := map[string]string{}
	for _, r := range table[1:] {
		if each := regexp.MustCompile(`\(([0-9.]+ kB) each\)`).FindStringSubmatch(r[col]); each != nil {
			perN[r[0]] = each[1]
		}
	}
	for _, n := range regexp.MustCompile(`[0-9][0-9,]*`).FindAllString(m[2], -1) {
		n = strings.ReplaceAll(n, ",", "")
		if got, ok := perN[n]; !ok || got != m[1] {
			t.Errorf("README.md says %s per MCPServer at N=%s; docs/performance.md's scale table says %q", m[1], n, got)
		}
	}
}
