package toolhivekeys_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/operatorenv"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// operatorSources are the folders of ToolHive's module whose code runs in
// its operator and decides what it writes: the operator itself, its
// leader-only services, and the packages that decide the usage-metrics
// middleware from the environment.
var operatorSources = []string{"cmd/thv-operator", "pkg/operator", "pkg/usagemetrics", "pkg/updates"}

var (
	// envRead matches a read of one variable: os.Getenv, os.LookupEnv, or
	// the getter the registry API's builder takes.
	envRead = regexp.MustCompile(`(?:os\.Getenv|os\.LookupEnv|envGetter)\(\s*([A-Za-z_."]+[A-Za-z_"])\s*\)`)
	// envConst matches `Name = "VALUE"` of a constant or variable.
	envConst = regexp.MustCompile(`(?m)^\s*(?:const\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:string\s*)?=\s*"([A-Z][A-Z0-9_]*)"`)
	// ciList is pkg/updates' list of CI variables.
	ciList = regexp.MustCompile(`(?s)ciEnvVars\s*=\s*\[\]string\{(.*?)\}`)
)

// TestEveryOperatorVariableHasACounterpart finds, in the source of the
// suites' release and of the one users run, every environment variable ToolHive's operator reads, and
// requires each to be in operatorenv.Variables: a flag of the same meaning
// or the reason there is none. A variable a new release adds fails here
// until it is decided.
func TestEveryOperatorVariableHasACounterpart(t *testing.T) {
	for _, release := range []string{framework.ToolHiveRuntimeRelease, framework.ToolHiveNewestRelease} {
		t.Run(release, func(t *testing.T) { everyOperatorVariable(t, release) })
	}
}

// everyOperatorVariable is TestEveryOperatorVariableHasACounterpart for
// the release hack/versions.env pins as release.
func everyOperatorVariable(t *testing.T, release string) {
	_, dir, err := framework.ToolHiveSource(release)
	if err != nil {
		framework.Missing(t, fmt.Sprintf("ToolHive's source: %v", err))
	}
	consts := map[string]string{}
	var reads []string
	for _, sub := range operatorSources {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "/test-integration/") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			src := string(b)
			for _, m := range envConst.FindAllStringSubmatch(src, -1) {
				consts[m[1]] = m[2]
			}
			for _, m := range envRead.FindAllStringSubmatch(src, -1) {
				reads = append(reads, m[1])
			}
			if m := ciList.FindStringSubmatch(src); m != nil {
				for _, q := range regexp.MustCompile(`"([A-Z_]+)"`).FindAllStringSubmatch(m[1], -1) {
					reads = append(reads, `"`+q[1]+`"`)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	found := map[string]bool{}
	for _, r := range reads {
		name := strings.Trim(r, `"`)
		if !strings.HasPrefix(r, `"`) {
			// A constant, maybe package-qualified; a parameter of a
			// helper (envVar, key) names no variable of its own.
			_, ident, _ := strings.Cut("."+r, ".")
			if i := strings.LastIndex(r, "."); i >= 0 {
				ident = r[i+1:]
			}
			if name = consts[ident]; name == "" {
				continue
			}
		}
		found[name] = true
	}
	if len(found) < 15 {
		t.Fatalf("found only %d variables in %s: the scan no longer matches ToolHive's code: %v", len(found), dir, found)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range found {
			if !yield(k) {
				return
			}
		}
	}) {
		if _, ok := operatorenv.Lookup(name); !ok {
			t.Errorf("ToolHive's operator reads %s, which pkg/toolhive/operatorenv does not list: map it to a flag or say why not", name)
		}
	}
	t.Logf("%d variables read by ToolHive's operator, each with a counterpart", len(found))
}
