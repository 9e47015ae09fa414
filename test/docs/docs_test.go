// Package docs_test checks what the documentation states against the code:
// the counts it gives, the kinds and fields its tables list, the examples
// it promises and the permissions it explains. A doc that says "fourteen
// CRDs" when config/crd holds fifteen, or a compatibility table that
// forgets a field a release added, fails here rather than mislead a user.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/pkg/rbac"
)

const root = "../.."

// crd is what the docs are checked against: a kind, its plural and the
// top-level fields of its spec in the stored version.
type crd struct {
	kind, plural string
	specFields   []string
}

func readCRDs(t *testing.T) []crd {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd: %v", err)
	}
	var out []crd
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range c.Spec.Versions {
			if !v.Storage {
				continue
			}
			var fields []string
			for name := range v.Schema.OpenAPIV3Schema.Properties["spec"].Properties {
				fields = append(fields, name)
			}
			slices.Sort(fields)
			out = append(out, crd{kind: c.Spec.Names.Kind, plural: c.Spec.Names.Plural, specFields: fields})
		}
	}
	return out
}

// reconciled is the set of kinds hivekeeper runs a controller for: those
// its ServiceAccount may watch.
func reconciled(crds []crd) map[string]bool {
	out := map[string]bool{}
	for _, c := range crds {
		if slices.Contains(rbac.ToolhiveResources, c.plural) {
			out[c.kind] = true
		}
	}
	return out
}

// docFiles are the documents a user reads.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(files, filepath.Join(root, "README.md"), filepath.Join(root, "examples", "README.md"),
		filepath.Join(root, "deploy", "charts", "hivekeeper", "Chart.yaml"),
		filepath.Join(root, "deploy", "charts", "hivekeeper", "templates", "NOTES.txt"))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}

// countRE finds "<number> CRDs" and "<number> kinds", also across a line
// break and with the API group between them.
var countRE = regexp.MustCompile("(?i)\\b([a-z]+|[0-9]+)\\s+(?:`toolhive\\.stacklok\\.dev`\\s+)?(CRDs|kinds)\\b")

// Every count of CRDs a document states is the number of CRDs in
// config/crd, and every count of kinds from ten up is either that or the
// number of kinds hivekeeper reconciles (smaller counts are of something
// else: "members of two kinds").
func TestCountsMatchTheCode(t *testing.T) {
	crds := readCRDs(t)
	rec := len(reconciled(crds))
	for _, f := range docFiles(t) {
		for _, m := range countRE.FindAllStringSubmatch(read(t, f), -1) {
			n, ok := numberWords[strings.ToLower(m[1])]
			if !ok {
				var err error
				if n, err = strconv.Atoi(m[1]); err != nil {
					continue // "the CRDs", "served kinds"
				}
			}
			switch {
			case strings.EqualFold(m[2], "CRDs") && n != len(crds) && n != 0:
				t.Errorf("%s says %q: config/crd holds %d CRDs", f, m[0], len(crds))
			case strings.EqualFold(m[2], "kinds") && n >= 10 && n != len(crds) && n != rec:
				t.Errorf("%s says %q: there are %d kinds, %d of them reconciled", f, m[0], len(crds), rec)
			}
		}
	}
}

// examples/ has a manifest of every kind hivekeeper reconciles, as its
// README promises.
func TestExamplesCoverEveryReconciledKind(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	kindRE := regexp.MustCompile(`(?m)^kind:\s*(\w+)`)
	for _, f := range files {
		for _, m := range kindRE.FindAllStringSubmatch(read(t, f), -1) {
			seen[m[1]] = true
		}
	}
	for kind := range reconciled(readCRDs(t)) {
		if !seen[kind] {
			t.Errorf("examples/ has no %s, a kind hivekeeper reconciles", kind)
		}
	}
}

// docs/compatibility.md has a table per kind ("### <Kind>") whose first
// column names every field of the kind's spec, each once, and no field
// the CRD does not have.
func TestCompatibilityTablesListEveryField(t *testing.T) {
	doc := read(t, filepath.Join(root, "docs", "compatibility.md"))
	tables := map[string][]string{}
	var kind string
	fieldRE := regexp.MustCompile("`([A-Za-z0-9]+)`")
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			kind = ""
		}
		if h, ok := strings.CutPrefix(line, "### "); ok {
			kind = strings.TrimSpace(h)
			continue
		}
		if kind == "" || !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range fieldRE.FindAllStringSubmatch(first, -1) {
			tables[kind] = append(tables[kind], m[1])
		}
	}
	for _, c := range readCRDs(t) {
		listed, ok := tables[c.kind]
		if !ok {
			t.Errorf("docs/compatibility.md has no table for %s", c.kind)
			continue
		}
		for _, f := range c.specFields {
			if n := count(listed, f); n != 1 {
				t.Errorf("docs/compatibility.md lists %s.spec.%s %d times, want once", c.kind, f, n)
			}
		}
		for _, f := range listed {
			if !slices.Contains(c.specFields, f) {
				t.Errorf("docs/compatibility.md lists %s.spec.%s, which the CRD does not have", c.kind, f)
			}
		}
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// docs/install.md's table of what the chart grants names exactly the
// custom resources pkg/rbac lets the controller watch.
func TestInstallNamesTheWatchedResources(t *testing.T) {
	doc := read(t, filepath.Join(root, "docs", "install.md"))
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "| `mcpservers`") {
			continue
		}
		cell := strings.SplitN(line, "|", 3)[1]
		var listed []string
		for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(cell, -1) {
			listed = append(listed, m[1])
		}
		want := slices.Clone(rbac.ToolhiveResources)
		slices.Sort(listed)
		slices.Sort(want)
		if !slices.Equal(listed, want) {
			t.Errorf("docs/install.md grants %v, pkg/rbac %v", listed, want)
		}
		return
	}
	t.Error("docs/install.md has no row of custom resources the controller watches")
}

// The repository stands alone: no document points at files it does not
// hold, and the README's first screen stays short enough to be read.
func TestDocsStandAlone(t *testing.T) {
	for _, f := range docFiles(t) {
		s := read(t, f)
		for _, gone := range []string{"BEHAVIOUR.md", "DESIGN.md", "LAYOUT.md", "../shared"} {
			if strings.Contains(s, gone) {
				t.Errorf("%s cites %s, which is not in the repository", f, gone)
			}
		}
	}
	if n := len(read(t, filepath.Join(root, "README.md"))); n >= 20_000 {
		t.Errorf("README.md is %d bytes; keep it under 20 KB and move detail to docs/", n)
	}
	// The migration guide is read from start to end before a switch: a
	// few screens, with the exhaustive material on pages of its own.
	if n := len(read(t, filepath.Join(root, "docs", "migration.md"))); n >= 15_000 {
		t.Errorf("docs/migration.md is %d bytes; keep the guide under 15 KB and move detail to migration-by-hand.md or migration-measured.md", n)
	}
}
