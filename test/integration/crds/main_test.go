// Package crds proves hivekeeper's CRDs against ToolHive's own, read
// mechanically from the source of the pinned releases (hack/versions.env,
// downloaded by hack/toolhive-source.sh): every version, printer column,
// short name, schema path and CEL rule of the API release is in them; every
// example manifest of both releases applies strictly in both API versions
// and reads back whole; and installing them over ToolHive's CRDs, and
// ToolHive's back over them, works on a real API server with objects
// stored.
package crds

import (
	"testing"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// toolhiveSource returns the pinned version and source folder of a
// ToolHive release (framework.ToolHiveAPIRelease or
// framework.ToolHiveRuntimeRelease). Under -short it skips: the first call
// downloads the release.
func toolhiveSource(t *testing.T, release string) (version, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("crds: reads ToolHive's source from the Go module cache, skipped with -short")
	}
	version, dir, err := framework.ToolHiveSource(release)
	if err != nil {
		t.Fatal(err)
	}
	return version, dir
}
