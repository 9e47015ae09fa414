package conformance_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

var (
	record = flag.Bool("record", false, "TestDifferentialRunConfig: write what ToolHive's operator wrote for every case "+
		"into testdata/toolhive-<release> (ToolHive's outputs, for tests that render without an API server)")
	updatePending = flag.Bool("update-pending", false, "TestDifferentialRunConfig: rewrite differential_pending_test.go "+
		"from the differences seen, instead of failing on those it does not list")
)

// allowedDifference is a difference hivekeeper makes on purpose, named
// in docs/compatibility.md's "The differential test" (Field, in
// backticks) with its reason. Like pendingBytes its entries name each
// object and the values on both sides.
type allowedDifference struct {
	Field, Reason string
	entries       func(t *testing.T, cases []*diffCase) []toolhive.Exception
}

// allowedBytes is the whole list.
var allowedBytes = []allowedDifference{
	{
		Field: "roleRef",
		Reason: "hivekeeper binds each runner's ServiceAccount to the runner ClusterRole the chart creates once (bind on it is " +
			"all the controller holds); ToolHive's operator binds a Role it writes per workload",
		entries: func(t *testing.T, cases []*diffCase) []toolhive.Exception {
			var out []toolhive.Exception
			for _, r := range runners(cases) {
				object := []string{r.caseName + " RoleBinding/" + r.binding}
				out = append(out,
					toolhive.Exception{Cause: "runner ClusterRole", Path: "roleRef.kind", A: toolhive.Show("Role"), B: toolhive.Show("ClusterRole"), Objects: object},
					toolhive.Exception{Cause: "runner ClusterRole", Path: "roleRef.name", A: toolhive.Show(r.binding), B: toolhive.Show(r.clusterRole), Objects: object})
			}
			return out
		},
	},
	{
		Field:  "Role",
		Reason: "the same choice: hivekeeper writes no Role per runner; ToolHive's operator's is the one it recorded (testdata/toolhive-<release>)",
		entries: func(t *testing.T, cases []*diffCase) []toolhive.Exception {
			var out []toolhive.Exception
			for _, r := range runners(cases) {
				role := recorded(t, r.caseName, "Role", r.binding)
				out = append(out, toolhive.Exception{Cause: "runner ClusterRole", Path: toolhive.WholeObject, A: toolhive.Show(role), B: toolhive.None,
					Objects: []string{r.caseName + " Role/" + r.binding}})
			}
			return out
		},
	},
	{
		Field: "outgoingAuth.default.type",
		Reason: "for a default of type discovered ToolHive's operator writes strategy type discovered, which vmcp validate refuses; " +
			"hivekeeper writes unauthenticated, what ToolHive's converter maps discovered to",
		entries: exactly(`data["config.yaml"].outgoingAuth.default.type`, `"discovered"`, `"unauthenticated"`,
			"table/24-vmcp-config.yaml ConfigMap/cfg-vmcp-vmcp-config"),
	},
	{
		Field: "backends[].type",
		Reason: "an MCPServerEntry's backend: hivekeeper writes type entry, as vmcp's own discovery types an entry; ToolHive's " +
			"operator in inline mode writes none, beside which vmcp validate refuses the entry's caBundlePath",
		entries: func(t *testing.T, cases []*diffCase) []toolhive.Exception {
			return append(
				exactly(`data["config.yaml"].backends[name=context7].type`, toolhive.None, `"entry"`,
					"examples/mcp-server-entries/mcpserverentry_mixed_group.yaml ConfigMap/eng-tools-vmcp-config")(t, cases),
				exactly(`data["config.yaml"].backends[name=ent-far].type`, toolhive.None, `"entry"`,
					"table/35-vmcp-entries.yaml ConfigMap/ent-vmcp-vmcp-config")(t, cases)...)
		},
	},
}

// exactly is an allowed difference of one path and values on the objects
// named.
func exactly(path, a, b string, objects ...string) func(*testing.T, []*diffCase) []toolhive.Exception {
	return func(*testing.T, []*diffCase) []toolhive.Exception {
		return []toolhive.Exception{{Cause: "allowed", Path: path, A: a, B: b, Objects: objects}}
	}
}

// allowedExceptions expands allowedBytes for the cases.
func allowedExceptions(t *testing.T, cases []*diffCase) []toolhive.Exception {
	var out []toolhive.Exception
	for _, a := range allowedBytes {
		for _, e := range a.entries(t, cases) {
			e.Cause = a.Field + ": " + a.Reason
			out = append(out, e)
		}
	}
	return out
}

// runner is a compared workload's runner RoleBinding.
type runner struct{ caseName, binding, clusterRole string }

