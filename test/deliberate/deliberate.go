// Package deliberate is the list of differences from ToolHive's operator
// that hivekeeper makes on purpose and the suites accept: the
// differential (test/conformance, allowedBytes and
// allowedChildDifferences) and the handover suite (test/handover,
// allowedAtSwitch). Each suite checks that its own list of exceptions
// names exactly the fields listed here for it, and docs/compatibility.md's
// table of deliberate differences is generated from this list (make
// docs-generate; make verify fails when the page is not what Render
// writes), so the page, the list and the suites cannot drift apart.
package deliberate

import (
	"fmt"
	"slices"
	"strings"
)

// Suite is a suite that accepts a deliberate difference.
type Suite string

const (
	// SuiteDifferential compares both operators' children byte for byte
	// (allowedBytes in test/conformance).
	SuiteDifferential Suite = "differential"
	// SuiteChildren compares the children of EmbeddingServers and
	// MCPRegistries whole (allowedChildDifferences in test/conformance).
	SuiteChildren Suite = "children"
	// SuiteHandover switches a cluster from ToolHive's operator to
	// hivekeeper and back (allowedAtSwitch in test/handover).
	SuiteHandover Suite = "handover"
)

// Difference is one deliberate difference, as the page shows it.
type Difference struct {
	// Owner is the kind whose children differ, for the table of
	// EmbeddingServer and MCPRegistry children; empty for the others.
	Owner string
	// Field is the name the suites' exception lists give it.
	Field string
	// ToolHive and Hivekeeper say what each operator writes; Why, why
	// hivekeeper differs; Cost, what it costs at a switch.
	ToolHive, Hivekeeper, Why, Cost string
	// Suites are the suites whose exception lists carry it. None: the
	// suites leave such workloads out instead (the differential's
	// notCompared, the handover suite's refused).
	Suites []Suite
}

// Workloads are the differences in what the workload kinds' children
// hold.
var Workloads = []Difference{
	{
		Field:      "roleRef",
		ToolHive:   "each runner RoleBinding binds a Role written per workload",
		Hivekeeper: "binds the runner ClusterRole the chart creates once, a stdio MCPServer's the stdio one (with `pods/attach`, which ToolHive v0.63.0 grants stdio runners only; v0.47.0 grants it to every runner)",
		Why:        "hivekeeper holds `bind` on three ClusterRoles instead of the right to write Roles",
		Cost:       "to hivekeeper: each runner RoleBinding is deleted and created again (a `roleRef` cannot change in place); back: `switch --back` creates it again bound to ToolHive's Role (ToolHive's operator never changes a binding's `roleRef` itself). No pod restarts",
		Suites:     []Suite{SuiteDifferential, SuiteHandover},
	},
	{
		Field:      "RoleBinding (switch --back)",
		ToolHive:   "binds its own Role, and never changes the `roleRef` of a binding that exists",
		Hivekeeper: "binds its chart's ClusterRoles",
		Why:        "`switch --back` creates the bindings hivekeeper wrote again, bound to ToolHive's Roles of their names (which stay in place while hivekeeper runs), so that the runners, vMCPs and registry APIs get ToolHive's grants back",
		Cost:       "back: each such RoleBinding is created again, as ToolHive's operator wrote it. No pod restarts",
		Suites:     []Suite{SuiteHandover},
	},
	{
		Field:      "Role",
		ToolHive:   "a Role `<name>-proxy-runner` or `<name>-remote-proxy-runner` per workload",
		Hivekeeper: "none",
		Why:        "as above",
		Cost:       "none: ToolHive's Roles stay, bound by nothing, until their workload is deleted",
		Suites:     []Suite{SuiteDifferential},
	},
	{
		Field:      "vMCP roleRef",
		ToolHive:   "each vMCP RoleBinding `<name>-vmcp` binds a Role written per vMCP",
		Hivekeeper: "binds the ClusterRole of its mode the chart creates once",
		Why:        "hivekeeper never reads a Secret, so it cannot write a Role that grants Secret reads; binding is all it holds, and the ClusterRoles are narrower than ToolHive's Role",
		Cost:       "to hivekeeper: each vMCP RoleBinding is deleted and created again; back: `switch --back` creates it again bound to ToolHive's Role. No pod restarts",
		Suites:     []Suite{SuiteDifferential, SuiteHandover},
	},
	{
		Field:      "vMCP Role",
		ToolHive:   "a Role `<name>-vmcp` per vMCP",
		Hivekeeper: "none",
		Why:        "as above",
		Cost:       "none: ToolHive's Roles stay, bound by nothing, until their vMCP is deleted",
		Suites:     []Suite{SuiteDifferential},
	},
	{
		Field:      "vMCP config checksum",
		ToolHive:   "the checksums of the vMCP configs that differ by `outgoingAuth.default.type`, `backends[].type` or the xaa client secret variables alone",
		Hivekeeper: "follow their bytes",
		Why:        "as those rows",
		Cost:       "as those rows",
		Suites:     []Suite{SuiteDifferential},
	},
	{
		Field:      "spec.volumes host paths",
		ToolHive:   "each `spec.volumes` host path also mounted into the proxy runner's pod",
		Hivekeeper: "in the RunConfig only",
		Why:        "the runner does not use them, and a `hostPath` volume keeps the pod from the baseline Pod Security Standard ([above](#host-paths-are-not-mounted-into-the-proxy-pod))",
		Cost:       "a proxy with `spec.volumes` rolls, each way",
		Suites:     []Suite{SuiteDifferential, SuiteHandover},
	},
	{
		Field:      "workloads ToolHive's operator refuses",
		ToolHive:   "fails or waits for a workload with a tool override of annotations only or an OIDC client Secret it cannot read",
		Hivekeeper: "runs it: the override left out, the Secret left to the pod",
		Why:        "the workload is usable ([above](#tool-overrides-and-filters))",
		Cost:       "their children appear at the switch to hivekeeper and stay after switching back until the workload is deleted",
		Suites:     []Suite{},
	},
	{
		Field:      "ToolHive's take-over updates",
		ToolHive:   "updates an EmbeddingServer's StatefulSet and a proxy with a pod template once when it takes them back",
		Hivekeeper: "—",
		Why:        "ToolHive's operator's own writes; no field of theirs changes",
		Cost:       "one update each at the switch back; no pod restarts",
		Suites:     []Suite{SuiteHandover},
	},
	{
		Field:      "outgoingAuth.default.type",
		ToolHive:   "`discovered` for a default of type `discovered`",
		Hivekeeper: "`unauthenticated`",
		Why:        "`discovered` is not a strategy type: `vmcp validate` refuses ToolHive's config; `unauthenticated` is what ToolHive's converter maps it to",
		Cost:       "the vMCP's `config.yaml` changes, so its Deployment rolls, each way",
		Suites:     []Suite{SuiteDifferential, SuiteHandover},
	},
	{
		Field:      "backends[].type",
		ToolHive:   "none for an MCPServerEntry's backend in `inline` mode, beside its `caBundlePath` too",
		Hivekeeper: "`entry` beside a `caBundlePath`, none otherwise (as ToolHive's operator)",
		Why:        "vmcp refuses a `caBundlePath` on a backend that is not of type `entry` (`vmcp validate` and `vmcp serve` both), so ToolHive's vMCP over an entry with a CA bundle does not start",
		Cost:       "that vMCP's `config.yaml` changes, so its Deployment rolls, each way; its pod was not running under ToolHive's operator",
		Suites:     []Suite{SuiteDifferential, SuiteHandover},
	},
	{
		Field: "xaa client secret variables",
		ToolHive: "in `discovered` mode an `xaa` strategy of `spec.outgoingAuth` (the default or a backend's) names no variable for its " +
			"client secrets, though the vmcp container gets them",
		Hivekeeper: "`idpClientSecretEnv` and `targetClientSecretEnv`, as ToolHive's operator writes them in `inline` mode",
		Why: "without them ToolHive's vmcp has no secret for a client the strategy names, and every call to a backend of that " +
			"strategy fails",
		Cost:   "the vMCP's `config.yaml` changes, so its Deployment rolls, each way",
		Suites: []Suite{SuiteDifferential, SuiteHandover},
	}}

