// Package toolhive runs ToolHive's own operator, thv-operator at the
// release pinned in hack/versions.env, for hivekeeper's conformance and
// handover suites, and reads its pinned module (CRDs, chart, examples) from
// the Go module cache. Both suites judge hivekeeper against what that
// operator writes, so they share one way of starting it and one way of
// reading and comparing what it wrote (objects.go, diff.go, exceptions.go).
package toolhive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// BinariesEnv names the folder holding ToolHive's thv-proxyrunner, vmcp
// and thv-operator (hack/toolhive-binaries.sh prints it).
const BinariesEnv = "HIVEKEEPER_TOOLHIVE_BINARIES"

// ModulePath is ToolHive's Go module.
const ModulePath = "github.com/stacklok/toolhive"

// ModuleDir returns the folder, in the Go module cache, of the source of
// ToolHive's runtime-oracle release (TOOLHIVE_VERSION): its CRDs, chart
// and examples are what the suites run ToolHive's operator with. Only
// read from there, never copied.
func ModuleDir() (string, error) {
	_, dir, err := framework.ToolHiveSource(framework.ToolHiveRuntimeRelease)
	return dir, err
}

// ReleaseModuleDir is the folder, in the Go module cache, of the source of
// ToolHive at version (a release hack/versions.env pins), and
// ReleaseBinaries the folder of its binaries beside binaries, the suites'
// release's (hack/toolhive-binaries.sh builds every pinned release).
func ReleaseModuleDir(version string) (string, error) {
	return framework.ToolHiveSourceAt(version)
}

// ReleaseBinaries returns the folder of a release's binaries.
func ReleaseBinaries(binaries, version string) string {
	return filepath.Join(filepath.Dir(binaries), version)
}

// CRDDir is where the module keeps its CRDs as plain YAML (the chart's
// templates/ folder holds the same CRDs wrapped for Helm).
func CRDDir(module string) string {
	return filepath.Join(module, "deploy", "charts", "operator-crds", "files", "crds")
}

// ExamplesDir is the module's examples/operator folder.
func ExamplesDir(module string) string {
	return filepath.Join(module, "examples", "operator")
}

// DifferencesSection returns docs/compatibility.md's "The differential
// test", up to the next second-level heading: the suites' lists of
// allowed differences are mirrored there, and tests check the mirror.
func DifferencesSection() (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "compatibility.md"))
	if err != nil {
		return "", err
	}
	const heading = "\n### The differential test\n"
	_, section, ok := strings.Cut(string(doc), heading)
	if !ok {
		return "", fmt.Errorf("docs/compatibility.md has no %q", strings.TrimSpace(heading))
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	return section, nil
}

// Tail returns the last n lines of a log file.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