// runners are the runner RoleBindings of every compared MCPServer and
// MCPRemoteProxy.
func runners(cases []*diffCase) []runner {
	var out []runner
	for _, c := range cases {
		for _, w := range c.workloads {
			switch {
			case w.skip != nil:
			case w.Kind == thv1.KindMCPServer:
				out = append(out, runner{c.Name, naming.ProxyRunnerName(w.Name), rbac.DefaultProxyRunnerClusterRole})
			case w.Kind == thv1.KindMCPRemoteProxy:
				out = append(out, runner{c.Name, naming.RemoteProxyRunnerName(w.Name), rbac.DefaultRemoteProxyRunnerClusterRole})
			}
		}
	}
	return out
}

// recordRoot is where -record writes ToolHive's operator's outputs.
func recordRoot(t *testing.T) string {
	version, _, err := framework.ToolHiveSource(framework.ToolHiveRuntimeRelease)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join("testdata", "toolhive-"+version)
}

// recorded reads an object ToolHive's operator wrote for a case, as -record
// wrote it.
func recorded(t *testing.T, caseName, kind, name string) map[string]any {
	file := filepath.Join(recordRoot(t), strings.TrimSuffix(caseName, filepath.Ext(caseName)), kind+"."+name+".yaml")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (-record writes the recordings)", err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return obj
}

// settleAndRead waits until neither operator has changed a child for a
// while in any case's namespace and the skipped workloads show their
// statuses, then reads every case's objects from both servers and each
// workload's configs from its ConfigMap.
func settleAndRead(t *testing.T, hive, thv *framework.Env, cases []*diffCase) {
	t.Helper()
	ctx := context.Background()
	inCases := map[string]*diffCase{}
	for _, c := range cases {
		inCases[c.Namespace] = c
	}
	// fingerprint is every child's resourceVersion on both servers.
	read := func() (string, map[string]toolhive.Objects, map[string]toolhive.Objects, error) {
		var fp []string
		var sides [2]map[string]toolhive.Objects
		for i, e := range []*framework.Env{thv, hive} {
			all, err := toolhive.List(ctx, e.Dynamic, "", toolhive.ChildResources)
			if err != nil {
				return "", nil, nil, err
			}
			sides[i] = all
			for ns, objs := range all {
				if inCases[ns] == nil {
					continue
				}
				for k, o := range objs {
					fp = append(fp, fmt.Sprintf("%d %s %s %s", i, ns, k, o.GetResourceVersion()))
				}
			}
		}
		sort.Strings(fp)
		return strings.Join(fp, "\n"), sides[0], sides[1], nil
	}
	const quiet = 3 * time.Second
	began := time.Now()
	var last string
	var thvAll, hiveAll map[string]toolhive.Objects
	changed := time.Now()
	framework.Eventually(t, 2*time.Minute, func() (bool, error) {
		fp, a, b, err := read()
		if err != nil {
			return false, err
		}
		if fp != last {
			last, changed = fp, time.Now()
		}
		thvAll, hiveAll = a, b
		statuses := true
		for _, c := range cases {
			for _, w := range c.workloads {
				if w.skip == nil {
					continue
				}
				w.thvOK = statusShows(thv, c.Namespace, w, w.skip.ToolHive)
				w.hiveOK = statusShows(hive, c.Namespace, w, w.skip.Hivekeeper)
				statuses = statuses && w.thvOK && w.hiveOK
			}
		}
		// Statuses that never show what notCompared says are reported by
		// checkSkipped; they need not hold the others up for long.
		return time.Since(changed) >= quiet && (statuses || time.Since(began) > time.Minute), nil
	}, "both operators to leave every child alone for %v", quiet)
	t.Logf("both operators settled within %v", time.Since(began).Round(time.Millisecond))

	for _, c := range cases {
		c.thvObjs, c.hiveObjs = thvAll[c.Namespace], hiveAll[c.Namespace]
		for _, w := range c.workloads {
			if w.skip != nil {
				w.thvStatus, w.hiveStatus = statusOf(thv, c.Namespace, w), statusOf(hive, c.Namespace, w)
				continue
			}
			name, key := w.configMap()
			w.thv, w.thvAS = configData(c.thvObjs, name, key)
			w.hive, w.hiveAS = configData(c.hiveObjs, name, key)
		}
	}
}

