package handover_test

import "github.com/hivekeeper/hivekeeper/test/toolhive"

// handoverCauses group pendingDifferences into a work list: the causes
// only a switch shows first, then the differences of output the
// differential test lists too (toolhive.OutputCauses), which a switch
// shows as changes. A difference takes the first cause that matches it.
var handoverCauses = append([]toolhive.Cause{
	toolhive.NewCause("workloads ToolHive's operator does not run", "hivekeeper deploys workloads ToolHive's operator "+
		"fails or waits for (an override with annotations only, a ConfigMap permission profile, an OIDC client Secret it "+
		"waits for and hivekeeper does not read): their children appear at the "+
		"switch and stay after switching back", "", `^(\(object\)|\(writes\))$`,
		`(annotated-server|profile-configmap|shared-auth-vmcp)[^/ ]*$`),
	toolhive.NewCause("rewrites", "the writes that carry the differences below: each goes when its object's bytes match",
		"", `^\(writes\)$`, ``),
}, toolhive.OutputCauses...)
