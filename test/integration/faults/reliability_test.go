package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/provenance"
)

// WriteReliabilityEnv makes a passing run of the whole suite write
// docs/reliability.md from what its scenarios measured (make reliability).
const WriteReliabilityEnv = "HIVEKEEPER_WRITE_RELIABILITY"

func TestMain(m *testing.M) {
	code := framework.Run(m)
	if code == 0 && os.Getenv(WriteReliabilityEnv) == "1" {
		if err := writeReliability(); err != nil {
			fmt.Fprintln(os.Stderr, "faults: not writing docs/reliability.md:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// sourceRelease is the ToolHive release whose operator's source the
// faults table's last column was read in. It must be the release users
// run (TOOLHIVE_VERSION in hack/versions.env): writeReliability refuses
// to describe another.
const sourceRelease = "v0.66.0"

// inputsRelease is the ToolHive release whose CRDs were given the bad
// inputs in this run (toolhiveCRDServer sets it).
var inputsRelease struct {
	sync.Mutex
	version string
}

func setToolHiveRelease(v string) {
	inputsRelease.Lock()
	inputsRelease.version = v
	inputsRelease.Unlock()
}

// scenario is one row of the faults table: the test that runs it, the
// fault in words, and what ToolHive's operator does in the same case, as
// read in its source at sourceRelease ("unknown" when reading cannot tell).
type scenario struct {
	test, fault, peer string
}

var scenarios = []scenario{
	{"TestAPIServerCrashMidConvergence",
		"kube-apiserver SIGKILLed while 50 MCPServers converge, back 2 s later",
		"unknown (not measured)"},
	{"TestLeaderElectionFailover",
		"two replicas: the leader is SIGKILLed; then the new leader is frozen (SIGSTOP) until a third replica took the Lease, and thawed",
		"controller-runtime leader election with its defaults (15 s lease, 10 s renew deadline) and no release on shutdown, so every rollout waits out the lease; no write fence: a thawed leader's workers write until its elector gives up, up to the renew deadline later"},
	{"TestFailoverAtScale",
		"two replicas with the chart's leader election over 1,000 converged MCPServers: the leader is SIGKILLed, and one server's spec changed before the standby leads",
		"controller-runtime leader election with its defaults (15 s lease, 10 s renew deadline); its standbys' caches run before they lead, so a failover waits out the lease and then syncs every object once, as hivekeeper's"},
	{"TestRacingWriterOnMetadata",
		"another client keeps rewriting the finalizers, labels and annotations of the same MCPServers, and a restart is requested mid-race",
		"finalizers and the restart record are merge patches with an optimistic lock, as in hivekeeper; status is written with full updates"},
	{"TestRestartRecordFailureIsNotReapplied",
		"recording a processed restart request is refused (an admission policy), then allowed",
		"each retry restarts again: the rolling restart stamps the current time, so every refused record is followed by another rollout"},
	{"TestHandEditsOfChildren",
		"the proxy Deployment edited by hand (image, checksum annotation, replicas), the Service and ConfigMap deleted, a label of ToolHive's removed from the RunConfig ConfigMap",
		"repairs the Deployment with a full update that replaces its pod template and labels (labels other writers added are dropped) and keeps a hand-set replica count unless spec.replicas is set; the RunConfig ConfigMap is not watched, so a label removed from it is put back only at the MCPServer's next reconcile for another reason"},
	{"TestServiceCIDRExhausted",
		"a /29 Service range: more MCPServers than Service addresses",
		"backs off (the error goes to controller-runtime's per-item backoff); the status does not say why, the error is only logged"},
	{"TestQuotaRefusalBacksOff",
		"a ResourceQuota refuses the proxy Service, with a message whose used count changes on every attempt",
		"a refused Service backs off and is only logged; a refused Deployment writes the raw error into status.message, and every status update re-queues the MCPServer (no predicate on its watch), so a changing message retries at once, bypassing the backoff"},
	{"TestLongQuotaRefusalConverges",
		"a ResourceQuota refuses the proxy Service for 4 minutes (longer than the retries of a failing key used to last), then is deleted; nothing sends the MCPServer an event",
		"retried with controller-runtime's default per-item backoff (5 ms doubling, capped at 1,000 s) and never dropped: over 4 minutes the same schedule as hivekeeper's, but a cause that lasts more than about 10 minutes can be picked up up to 1,000 s after it is fixed"},
	{"TestLongFinalizerRefusalConverges",
		"the release of a deleted MCPServer's finalizer is refused by an admission policy for 4 minutes, then the policy is removed",
		"the same backoff as for the quota: retried until it works, up to 1,000 s apart"},
	{"TestDeletionAmongLookalikes",
		"MCPServers deleted while unrelated objects carry the names their proxy runner would use (a StatefulSet postgres for MCPServer postgres; mcp-foo-proxy, MCPServer foo's Service, for MCPServer foo-proxy)",
		"deletes them: the finalizer deletes StatefulSet <name>, Services mcp-<name>-headless and mcp-<name> and ConfigMap <name>-runconfig by name, without checking labels, owner or UID"},
}

// measured is what a scenario recorded.
type measured struct {
	did, writes string
	passed      bool
}

// input is one bad input the schemas were given.
type input struct {
	what, answer, peer string
	passed             bool
}

var results = struct {
	sync.Mutex
	faults map[string]*measured
	inputs []*input
}{faults: map[string]*measured{}}

// recordFault stores what the running scenario measured: what hivekeeper
// did, and its writes during the fault. The row says survived only if the
// whole test passes.
func recordFault(t *testing.T, did, writes string) {
	t.Helper()
	name, _, _ := strings.Cut(t.Name(), "/")
	m := &measured{did: did, writes: writes}
	results.Lock()
	results.faults[name] = m
	results.Unlock()
	t.Cleanup(func() {
		results.Lock()
		m.passed = !t.Failed()
		results.Unlock()
	})
}

// recordInput stores one bad input and the API server's answer to it.
func recordInput(t *testing.T, what, answer, peer string) {
	t.Helper()
	in := &input{what: what, answer: answer, peer: peer}
	results.Lock()
	results.inputs = append(results.inputs, in)
	results.Unlock()
	t.Cleanup(func() {
		results.Lock()
		in.passed = !t.Failed()
		results.Unlock()
	})
}

// writeReliability renders docs/reliability.md. It refuses to write a
// partial report: every scenario must have run and passed.
func writeReliability() error {
	results.Lock()
	defer results.Unlock()
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	users, err := framework.Pin("TOOLHIVE_VERSION")
	if err != nil {
		return err
	}
	if users != sourceRelease {
		return fmt.Errorf("the faults table describes ToolHive %s's operator, but users run %s (TOOLHIVE_VERSION): read its source again and update sourceRelease and the scenarios", sourceRelease, users)
	}
	inputsRelease.Lock()
	toolhiveVersion := inputsRelease.version
	inputsRelease.Unlock()
	if toolhiveVersion == "" {
		return fmt.Errorf("the bad inputs were not given to ToolHive's CRDs (run the whole suite)")
	}
	var b strings.Builder
	b.WriteString("# Reliability\n\n" + provenance.Current(root, "make reliability").Line() + "\n\n")
	b.WriteString(`Generated by the fault suite (test/integration/faults) with
HIVEKEEPER_WRITE_RELIABILITY=1; do not edit by hand.

Each row is a test of ` + "`test/integration/faults`" + ` that runs the
hivekeeper binary as it ships against a real kube-apiserver and etcd,
causes the fault, and measures the outcome through the binary's own
metrics and the objects in the API server. The figures below are the
last run's. "Writes" are hivekeeper's API writes
(` + "`hivekeeper_writes_total`" + `) during the fault.

The faults' last column is what ToolHive's own operator (` + sourceRelease + `) does in
the same case, as read in its source; it was not run. The bad inputs'
last column is the answer of ToolHive ` + toolhiveVersion + `'s CRDs to the same
input, given on an API server of their own in the same run.

A sync that fails is retried with a per-object backoff, 5 ms doubling up
to 5 minutes, for as long as it fails: no object is ever given up on. A
cause outside the object (a ResourceQuota, an admission webhook or policy,
a missing RBAC grant) sends the object no event when it is fixed, so the
retries alone bring it back, at most 5 minutes after the fix. A global
token bucket (10 retries a second, bursts of 100) keeps many failing
objects from flooding the API server. A sync that panics is recovered,
logged with the object and counted (` + "`hivekeeper_sync_panics_total`" + `),
and retried the same way. ` + "`hivekeeper_keys_in_backoff`" + ` and
` + "`hivekeeper_oldest_failing_key_seconds`" + ` show what is failing and for how
long ([metrics](metrics.md)).

## Faults survived

| fault | survived | what hivekeeper did | writes during the fault | ToolHive operator ` + sourceRelease + ` (its source) |
|---|---|---|---|---|
`)
	for _, s := range scenarios {
		m := results.faults[s.test]
		if m == nil {
			return fmt.Errorf("scenario %s did not run (run the whole suite)", s.test)
		}
		if !m.passed {
			return fmt.Errorf("scenario %s failed", s.test)
		}
		fmt.Fprintf(&b, "| %s | yes | %s | %s | %s |\n", cell(s.fault), cell(m.did), cell(m.writes), cell(s.peer))
	}
	if len(results.inputs) == 0 {
		return fmt.Errorf("no bad input was tried (run the whole suite)")
	}
	b.WriteString(`
## Bad inputs tried

Each input is created on the API server; the schema must refuse it with a
message that names the field and says what is allowed.

| input | API server's answer | ToolHive ` + toolhiveVersion + `'s CRDs (this run) |
|---|---|---|
`)
	for _, in := range results.inputs {
		if !in.passed {
			return fmt.Errorf("bad input %q was not refused as expected", in.what)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(in.what), cell(in.answer), cell(in.peer))
	}
	return os.WriteFile(filepath.Join(root, "docs", "reliability.md"), []byte(b.String()), 0o644)
}

// cell makes text safe for a Markdown table cell; angle brackets are
// escaped so that <name> is not taken for an HTML tag.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