// configData returns a config and, for a vMCP, its
// authserver-config.yaml from the ConfigMap name among objs.
func configData(objs toolhive.Objects, name, key string) (config, authServer string) {
	cm := objs["ConfigMap/"+name]
	if cm == nil {
		return "", ""
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	return data[key], data[naming.VMCPAuthServerConfigKey]
}

// children returns the keys of the objects of a case's namespace that an
// operator wrote, on either server: every object but the manifest's own
// and those a skipped workload owns.
func children(c *diffCase) []string {
	own := map[string]bool{}
	for _, o := range c.Objects {
		own[toolhive.Key(o)] = true
	}
	skippedOwners := map[string]bool{}
	for _, w := range c.workloads {
		if w.skip != nil {
			skippedOwners[w.Key()] = true
		}
	}
	var keys []string
	for _, objs := range []toolhive.Objects{c.thvObjs, c.hiveObjs} {
		for k, o := range objs {
			if !own[k] && !skippedOwners[toolhive.Owner(o)] && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// compareChildren compares, as bytes, every child of a case as each
// operator wrote it and judges every difference. It returns the
// differences allowedBytes does not name: pendingBytes' share.
func compareChildren(t *testing.T, c *diffCase, judge *toolhive.Judge) []toolhive.Difference {
	var pending []toolhive.Difference
	compared, same := 0, 0
	for _, k := range children(c) {
		var a, b any // nil, not a nil map, for an object a side lacks
		if o := c.thvObjs[k]; o != nil {
			a = toolhive.Clean(o)
		}
		if o := c.hiveObjs[k]; o != nil {
			b = toolhive.Clean(o)
		}
		compared++
		diffs := toolhive.Diff(c.Name+" "+k, a, b)
		if len(diffs) == 0 {
			same++
		}
		for _, d := range diffs {
			if judge.Verdict(t, d, "allowedBytes", *updatePending, "ToolHive's operator writes", "hivekeeper") {
				pending = append(pending, d)
			}
		}
	}
	t.Logf("%d objects compared as bytes, %d the same", compared, same)
	return pending
}

// pendingList describes differential_pending_test.go.
var pendingList = toolhive.PendingList{
	File:    "differential_pending_test.go",
	Package: "conformance_test",
	Var:     "pendingBytes",
	Doc: "pendingBytes is the work list of TestDifferentialRunConfig: every difference, as bytes, between what ToolHive's\n" +
		"operator and hivekeeper write for the same manifest that is not one hivekeeper makes on purpose (allowedBytes).\n" +
		"Each entry names its path, both values (ToolHive's first) and every object showing it; an entry no longer seen\n" +
		"fails the test, so matching a byte means deleting (or regenerating) its entries. Causes are toolhive.OutputCauses (test/toolhive/causes.go).",
	Command: "go test ./test/conformance -run TestDifferentialRunConfig -update-pending",
	Causes:  toolhive.OutputCauses,
}

// writePending rewrites differential_pending_test.go.
func writePending(t *testing.T, diffs []toolhive.Difference) {
	if err := pendingList.Write(diffs); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s:\n%s", pendingList.File, pendingList.Summary(diffs))
}

// recordToolHive writes what ToolHive's operator wrote for every case into
// testdata/toolhive-<release>/<case>/: each workload's configs as the
// exact bytes of their ConfigMap keys (<Kind>.<name>/runconfig.json,
// config.yaml, authserver-config.yaml) and every child as the API server
// returned it, cleaned of what the server sets (<Kind>.<name>.yaml).
func recordToolHive(t *testing.T, cases []*diffCase) {
	root := recordRoot(t)
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	files := 0
	write := func(path string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files++
	}
	for _, c := range cases {
		dir := filepath.Join(root, strings.TrimSuffix(c.Name, filepath.Ext(c.Name)))
		for _, k := range children(c) {
			o := c.thvObjs[k]
			if o == nil {
				continue
			}
			out, err := yaml.Marshal(toolhive.Clean(o))
			if err != nil {
				t.Fatal(err)
			}
			write(filepath.Join(dir, strings.Replace(k, "/", ".", 1)+".yaml"), out)
		}
		for _, w := range c.workloads {
			if w.skip != nil {
				continue
			}
			name, key := w.configMap()
			cm := c.thvObjs["ConfigMap/"+name]
			if cm == nil {
				continue
			}
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			for _, k := range []string{key, naming.VMCPAuthServerConfigKey} {
				if v, ok := data[k]; ok {
					write(filepath.Join(dir, w.Kind+"."+w.Name, k), []byte(v))
				}
			}
		}
	}
	t.Logf("recorded %d files of ToolHive's operator into %s", files, root)
}

// TestAllowedDifferencesDocumented keeps docs/compatibility.md's "The
// differential test" the mirror of allowedBytes: every allowed field is
// named there, in backticks.
func TestAllowedDifferencesDocumented(t *testing.T) {
	section, err := toolhive.DifferencesSection()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allowedBytes {
		if !strings.Contains(section, "`"+a.Field+"`") {
			t.Errorf("allowed difference %s is not in docs/compatibility.md's \"The differential test\"", a.Field)
		}
	}
}
