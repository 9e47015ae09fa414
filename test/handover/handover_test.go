package handover_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/operatorenv"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// The identities of the two operators: each gets a client certificate of
// its own (in system:masters, so neither needs RBAC set up), which is how
// the audit log tells their writes apart from each other and from the
// suite's own (the admin token).
const (
	thvUser  = "toolhive-operator"
	hiveUser = "hivekeeper"
	// thvNamespace is ToolHive's operator's own namespace.
	thvNamespace = toolhive.OperatorNamespace
	// quiet is how long an operator must not write before it counts as
	// settled (with empty work queues).
	quiet = 3 * time.Second
)

// suite is the cluster and what the test knows of it.
type suite struct {
	t        *testing.T
	scenario scenario
	// values is the values file ToolHive's chart renders its operator's
	// environment from, "" for its defaults.
	values   string
	srv      *framework.Server
	env      *framework.Env
	audit    *framework.AuditLog
	dir      string
	module   string
	binaries string
	// operatorFlags are hivekeeper's flags for the settings ToolHive's
	// chart gives its operator (operatorenv.Flags): images, proxy host,
	// usage metrics, ...
	operatorFlags []string
	cases         []*toolhive.Case
	kubeconfig    map[string]string // by user
	// resources are the kinds snapshotted: every child kind and every
	// custom resource kind of the load.
	resources []schema.GroupVersionResource
	// thv and hk are the operators running, or last run.
	thv *toolhive.Operator
	hk  *hivekeeper
}

// scenario is one cluster a ToolHive user switches: the values ToolHive's
// operator chart was installed with. Every object of a scenario but the
// first is named with its name as a prefix ("production:to-hivekeeper
// ..."); a difference a scenario's lists do not name is judged by the
// first scenario's lists, so what every cluster shows is listed once.
type scenario struct {
	name string
	// values is a values file for ToolHive's chart (testdata of
	// test/toolhive), "" for the chart's defaults; its allowedNamespaces
	// are set to the load's namespaces, as the user would.
	values string
	// cluster runs the rest of the control plane (the garbage collector,
	// the namespace controller, kwok's pods) instead of the suite's
	// stand-in kubelet; only the cases named in only are loaded.
	cluster bool
	only    []string
	// without are cases left out of the load.
	without []string
	// noRestarts: preflight must predict no restart, switch must then run
	// without --allow-restarts, and neither direction may restart a pod;
	// after the switch back, every custom resource must delete under
	// ToolHive's operator.
	noRestarts bool
	// release runs that ToolHive release (one hack/versions.env pins)
	// instead of the suites' (TOOLHIVE_SUITES_VERSION).
	release string
	// unmanaged are the workloads that release's operator runs and
	// hivekeeper refuses, as --allow-unmanaged names them: the switch is
	// told to leave them as they are.
	unmanaged []string
}

var scenarios = []scenario{
	{name: ""},
	{name: "production", values: "production-values.yaml"},
	// The older releases a user may still be on: preflight picks the
	// release hivekeeper writes for each (release.Target).
	{name: "v0.63.0", release: "v0.63.0"},
	{name: "v0.47.0", release: "v0.47.0", without: newerThanV047, unmanaged: []string{
		// A composite tool definition v0.47.0's operator accepts and
		// hivekeeper, as v0.63.0's, refuses: the switch is told to leave it.
		"VirtualMCPServer/examples-virtual-mcps-composite-tool-with-elicitations/vmcp-interactive-deploy",
	}},
	// The release users run, with its chart's defaults and with usage
	// metrics turned off: hivekeeper writes what it writes (its usage-metrics
	// variables, the installation's id read from its ConfigMap, the TLS
	// listener's port), so a switch and back restarts and rewrites nothing.
	{name: "v0.66.0", release: "v0.66.0", noRestarts: true, only: newestCases},
	{name: "v0.66.0-no-usage-metrics", release: "v0.66.0", values: "usage-metrics-off-values.yaml", noRestarts: true, only: newestCases},
	// The load without the workloads hivekeeper restarts on purpose
	// (docs/compatibility.md): what most clusters are.
	{name: "no-restarts", noRestarts: true, without: restartedOnPurpose},
}

// casesOnly keeps, of each entry, the objects of cases (an entry's object
// is "<direction> <case> <Kind>/<name>"): some entries name objects of
// their own whatever the cases given.
func casesOnly(list []toolhive.Exception, cases []*toolhive.Case) []toolhive.Exception {
	var out []toolhive.Exception
	for _, e := range list {
		e.Objects = slices.DeleteFunc(slices.Clone(e.Objects), func(o string) bool {
			fields := strings.Fields(o)
			return len(fields) < 2 || !slices.ContainsFunc(cases, func(c *toolhive.Case) bool { return c.Name == fields[1] })
		})
		if len(e.Objects) > 0 {
			out = append(out, e)
		}
	}
	return out
}