// Children are the differences in the children of EmbeddingServers and
// MCPRegistries.
var Children = []Difference{
	{
		Owner:      "MCPRegistry",
		Field:      "Role",
		ToolHive:   "a Role `<name>-registry-api` with the registry API's rules",
		Hivekeeper: "none",
		Why:        "a Role's creator must hold every rule of it; hivekeeper binds the chart's ClusterRole instead ([above](#embeddingserver-and-mcpregistry))",
		Cost:       "none: ToolHive's Role stays, bound by nothing, until the MCPRegistry is deleted",
		Suites:     []Suite{SuiteChildren},
	},
	{
		Owner:      "MCPRegistry",
		Field:      "RoleBinding/roleRef",
		ToolHive:   "that Role",
		Hivekeeper: "the ClusterRole `<release>-registry-api` (the same rules)",
		Why:        "as above",
		Cost:       "to hivekeeper: the binding is deleted and created again (a `roleRef` cannot change in place); back: `switch --back` creates the binding again bound to ToolHive's Role. No pod restarts",
		Suites:     []Suite{SuiteChildren, SuiteHandover},
	},
}

// Fields returns the fields of the differences s accepts, sorted.
func Fields(s Suite) []string {
	var out []string
	for _, d := range append(slices.Clone(Workloads), Children...) {
		if slices.Contains(d.Suites, s) {
			out = append(out, d.Field)
		}
	}
	slices.Sort(out)
	return out
}

// Begin and End mark the generated part of docs/compatibility.md.
const (
	Begin = "<!-- BEGIN deliberate differences: generated by make docs-generate from test/deliberate; do not edit -->"
	End   = "<!-- END deliberate differences -->"
)

// Render is the generated part of docs/compatibility.md, between Begin
// and End.
func Render() string {
	var b strings.Builder
	b.WriteString(Begin + "\n\n")
	b.WriteString("These differences are deliberate (`allowedBytes` in the differential,\n`allowedAtSwitch` in the handover suite):\n\n")
	b.WriteString("| field | ToolHive's operator | hivekeeper | why | cost at a switch |\n|---|---|---|---|---|\n")
	for _, d := range Workloads {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", d.Field, d.ToolHive, d.Hivekeeper, d.Why, d.Cost)
	}
	b.WriteString("\nThe children of EmbeddingServers and MCPRegistries differ in these, and no\nothers (`allowedChildDifferences`):\n\n")
	b.WriteString("| owner | child | ToolHive's operator | hivekeeper | why | cost at a switch |\n|---|---|---|---|---|---|\n")
	for _, d := range Children {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s |\n", d.Owner, d.Field, d.ToolHive, d.Hivekeeper, d.Why, d.Cost)
	}
	b.WriteString("\n" + End)
	return b.String()
}

// Replace returns doc with its generated part rewritten, or an error if
// doc does not hold the markers once each, in order.
func Replace(doc string) (string, error) {
	i, j := strings.Index(doc, Begin), strings.Index(doc, End)
	if i < 0 || j < i || strings.Count(doc, Begin) != 1 || strings.Count(doc, End) != 1 {
		return "", fmt.Errorf("want one %q and, after it, one %q", Begin, End)
	}
	return doc[:i] + Render() + doc[j+len(End):], nil
}
