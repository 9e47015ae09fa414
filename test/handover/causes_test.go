package handover_test

import (
	"testing"

	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// handoverCauses group pendingDifferences into a work list: the causes
// only a switch shows first, then the differences of output the
// differential test lists too (toolhive.OutputCauses), which a switch
// shows as changes. A difference takes the first cause that matches it.
var handoverCauses = append([]toolhive.Cause{
	toolhive.NewCause("ToolHive v0.47.0's own output", "none: what ToolHive v0.47.0's operator writes and v0.63.0's no "+
		"longer does (an inline vMCP backend's phase, a builtin permission profile's name, no member secret variable in "+
		"inline mode) changes at a switch from v0.47.0 as it would at an upgrade of ToolHive to v0.63.0; the checksums and "+
		"writes follow", "", "", `^v0\.47\.0:`),
	toolhive.NewCause("workloads ToolHive's operator does not run", "hivekeeper deploys workloads ToolHive's operator "+
		"fails or waits for (an override with annotations only, a ConfigMap permission profile, an OIDC client Secret it "+
		"waits for and hivekeeper does not read): their children appear at the "+
		"switch and stay after switching back", "", `^(\(object\)|\(writes\))$`,
		`(annotated-server|profile-configmap|shared-auth-vmcp)[^/ ]*$`),
	toolhive.NewCause("rewrites", "the writes that carry the differences below: each goes when its object's bytes match",
		"", `^\(writes\)$`, ``),
}, toolhive.OutputCauses...)

// TestRegroupPending rewrites pending_test.go from its own entries when
// the causes change (-regroup-pending), without running a cluster;
// without the flag it does nothing.
func TestRegroupPending(t *testing.T) {
	var diffs []toolhive.Difference
	for _, e := range pendingDifferences {
		for _, o := range e.Objects {
			diffs = append(diffs, toolhive.Difference{Object: o, Path: e.Path, A: e.A, B: e.B})
		}
	}
	if !*regroupPending {
		return
	}
	if err := pendingList.Write(diffs); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", pendingList.File, pendingList.Summary(diffs))
}
