// Package conformance proves that ToolHive's own runtime, at the release
// pinned in hack/versions.env, runs what hivekeeper writes. Every RunConfig
// is decoded strictly with ToolHive's runner.RunConfig (by thvcheck, a
// nested module, so ToolHive's dependency graph stays out of hivekeeper's),
// every vMCP config goes through ToolHive's `vmcp validate`, ToolHive's
// thv-proxyrunner and `vmcp serve` are started on what hivekeeper wrote
// exactly as its Deployments would run them (authenticating against an
// OIDC issuer the test runs, proxying to an MCP server the test serves).
// (ToolHive's example manifests are applied by test/integration/crds, which
// needs no ToolHive binary.)
// ToolHive's own operator, given the same manifests on an API server of
// its own, writes the same bytes but for the differences listed exactly
// (allowedBytes, deliberate; pendingBytes, the work list).
// A test that compared hivekeeper's builder with hivekeeper's comparator
// would prove consistency; these prove compatibility.
package conformance_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

var (
	toolhiveBin    string // folder of thv-proxyrunner, vmcp and thv-operator
	thvcheck       string // the thvcheck binary built for this run
	toolhiveModule string // the pinned ToolHive module's folder in the module cache
	skipReason     string
)

func TestMain(m *testing.M) {
	code := func() int {
		flag.Parse()
		if dir := os.Getenv(toolhive.BinariesEnv); dir != "" && !testing.Short() {
			module, err := toolhive.ModuleDir()
			if err != nil {
				fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
				return 1
			}
			toolchain, err := framework.Pin("TOOLHIVE_GOTOOLCHAIN")
			if err != nil {
				fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
				return 1
			}
			toolhiveBin, toolhiveModule = dir, module
			tmp, err := os.MkdirTemp("", "hivekeeper-thvcheck-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(tmp)
			thvcheck = filepath.Join(tmp, "thvcheck")
			// The nested module is built as it is committed (its go.sum),
			// outside any workspace, with the Go toolchain ToolHive's
			// release needs. CGO_ENABLED=0 and no -trimpath are the flags
			// hack/toolhive-binaries.sh builds ToolHive's runtime with:
			// with the same flags and module versions, ToolHive's ~400
			// packages come from the Go build cache that build filled, and
			// only thvcheck's own few compile (16 s instead of about 15
			// minutes on 2 cores from a cold cache).
			cmd := exec.Command("go", "build", "-o", thvcheck, ".")
			cmd.Dir = "thvcheck"
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0", "GOTOOLCHAIN="+toolchain)
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "conformance: building thvcheck: %v\n%s", err, out)
				return 1
			}
		} else if !testing.Short() {
			skipReason = "conformance: " + toolhive.BinariesEnv + " is not set (make test sets it from hack/toolhive-binaries.sh)"
		}
		return framework.Run(m)
	}()
	os.Exit(code)
}

// requireToolHive skips when ToolHive's binaries are not available (fails
// under CI: framework.Missing).
func requireToolHive(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("conformance: needs ToolHive's runtime and a real API server, skipped with -short")
	}
	if toolhiveBin == "" {
		framework.Missing(t, skipReason)
	}
}
