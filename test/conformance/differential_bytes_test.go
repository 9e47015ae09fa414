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
	"github.com/hivekeeper/hivekeeper/test/deliberate"
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
			"all the controller holds); ToolHive's operator binds a Role it writes per workload. A stdio MCPServer's is the stdio " +
			"ClusterRole, the only one with pods/attach: a change between ToolHive releases, v0.63.0's operator grants pods/attach " +
			"to stdio servers' runners only (cmd/thv-operator/controllers/mcpserver_controller.go:73-130 at v0.63.0), v0.47.0's to every runner",
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
		Field: "vMCP roleRef",
		Reason: "hivekeeper binds a vMCP's ServiceAccount to one of two ClusterRoles the chart creates once, the narrowest set vmcp " +
			"calls in its mode (bind on them is all the controller holds: it never reads a Secret); ToolHive's operator writes a Role " +
			"per vMCP, which needs the Secret reads it grants",
		entries: func(t *testing.T, cases []*diffCase) []toolhive.Exception {
			var out []toolhive.Exception
			for _, v := range vmcps(cases) {
				object := []string{v.caseName + " RoleBinding/" + v.binding}
				out = append(out,
					toolhive.Exception{Cause: "vmcp ClusterRole", Path: "roleRef.kind", A: toolhive.Show("Role"), B: toolhive.Show("ClusterRole"), Objects: object},
					toolhive.Exception{Cause: "vmcp ClusterRole", Path: "roleRef.name", A: toolhive.Show(v.binding), B: toolhive.Show(v.clusterRole), Objects: object})
			}
			return out
		},
	},
	{
		Field:  "vMCP Role",
		Reason: "the same choice: hivekeeper writes no Role per vMCP; ToolHive's operator's is the one it recorded (testdata/toolhive-<release>)",
		entries: func(t *testing.T, cases []*diffCase) []toolhive.Exception {
			var out []toolhive.Exception
			for _, v := range vmcps(cases) {
				role := recorded(t, v.caseName, "Role", v.binding)
				out = append(out, toolhive.Exception{Cause: "vmcp ClusterRole", Path: toolhive.WholeObject, A: toolhive.Show(role), B: toolhive.None,
					Objects: []string{v.caseName + " Role/" + v.binding}})
			}
			return out
		},
	},

	{
		Field: "vMCP config checksum",
		Reason: "the content and pod template checksums of the vMCP configs that differ by `outgoingAuth.default.type`, " +
			"`backends[].type` or the xaa client secret variables alone",
		entries: func(t *testing.T, cases []*diffCase) []toolhive.Exception {
			var out []toolhive.Exception
			for _, e := range []struct{ caseName, vmcp, thv, hive string }{
				{"table/24-vmcp-config.yaml", "cfg-vmcp", "c87814cc465630e9ae74e275da09d7a2d12afbcb94bd0c2dff8ccd09ff2373cb",
					"c8fdc533d6dacba0df813118feb8b86c138b0c92e3d07cfb566171cc7191ccae"},
				{"table/35-vmcp-entries.yaml", "ent-vmcp", "35c36511607f2740d0bfd31be9b77760f826671defcd5390e9c1a658971981a0",
					"219d5350f013633860fd493b61dc8f0fe285aad12d041bbde44495447950274c"},
				{"table/46-vmcp-xaa-discovered.yaml", "xdi-vmcp", "4662a1bca8ebf9f9b289dd209dd81a486b6bf46321928efe2c1b65848e16cb3e",
					"5e5ddeee16668ccc6bd7ffc7feaea3e7a9f0ea4caf46424e4bd0e6e4165c7960"},
			} {
				out = append(out,
					exactly(`metadata.annotations["toolhive.stacklok.dev/content-checksum"]`, toolhive.Show(e.thv), toolhive.Show(e.hive),
						e.caseName+" ConfigMap/"+naming.VMCPConfigMapName(e.vmcp))(t, cases)[0],
					exactly(`spec.template.metadata.annotations["toolhive.stacklok.dev/runconfig-checksum"]`, toolhive.Show(e.thv), toolhive.Show(e.hive),
						e.caseName+" Deployment/"+e.vmcp)(t, cases)[0])
			}
			return out
		},
	},
	{
		Field: "spec.volumes host paths",
		Reason: "ToolHive's operator also mounts each spec.volumes host path into the proxy runner's pod, which does not use it " +
			"(the runner passes neither volumes nor the permission profile to the MCP server's pod) and which a hostPath volume " +
			"keeps from the baseline Pod Security Standard; hivekeeper writes them to the RunConfig only",
		entries: func(t *testing.T, cases []*diffCase) []toolhive.Exception {
			return slices.Concat(
				exactly("spec.template.spec.containers[name=toolhive].volumeMounts[name=cache]", `{"mountPath":"/cache","name":"cache"}`, "(none)",
					"table/15-runtime-features.yaml Deployment/runtime-all")(t, cases),
				exactly("spec.template.spec.containers[name=toolhive].volumeMounts[name=config]", `{"mountPath":"/config","name":"config","readOnly":true}`, "(none)",
					"table/15-runtime-features.yaml Deployment/volumes-only")(t, cases),
				exactly("spec.template.spec.containers[name=toolhive].volumeMounts[name=data]", `{"mountPath":"/data","name":"data","readOnly":true}`, "(none)",
					"table/15-runtime-features.yaml Deployment/runtime-all")(t, cases),
				exactly("spec.template.spec.containers[name=toolhive].volumeMounts[name=work-again]", `{"mountPath":"/work/","name":"work-again"}`, "(none)",
					"table/15-runtime-features.yaml Deployment/volumes-only")(t, cases),
				exactly("spec.template.spec.containers[name=toolhive].volumeMounts[name=work]", `{"mountPath":"/work","name":"work"}`, "(none)",
					"table/15-runtime-features.yaml Deployment/volumes-only")(t, cases),
				exactly("spec.template.spec.volumes[name=cache]", `{"hostPath":{"path":"/var/cache/mcp","type":""},"name":"cache"}`, "(none)",
					"table/15-runtime-features.yaml Deployment/runtime-all")(t, cases),
				exactly("spec.template.spec.volumes[name=config]", `{"hostPath":{"path":"/etc/mcp","type":""},"name":"config"}`, "(none)",
					"table/15-runtime-features.yaml Deployment/volumes-only")(t, cases),
				exactly("spec.template.spec.volumes[name=data]", `{"hostPath":{"path":"/srv/data","type":""},"name":"data"}`, "(none)",
					"table/15-runtime-features.yaml Deployment/runtime-all")(t, cases),
				exactly("spec.template.spec.volumes[name=work-again]", `{"hostPath":{"path":"/srv/other","type":""},"name":"work-again"}`, "(none)",
					"table/15-runtime-features.yaml Deployment/volumes-only")(t, cases),
				exactly("spec.template.spec.volumes[name=work]", `{"hostPath":{"path":"/srv/work","type":""},"name":"work"}`, "(none)",
					"table/15-runtime-features.yaml Deployment/volumes-only")(t, cases),
				exactly("spec.template.spec.containers[name=toolhive].volumeMounts[name=data]", `{"mountPath":"/data","name":"data"}`, "(none)",
					"table/21-permission-profile-configmap.yaml Deployment/profile-configmap")(t, cases),
				exactly("spec.template.spec.volumes[name=data]", `{"hostPath":{"path":"/srv/data","type":""},"name":"data"}`, "(none)",
					"table/21-permission-profile-configmap.yaml Deployment/profile-configmap")(t, cases),
			)
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
		Reason: "an MCPServerEntry's backend with a CA bundle: ToolHive v0.63.0's operator writes its caBundlePath without type " +
			"entry, and vmcp (validate and serve) refuses a caBundlePath on a backend of any other type, so ToolHive's vMCP does " +
			"not start; hivekeeper writes type entry beside a caBundlePath, and no type otherwise, as ToolHive's operator",
		entries: exactly(`data["config.yaml"].backends[name=ent-far].type`, toolhive.None, `"entry"`,
			"table/35-vmcp-entries.yaml ConfigMap/ent-vmcp-vmcp-config"),
	},
	{
		Field: "xaa client secret variables",
		Reason: "in discovered mode ToolHive's operator writes the xaa strategies of spec.outgoingAuth as its converter builds " +
			"them, without the variables of their client secrets, which it mounts all the same (its controller names them in " +
			"inline mode), so vmcp has no secret for the clients they name; hivekeeper names them in both modes",
		entries: func(t *testing.T, cases []*diffCase) []toolhive.Exception {
			const object = "table/46-vmcp-xaa-discovered.yaml ConfigMap/xdi-vmcp-vmcp-config"
			return slices.Concat(
				exactly(`data["config.yaml"].outgoingAuth.default.xaa.idpClientSecretEnv`, toolhive.None,
					`"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_DEFAULT"`, object)(t, cases),
				exactly(`data["config.yaml"].outgoingAuth.default.xaa.targetClientSecretEnv`, toolhive.None,
					`"TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XDI_DEFAULT"`, object)(t, cases),
				exactly(`data["config.yaml"].outgoingAuth.backends.xdi-plain.xaa.idpClientSecretEnv`, toolhive.None,
					`"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_BACKEND"`, object)(t, cases))
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
			case w.Kind == thv1.KindMCPServer && stdio(c, w.Name):
				out = append(out, runner{c.Name, naming.ProxyRunnerName(w.Name), rbac.DefaultStdioProxyRunnerClusterRole})
			case w.Kind == thv1.KindMCPServer:
				out = append(out, runner{c.Name, naming.ProxyRunnerName(w.Name), rbac.DefaultProxyRunnerClusterRole})
			case w.Kind == thv1.KindMCPRemoteProxy:
				out = append(out, runner{c.Name, naming.RemoteProxyRunnerName(w.Name), rbac.DefaultRemoteProxyRunnerClusterRole})
			}
		}
	}
	return out
}