// newestCases are the load of the scenarios of the release users run: an
// MCPServer, an MCPRemoteProxy and a VirtualMCPServer each with an embedded
// authorization server whose TLS listener is a port at that release.
var newestCases = []string{"table/37-auth-server-tls-listener.yaml"}

// restartedOnPurpose are the cases with a workload whose pods a switch
// restarts, for a reason docs/compatibility.md gives: host paths
// (allowedAtSwitch's "spec.volumes host paths"), two vMCP configs
// ToolHive's vmcp refuses ("outgoingAuth.default.type", "backends[].type")
// and one it cannot use ("xaa client secret variables").
var restartedOnPurpose = []string{
	"table/15-runtime-features.yaml", "table/21-permission-profile-configmap.yaml",
	"table/24-vmcp-config.yaml", "table/35-vmcp-entries.yaml", "table/46-vmcp-xaa-discovered.yaml",
}

// label is how the scenario prefixes a switch's direction.
func (sc scenario) label(direction string) string {
	if sc.name == "" {
		return direction
	}
	return sc.name + ":" + direction
}

// TestHandover switches a cluster from ToolHive's operator to hivekeeper
// and back, once per scenario, and fails on every difference neither
// allowedDifferences (deliberate, in docs/compatibility.md) nor
// pendingDifferences (the work list) names exactly, and, when every
// scenario ran, on every entry of theirs no difference matched.
func TestHandover(t *testing.T) {
	built := buildHivekeeper(t)
	judge := toolhive.NewJudge()
	var pending []toolhive.Difference
	seen := map[string]bool{} // the first scenario's pending differences
	judged := map[string]bool{}
	ran := 0
	for _, sc := range scenarios {
		t.Run("chart="+cmp.Or(sc.name, "defaults"), func(t *testing.T) {
			s := newSuite(t, sc)
			if ran == 0 {
				judge.Add("pendingDifferences", takeBackOptional(pendingDifferences))
			}
			// Each case's allowed differences once: the scenarios of the
			// release users run load cases of their own.
			var fresh []*toolhive.Case
			for _, c := range s.cases {
				if !judged[c.Name] {
					judged[c.Name] = true
					fresh = append(fresh, c)
				}
			}
			judge.Add("allowedDifferences", casesOnly(allowedDifferences(fresh), fresh))
			diffs := s.run(built)
			mirrors := takenBack(diffs)
			for _, d := range diffs {
				mirror := mirrors[d.String()]
				if sc.name != "" {
					if _, _, ok := judge.Match(d); !ok {
						first := d
						first.Object = strings.TrimPrefix(d.Object, sc.name+":")
						if _, _, ok := judge.Match(first); ok || seen[first.String()] {
							d = first
						}
					}
				}
				if _, _, listed := judge.Match(d); !listed && mirror {
					t.Logf("taken back: %s", d)
					continue
				}
				if judge.Verdict(t, d, "allowedDifferences", *updatePending, "before", "after") && !seen[d.String()] {
					seen[d.String()] = true
					pending = append(pending, d)
				}
			}
			ran++
		})
	}
	if ran < len(scenarios) {
		t.Logf("%d of %d scenarios ran: the lists' entries are not checked for staleness", ran, len(scenarios))
		return
	}
	if *updatePending {
		if err := pendingList.Write(pending); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s:\n%s", pendingList.File, pendingList.Summary(pending))
	}
	judge.FailStale(t, "allowedDifferences", *updatePending)
}

