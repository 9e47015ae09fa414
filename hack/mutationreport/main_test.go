package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A survivor on a changed line fails the check until the equivalent file
// lists it by file, type and line text; the listing still matches after
// the line moves, and an entry without a reason is refused.
func TestCheckChangedEquivalent(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll("pkg/x", 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pkg/x/x.go", "package x\n\nfunc f(n int) bool {\n\treturn n  >  3\n}\n")
	write("x.json", `{"files":[{"file_name":"x.go","mutations":[
		{"type":"CONDITIONALS_BOUNDARY","status":"LIVED","line":4,"column":11},
		{"type":"CONDITIONALS_NEGATION","status":"KILLED","line":4,"column":11}]}]}`)
	run := func(equivFile string) (int, string) {
		t.Helper()
		stats := map[string]*pkgStats{}
		if err := read("pkg/x", "x.json", stats); err != nil {
			t.Fatal(err)
		}
		var equiv []equivalence
		if equivFile != "" {
			var err error
			if equiv, err = readEquivalent(equivFile); err != nil {
				t.Fatal(err)
			}
		}
		var out strings.Builder
		return checkChanged([]string{"pkg/x"}, stats, equiv, &out), out.String()
	}
	if rc, out := run(""); rc != 1 || !strings.Contains(out, "pkg/x/x.go:4:11 CONDITIONALS_BOUNDARY: return n > 3") {
		t.Fatalf("unlisted survivor: rc %d, output:\n%s", rc, out)
	}
	write("eq.txt", "# n is never 3 here.\npkg/x/x.go CONDITIONALS_BOUNDARY return n > 3\n")
	if rc, out := run("eq.txt"); rc != 0 || !strings.Contains(out, "1 survived (1 listed equivalent)") {
		t.Fatalf("listed survivor: rc %d, output:\n%s", rc, out)
	}
	write("eq.txt", "# n is never 3 here.\npkg/x/x.go CONDITIONALS_NEGATION return n > 3\n")
	if rc, _ := run("eq.txt"); rc != 1 {
		t.Fatal("an entry of another mutant type excused the survivor")
	}
	write("eq.txt", "pkg/x/x.go CONDITIONALS_BOUNDARY return n > 3\n")
	if _, err := readEquivalent(filepath.Join(dir, "eq.txt")); err == nil {
		t.Fatal("an entry without a reason was accepted")
	}
}