// stdio reports whether the case's MCPServer name runs a stdio server,
// the schema's default transport.
func stdio(c *diffCase, name string) bool {
	for _, o := range c.Objects {
		if o.GetKind() == thv1.KindMCPServer && o.GetName() == name {
			t, _, _ := unstructured.NestedString(o.Object, "spec", "transport")
			return t == "" || t == thv1.TransportStdio
		}
	}
	return false
}

// recordRoot is where -record writes ToolHive's operator's outputs: those
// of the release this suite runs (see TestMain).
func recordRoot(t *testing.T) string {
	version, _, err := framework.ToolHiveSource(framework.ToolHiveRuntimeRelease)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join("testdata", "toolhive-"+version)
}

// vmcpRole is a vMCP's RoleBinding and the ClusterRole hivekeeper binds.
type vmcpRole struct{ caseName, binding, clusterRole string }

// vmcps are the compared VirtualMCPServers with an account of their own.
func vmcps(cases []*diffCase) []vmcpRole {
	var out []vmcpRole
	for _, c := range cases {
		for _, w := range c.workloads {
			if w.skip != nil || w.Kind != thv1.KindVirtualMCPServer {
				continue
			}
			for _, o := range c.Objects {
				if o.GetKind() != thv1.KindVirtualMCPServer || o.GetName() != w.Name {
					continue
				}
				if sa, _, _ := unstructured.NestedString(o.Object, "spec", "serviceAccount"); sa != "" {
					continue
				}
				role := rbac.DefaultVMCPDiscoveredClusterRole
				if src, _, _ := unstructured.NestedString(o.Object, "spec", "outgoingAuth", "source"); src == thv1.OutgoingAuthSourceInline {
					role = rbac.DefaultVMCPInlineClusterRole
				}
				out = append(out, vmcpRole{c.Name, naming.VMCPServiceAccountName(w.Name), role})
			}
		}
	}
	return out
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

// TestAllowedDifferencesDocumented keeps allowedBytes and the list of
// deliberate differences docs/compatibility.md's table is generated from
// (test/deliberate) the same: every field allowed here is listed there
// for the differential, and no other.
func TestAllowedDifferencesDocumented(t *testing.T) {
	var fields []string
	for _, a := range allowedBytes {
		fields = append(fields, a.Field)
	}
	slices.Sort(fields)
	if want := deliberate.Fields(deliberate.SuiteDifferential); !slices.Equal(fields, want) {
		t.Errorf("allowedBytes accepts %q; test/deliberate lists %q for the differential: list each deliberate difference in both", fields, want)
	}
}