// run converges the load with ToolHive's operator, switches to
// hivekeeper and back with `kubectl hivekeeper switch` and `switch
// --back`, and returns every difference of both switches. The plugin's
// prediction and its reports must equal what the suite measures itself.
func (s *suite) run(built func() (controller, plugin string)) []toolhive.Difference {
	t := s.t
	// The load goes in first: ToolHive's operator misses objects created
	// in the moments after it starts (some MCPServers created then are
	// never reconciled), and a cluster that has custom resources before
	// the operator is one a switch creates anyway.
	s.applyLoad()
	thv := s.waitDeployments(s.startToolHive())
	s.thv = thv
	s.settle("ToolHive's operator", thvUser, thv.Exited, "")
	s.playKubelet()
	s.settle("ToolHive's operator", thvUser, thv.Exited, "")
	before, colsBefore := s.snapshot(true), s.columns()
	controller, plugin := built()
	k := s.standIn(controller)
	k.ToolHiveStarted(func() { thv.Stop(t) })

	// To hivekeeper: switch refuses the restarts it predicts, changing
	// nothing, then runs when they are accepted.
	if err := s.audit.Mark(); err != nil {
		t.Fatal(err)
	}
	first := s.plugin(k, plugin)
	pf := first.Preflight
	if pf == nil || pf.Operator == nil {
		t.Fatalf("switch found no ToolHive operator: %s", first.Summary)
	}
	if !slices.Equal(pf.Settings.Flags, s.operatorFlags) {
		t.Errorf("preflight's flags for hivekeeper %v, the chart environment's %v", pf.Settings.Flags, s.operatorFlags)
	}
	report := first
	if s.scenario.noRestarts && len(pf.Prediction.Restarts) > 0 {
		t.Errorf("preflight predicted %d restarts, want none: %s", len(pf.Prediction.Restarts), pf.Summary)
	}
	if len(pf.Prediction.Restarts) > 0 {
		if first.ExitCode != 3 || first.Outcome != nil || len(first.Steps) != 0 || !k.ToolHiveRunning() || k.HivekeeperRunning() {
			t.Fatalf("switch predicted %d restarts and exited %d (want 3, nothing done): %s", len(pf.Prediction.Restarts), first.ExitCode, first.Summary)
		}
		if now := s.snapshot(false); !sameChildren(before, now) {
			t.Errorf("a refused switch changed the cluster")
		}
		if err := s.audit.Mark(); err != nil {
			t.Fatal(err)
		}
		report = s.plugin(k, plugin, "--allow-restarts")
	}
	if report.ExitCode != 0 || report.Outcome == nil || !report.Outcome.Settled {
		t.Fatalf("switch exited %d: %s %s", report.ExitCode, report.Failed, report.Summary)
	}
	atExit := s.snapshot(false)
	s.predicted(s.scenario.label("to-hivekeeper"), report.Preflight.Prediction, before, atExit)
	s.reported(s.scenario.label("to-hivekeeper"), report.Outcome, before, atExit)
	hk := s.hk
	s.settle("hivekeeper", hiveUser, hk.exited, hk.metricsURL)
	after, colsAfter := s.snapshot(true), s.columns()
	toHive := s.compare(s.scenario.label("to-hivekeeper"), before, after, hiveUser)
	s.sameColumnsFilled(s.scenario.label("to-hivekeeper"), colsBefore, colsAfter)
	hk.crossCheck(t, s.writesBy(hiveUser))

	// And back: switch --back puts ToolHive's CRDs back as it recorded
	// them and starts ToolHive's operator again.
	if err := s.audit.Mark(); err != nil {
		t.Fatal(err)
	}
	back := s.plugin(k, plugin, "--back")
	if back.Outcome == nil || !back.Outcome.Settled || back.ExitCode != 0 {
		t.Fatalf("switch --back exited %d: %s %s", back.ExitCode, back.Failed, back.Summary)
	}
	if s.scenario.noRestarts && (len(report.Outcome.Restarted) > 0 || len(back.Outcome.Restarted) > 0) {
		t.Errorf("the switch restarted %d workloads and switch --back %d, want none", len(report.Outcome.Restarted), len(back.Outcome.Restarted))
	}
	if !k.ToolHiveRunning() || k.HivekeeperRunning() {
		t.Fatal("after switch --back, hivekeeper runs or ToolHive's operator does not")
	}
	s.reported(s.scenario.label("back-to-toolhive"), back.Outcome, after, s.snapshot(false))
	s.settle("ToolHive's operator", thvUser, s.thv.Exited, "")
	end := s.snapshot(true)
	toThv := s.compare(s.scenario.label("back-to-toolhive"), after, end, thvUser)
	s.sameColumnsFilled(s.scenario.label("back-to-toolhive"), colsAfter, s.columns())
	s.roundTrip(before, end)
	if s.scenario.noRestarts {
		// Every object hivekeeper had finalized deletes under ToolHive's
		// operator again: none keeps a finalizer only hivekeeper releases.
		s.deleteCustomResources()
	}
	return append(toHive, toThv...)
}

// newSuite starts the API server with ToolHive's CRDs and an audit log of
// every write, and reads the load; it skips without the binaries.
func newSuite(t *testing.T, sc scenario) *suite {
	t.Helper()
	if testing.Short() {
		t.Skip("handover: runs ToolHive's operator and hivekeeper on a real API server; skipped with -short")
	}
	bins, err := framework.FindBinaries()
	if err != nil {
		framework.Missing(t, fmt.Sprintf("handover: no test API server binaries: %v", err), framework.BinariesEnv)
	}
	s := &suite{t: t, scenario: sc, dir: t.TempDir(), binaries: os.Getenv(toolhive.BinariesEnv), kubeconfig: map[string]string{}}
	if s.binaries == "" {
		framework.Missing(t, fmt.Sprintf("handover: %s is not set (make test sets it from hack/toolhive-binaries.sh)", toolhive.BinariesEnv))
	}
	if sc.release != "" {
		if s.module, err = toolhive.ReleaseModuleDir(sc.release); err != nil {
			t.Fatal(err)
		}
		s.binaries = toolhive.ReleaseBinaries(s.binaries, sc.release)
	} else if s.module, err = toolhive.ModuleDir(); err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(root, "test", "conformance", "testdata", "table")
	if s.cases, err = toolhive.CasesOf(table, s.module, toolhive.HandoverKinds); err != nil {
		t.Fatal(err)
	}
	if sc.without != nil {
		n := len(s.cases)
		s.cases = slices.DeleteFunc(s.cases, func(c *toolhive.Case) bool { return slices.Contains(sc.without, c.Name) })
		if n-len(s.cases) != len(sc.without) {
			t.Fatalf("the load has %d of the cases %v", n-len(s.cases), sc.without)
		}
	}
	if sc.only != nil {
		s.cases = slices.DeleteFunc(s.cases, func(c *toolhive.Case) bool { return !slices.Contains(sc.only, c.Name) })
		if len(s.cases) != len(sc.only) {
			t.Fatalf("the load has %d of the cases %v", len(s.cases), sc.only)
		}
	}
	namespaces := []string{thvNamespace}
	for _, c := range s.cases {
		namespaces = append(namespaces, c.Namespace)
	}
	if sc.values != "" {
		s.values = s.valuesFile(filepath.Join(root, "test", "toolhive", "testdata", sc.values), namespaces[1:])
	}
	chartEnv, err := toolhive.ChartEnv(s.module, s.values)
	if err != nil {
		t.Fatal(err)
	}
	var unmapped []operatorenv.Variable
	if _, unmapped, err = operatorenv.Flags(chartEnv); err != nil {
		t.Fatal(err)
	}
	// With the release hivekeeper writes for the operator's and the
	// namespace of the installation's id, as preflight gives them.
	if s.operatorFlags, err = toolhive.ChartFlags(s.module, s.values); err != nil {
		t.Fatal(err)
	}
	for _, u := range unmapped {
		t.Logf("ToolHive's chart sets %s, which has no hivekeeper flag: %s", u.Name, u.Why)
	}
	t.Logf("hivekeeper runs with %s", strings.Join(s.operatorFlags, " "))
	auditArgs, auditLog, err := framework.AuditWrites(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.audit = &framework.AuditLog{Path: auditLog}
	began := time.Now()
	s.srv, err = framework.Start(framework.Options{BinDir: bins, CRDDir: toolhive.CRDDir(s.module), ExtraAPIServerArgs: auditArgs, Cluster: sc.cluster})
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.srv.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	})
	if s.env, err = framework.NewEnv(s.srv); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{thvUser, hiveUser} {
		s.kubeconfig[user] = filepath.Join(s.dir, user+".kubeconfig")
		if err := s.srv.WriteKubeconfigForUser(s.kubeconfig[user], user, "system:masters"); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range append(namespaces, toolhive.HivekeeperNamespace) {
		if _, err := s.env.Kube.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	// What the plugin finds: ToolHive's operator's Deployment as its
	// chart renders it with the scenario's values (the operator itself
	// runs as a process), hivekeeper's chart installed scaled to 0.
	operator, err := toolhive.ChartDeployment(s.module, s.values)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.env.Kube.AppsV1().Deployments(thvNamespace).Create(context.Background(), operator, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := toolhive.InstallHivekeeper(context.Background(), s.env.Kube); err != nil {
		t.Fatal(err)
	}
	s.resources = append([]schema.GroupVersionResource(nil), toolhive.ChildResources...)
	custom, err := commonVersions(toolhive.CRDDir(s.module), filepath.Join(root, "deploy", "charts", "hivekeeper", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	s.resources = append(s.resources, custom...)
	t.Logf("API server %s with ToolHive's CRDs and an audit log ready in %v; %d cases, %d workloads",
		s.srv.URL, time.Since(began).Round(time.Millisecond), len(s.cases), s.workloads())
	return s
}

func (s *suite) workloads() int {
	n := 0
	for _, c := range s.cases {
		n += len(c.Workloads)
	}
	return n
}

// commonVersions returns, for every custom resource kind of the load
// (toolhive.HandoverKinds) both sets of CRDs define, the resource at a
// version both serve (v1beta1 where both do): the snapshots read each
// custom resource at one version before and after a switch.
func commonVersions(dirA, dirB string) ([]schema.GroupVersionResource, error) {
	served := func(dir string) (map[string][]string, error) {
		crds, err := framework.ReadManifests(dir)
		if err != nil {
			return nil, err
		}
		out := map[string][]string{}
		for _, crd := range crds {
			kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			if !slices.Contains(toolhive.HandoverKinds, kind) {
				continue
			}
			plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			for _, v := range versions {
				vm, _ := v.(map[string]any)
				if vm["served"] == true {
					out[plural] = append(out[plural], vm["name"].(string))
				}
			}
		}
		return out, nil
	}
	a, err := served(dirA)
	if err != nil {
		return nil, err
	}
	b, err := served(dirB)
	if err != nil {
		return nil, err
	}
	var out []schema.GroupVersionResource
	for _, plural := range sortedKeys(a) {
		var common []string
		for _, v := range a[plural] {
			if slices.Contains(b[plural], v) {
				common = append(common, v)
			}
		}
		if len(common) == 0 {
			continue
		}
		version := common[0]
		if slices.Contains(common, "v1beta1") {
			version = "v1beta1"
		}
		out = append(out, schema.GroupVersionResource{Group: toolhive.Group, Version: version, Resource: plural})
	}
	return out, nil
}

// startToolHive starts ToolHive's operator as its chart runs it.
func (s *suite) startToolHive() *toolhive.Operator {
	s.t.Helper()
	began := time.Now()
	op := toolhive.StartOperator(s.t, toolhive.OperatorOptions{
		Binaries: s.binaries, Module: s.module, Kubeconfig: s.kubeconfig[thvUser], Namespace: thvNamespace, Dir: s.dir,
		Values: s.values,
	})
	s.t.Logf("ToolHive's operator ready in %v", time.Since(began).Round(time.Millisecond))
	return op
}

// applyLoad creates every case's objects, as a user would with kubectl:
// strictly, but a config object ToolHive's own CRD refuses strictly (an
// example that lags behind it) without the fields it does not know, and
// one it refuses anyway is left out (the workloads referencing it wait).
func (s *suite) applyLoad() {
	s.t.Helper()
	ctx := context.Background()
	left := 0
	for _, c := range s.cases {
		for _, o := range c.Objects {
			_, err := toolhive.Create(ctx, s.env.Dynamic, c.Namespace, o, metav1.FieldValidationStrict)
			if err != nil && !toolhive.IsWorkload(o.GetKind()) && strings.Contains(err.Error(), "strict decoding error") {
				_, err = toolhive.Create(ctx, s.env.Dynamic, c.Namespace, o, metav1.FieldValidationIgnore)
			}
			if err != nil && !toolhive.IsWorkload(o.GetKind()) {
				s.t.Logf("%s: %s %s left out: %v", c.Name, o.GetKind(), o.GetName(), err)
				left++
				continue
			}
			if err != nil {
				s.t.Fatalf("%s: creating %s %s: %v", c.Name, o.GetKind(), o.GetName(), err)
			}
		}
	}
	s.t.Logf("load applied (%d config objects ToolHive's CRDs refuse left out)", left)
}

// toolhiveDeploysNothing are the workloads of the load ToolHive's
// operator writes no Deployment for, with the reason; it deploys every
// other one.
var toolhiveDeploysNothing = map[string]string{
	"table/16-tool-annotations.yaml MCPServer annotated-server":                              "it fails the server: a tool override with only annotations",
	"table/20-remote-private-refused.yaml MCPRemoteProxy remote-private":                     "it refuses a private remote URL",
	"examples/external-auth/mcpserver_with_external_auth.yaml MCPServer fetch-with-auth":     "its MCPExternalAuthConfig is in another file",
	"examples/virtual-mcps/vmcp_inline_incoming_auth.yaml VirtualMCPServer inline-auth-vmcp": "its MCPOIDCConfig is not in the file",
	"examples/virtual-mcps/vmcp_production_full.yaml VirtualMCPServer production-vmcp":       "its MCPOIDCConfig is not in the file",
	"examples/virtual-mcps/vmcp_with_oidcconfig_ref.yaml VirtualMCPServer shared-auth-vmcp":  "its OIDC client secret is not in the file",
	"table/50-auth-server-validation.yaml MCPServer asv-delegate-audience-server":            "it refuses its authorization server's delegate client, whose audience is not the resource URL",
}

// olderDeploysNothing are the workloads a release older than the suites'
// deploys nothing for besides toolhiveDeploysNothing's, by release.
var olderDeploysNothing = map[string]map[string]string{
	"v0.63.0": {
		spiffeFileBundle: "its embedded authorization server's SPIFFE trust domain, which that release refuses as not yet enforced",
	},
	"v0.47.0": {
		"table/21-permission-profile-configmap.yaml MCPServer profile-configmap":     "it fails a permission profile from a ConfigMap",
		"examples/external-auth/complete_example.yaml MCPServer authenticated-fetch": "its MCPExternalAuthConfig, which that release's CRD refuses, is left out",
	},
}

// newerThanV047 are the cases whose workloads set fields ToolHive
// v0.47.0's CRDs do not have, which its API server refuses.
var newerThanV047 = []string{"table/37-auth-server-tls-listener.yaml", "table/38-embedded-auth-server-production.yaml",
	"table/42-auth-server-upstream-ca.yaml", "table/43-auth-server-issuer-ca.yaml", "table/45-vmcp-xaa-inline.yaml",
	"table/46-vmcp-xaa-discovered.yaml", "table/47-vmcp-xaa-subject-provider.yaml", "table/50-auth-server-validation.yaml"}

// spiffeFileBundle is the workload of the load whose authorization server
// has a SPIFFE trust domain with a file bundle, which ToolHive deploys
// from v0.66.0 on.
const spiffeFileBundle = "table/38-embedded-auth-server-production.yaml MCPRemoteProxy prod-remote"

// refused says why ToolHive's operator deploys nothing for a workload of
// the load ("" when it deploys it).
func (s *suite) refused(workload string) string {
	if why := olderDeploysNothing[s.scenario.release][workload]; why != "" {
		return why
	}
	return toolhiveDeploysNothing[workload]
}

// waitDeployments waits until ToolHive's operator wrote the Deployment of
// every workload but toolhiveDeploysNothing's, and checks it wrote none
// of those: a quiet moment alone can be a retry's back-off. It takes a
// while: the operator writes one child per reconcile and requeues through
// controller-runtime's default rate limiter (10 per second for the whole
// queue), and its one MCPServer worker also keeps rewriting statuses.
// Watching a list of namespaces, ToolHive v0.63.0's operator leaves some
// workloads created before it started unreconciled, with no status at
// all; when no Deployment appeared for stalled, it is restarted, as its
// user would, and the operator now running is returned.
func (s *suite) waitDeployments(thv *toolhive.Operator) *toolhive.Operator {
	s.t.Helper()
	ctx := context.Background()
	const stalled = 2 * time.Minute
	began, progress, restarts, last := time.Now(), time.Now(), 0, -1
	framework.Eventually(s.t, 20*time.Minute, func() (bool, error) {
		if !s.scenario.cluster { // a cluster's StatefulSet controller and kwok do
			s.markEmbeddingServersReady()
		}
		var missing []string
		for _, c := range s.cases {
			for _, w := range c.Workloads {
				if s.refused(c.Name+" "+w.ID()) != "" {
					continue
				}
				if _, err := s.env.Kube.AppsV1().Deployments(c.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err != nil {
					missing = append(missing, c.Name+" "+w.ID())
				}
			}
		}
		if len(missing) != last {
			last, progress = len(missing), time.Now()
		}
		if len(missing) > 0 && time.Since(progress) > stalled && restarts < 2 {
			restarts++
			s.t.Logf("ToolHive's operator wrote no Deployment for %v; restarting it (missing: %v)", stalled, missing)
			thv.Stop(s.t)
			thv, progress = s.startToolHive(), time.Now()
		}
		return len(missing) == 0, fmt.Errorf("no Deployment yet for %d workloads: %v", len(missing), missing[:min(len(missing), 5)])
	}, "ToolHive's operator to deploy the load")
	s.t.Logf("ToolHive's operator deployed the load in %v (%d restarts)", time.Since(began).Round(time.Millisecond), restarts)
	for _, c := range s.cases {
		for _, w := range c.Workloads {
			if s.refused(c.Name+" "+w.ID()) == "" {
				continue
			}
			if _, err := s.env.Kube.AppsV1().Deployments(c.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
				s.t.Errorf("toolhiveDeploysNothing: %s %s has a Deployment", c.Name, w.ID())
			}
		}
	}
	return thv
}

// settle waits until nothing of the load changed for quiet (every
// child's resourceVersion and every custom resource but its status stay);
// with metricsURL, also until the operator sent no write for quiet and
// the work queues its /metrics shows are empty. ToolHive's operator is never idle: it keeps requeueing
// its MCPServers and sending status updates, most of which change nothing
// (the API server keeps the object as it is, but they are requests), so it
// settles on what it writes only.
func (s *suite) settle(who, user string, exited func() error, metricsURL string) {
	s.t.Helper()
	began := time.Now()
	seen, last, changed := 0, map[string]string{}, time.Now()
	framework.Eventually(s.t, 10*time.Minute, func() (bool, error) {
		if err := exited(); err != nil {
			return false, err
		}
		if fp := s.fingerprint(); !maps.Equal(fp, last) {
			var moved []string
			for k, rv := range fp {
				if last[k] != rv {
					moved = append(moved, k)
				}
			}
			sort.Strings(moved)
			last, changed = fp, time.Now()
			return false, fmt.Errorf("%d objects still change: %s (status of the first: %s)", len(moved),
				strings.Join(moved[:min(len(moved), 10)], ", "), s.statusOf(moved[0]))
		}
		writes := s.writesBy(user)
		if n := len(writes); metricsURL != "" && n != seen {
			latest := map[string]int{}
			for _, e := range writes[seen:] {
				latest[e.Verb+" "+e.Resource()+" "+e.ObjectRef.Namespace+"/"+e.ObjectRef.Name]++
			}
			seen, changed = n, time.Now()
			return false, fmt.Errorf("still writing: %v", latest)
		}
		if time.Since(changed) < quiet {
			return false, nil
		}
		if metricsURL == "" {
			return true, nil
		}
		m, err := scrape(metricsURL)
		if err != nil {
			return false, err
		}
		depth := m.sum("workqueue_depth", nil)
		return depth == 0, fmt.Errorf("work queues hold %v items", depth)
	}, "%s to settle", who)
	s.t.Logf("%s settled in %v after %d writes", who, time.Since(began).Round(time.Millisecond), len(s.writesBy(user)))
}

// statusOf returns the status of an object of the load, named as a
// fingerprint names it, for a message.
func (s *suite) statusOf(name string) string {
	for caseName, objs := range s.snapshot(false) {
		for k, o := range objs {
			if caseName+" "+k == name {
				b, _ := json.Marshal(o.Object["status"])
				return string(b)
			}
		}
	}
	return "gone"
}

// fingerprint is the resourceVersion of every child of the load and what
// an operator sets of every custom resource but its status: ToolHive's
// operator flips a condition of some MCPServers back and forth for ever
// (ExternalAuthConfigValidated of a token exchange reference), so their
// resourceVersions never settle.
func (s *suite) fingerprint() map[string]string {
	s.t.Helper()
	fp := map[string]string{}
	for name, objs := range s.snapshot(false) {
		for k, o := range objs {
			if isCustom(o) {
				fp[name+" "+k] = toolhive.Show(toolhive.Clean(o))
			} else {
				fp[name+" "+k] = o.GetResourceVersion()
			}
		}
	}
	return fp
}

// writesBy returns the writes user made since the audit log's mark.
func (s *suite) writesBy(user string) []framework.AuditEvent {
	s.t.Helper()
	events, err := s.audit.Read()
	if err != nil {
		s.t.Fatal(err)
	}
	var out []framework.AuditEvent
	for _, e := range events {
		if e.User.Username == user {
			out = append(out, e)
		}
	}
	return out
}

// applyCRDs applies every CRD in dir as `kubectl apply --server-side
// --force-conflicts -f dir` does, the way docs/install.md applies
// hivekeeper's CRDs over existing ones, and waits until each is
// Established. It returns the error of each CRD the API server refused,
// by name: the switch goes on with the CRD as it was.
func (s *suite) applyCRDs(dir string) map[string]string {
	s.t.Helper()
	ctx := context.Background()
	objs, err := framework.ReadManifests(dir)
	if err != nil {
		s.t.Fatal(err)
	}
	refused := map[string]string{}
	for _, crd := range objs {
		_, err := s.env.Dynamic.Resource(framework.CRDResource).Apply(ctx, crd.GetName(), crd,
			metav1.ApplyOptions{FieldManager: "kubectl", Force: true})
		if err != nil {
			refused[crd.GetName()] = err.Error()
			s.t.Logf("applying CRD %s from %s: %v", crd.GetName(), dir, err)
			continue
		}
		framework.Eventually(s.t, time.Minute, func() (bool, error) {
			got, err := s.env.Dynamic.Resource(framework.CRDResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
			return err == nil && framework.CRDEstablished(got), err
		}, "CRD %s Established", crd.GetName())
	}
	s.t.Logf("applied %d CRDs from %s, %d refused", len(objs)-len(refused), dir, len(refused))
	return refused
}

// buildHivekeeper starts building hivekeeper's binary, as the chart's
// image has it, and the kubectl plugin, while ToolHive's operator works;
// the function returned waits for the build and returns their paths.
func buildHivekeeper(t *testing.T) func() (controller, plugin string) {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/controller", "./cmd/kubectl-hivekeeper")
	cmd.Dir = root
	var log framework.SyncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	// Every switch runs the same binaries: the build is waited for once.
	wait := sync.OnceValue(func() error {
		waited = true
		return <-done
	})
	return func() (string, string) {
		t.Helper()
		if err := wait(); err != nil {
			t.Fatalf("go build ./cmd/controller ./cmd/kubectl-hivekeeper: %v\n%s", err, log.String())
		}
		return filepath.Join(dir, "controller"), filepath.Join(dir, "kubectl-hivekeeper")
	}
}

// takenBack returns the differences of a switch back to ToolHive's
// operator that are it taking back its own output: the exact mirror of a
// difference of the switch to hivekeeper (same object and path, the
// values swapped), and its writes of an object with such a mirror. That
// difference was judged on its way to hivekeeper; ToolHive's operator
// reaches some of these objects within the settle window and some not,
// run to run, so they are neither required nor a failure.
func takenBack(diffs []toolhive.Difference) map[string]bool {
	const to, back = "to-hivekeeper ", "back-to-toolhive "
	there := map[string]bool{}
	for _, d := range diffs {
		if strings.Contains(d.Object, to) {
			there[d.Object+"\x00"+d.Path+"\x00"+d.A+"\x00"+d.B] = true
		}
	}
	out := map[string]bool{}
	mirrored := map[string]bool{}
	for _, d := range diffs {
		if strings.Contains(d.Object, back) && there[strings.Replace(d.Object, back, to, 1)+"\x00"+d.Path+"\x00"+d.B+"\x00"+d.A] {
			out[d.String()] = true
			mirrored[d.Object] = true
		}
	}
	for _, d := range diffs {
		if d.Path == pathWrites && mirrored[d.Object] {
			out[d.String()] = true
		}
	}
	return out
}

// takeBackOptional marks the entries seen only when ToolHive's operator
// takes objects back as optional, as allowedAtSwitch does (listed): it
// reaches some of them after the suite's settle window in some runs.
// hivekeeper's direction stays exact.
func takeBackOptional(list []toolhive.Exception) []toolhive.Exception {
	out := make([]toolhive.Exception, len(list))
	for i, e := range list {
		e.Optional = len(e.Objects) > 0 && !slices.ContainsFunc(e.Objects, func(o string) bool { return !strings.Contains(o, "back-to-toolhive ") })
		out[i] = e
	}
	return out
}

// valuesFile writes the scenario's values file for ToolHive's chart with
// its allowedNamespaces set to namespaces (the load's), as a user lists
// the namespaces their MCP servers run in, and returns its path.
func (s *suite) valuesFile(file string, namespaces []string) string {
	s.t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		s.t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		s.t.Fatalf("%s: %v", file, err)
	}
	if err := unstructured.SetNestedStringSlice(values, namespaces, "operator", "rbac", "allowedNamespaces"); err != nil {
		s.t.Fatalf("%s: %v", file, err)
	}
	out, err := yaml.Marshal(values)
	if err != nil {
		s.t.Fatal(err)
	}
	path := filepath.Join(s.dir, "toolhive-values.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		s.t.Fatal(err)
	}
	return path
}

// takenBack accepts only exact mirrors of the way there, and the writes of
// an object that has one.
func TestTakenBack(t *testing.T) {
	d := func(object, path, a, b string) toolhive.Difference {
		return toolhive.Difference{Object: object, Path: path, A: a, B: b}
	}
	there := d("v:to-hivekeeper c ConfigMap/x", `data["a"]`, `"network"`, toolhive.None)
	mirror := d("v:back-to-toolhive c ConfigMap/x", `data["a"]`, toolhive.None, `"network"`)
	writes := d("v:back-to-toolhive c ConfigMap/x", pathWrites, toolhive.None, "update")
	other := d("v:back-to-toolhive c ConfigMap/x", `data["a"]`, toolhive.None, `"none"`)
	otherWrites := d("v:back-to-toolhive c ConfigMap/y", pathWrites, toolhive.None, "update")
	got := takenBack([]toolhive.Difference{there, mirror, writes, other, otherWrites})
	for _, c := range []struct {
		d    toolhive.Difference
		want bool
	}{{there, false}, {mirror, true}, {writes, true}, {other, false}, {otherWrites, false}} {
		if got[c.d.String()] != c.want {
			t.Errorf("%s: taken back %v, want %v", c.d, got[c.d.String()], c.want)
		}
	}
}
