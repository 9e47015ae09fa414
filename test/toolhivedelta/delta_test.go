// Package toolhivedelta measures what changed between two ToolHive
// releases by running both releases' operators, each with the environment
// its own chart renders, over the same manifests, and comparing what they
// wrote: the children (a change under a pod template restarts pods), the
// status of the custom resources, and the CRD schemas apart from their
// descriptions. `make toolhive-delta FROM=... TO=...` writes the report,
// docs/toolhive-releases.md; taking on a new ToolHive release starts from
// it.
package toolhivedelta_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/provenance"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

var out = flag.String("out", "", "write the report to this file (make toolhive-delta)")

// variant is one operator-wide setting the releases are compared under.
type variant struct {
	name, values string
}

var variants = []variant{
	{"chart defaults", ""},
	{"usage metrics off", "usage-metrics-off-values.yaml"},
}

// TestToolHiveDelta runs the operators of TOOLHIVE_DELTA_FROM and
// TOOLHIVE_DELTA_TO (set by make toolhive-delta) and reports what changed.
// Without them, or with -short, it is skipped: make test runs the cheap
// check of the committed report (TestReportNamesThePinnedReleases).
func TestToolHiveDelta(t *testing.T) {
	from, to := os.Getenv("TOOLHIVE_DELTA_FROM"), os.Getenv("TOOLHIVE_DELTA_TO")
	if testing.Short() || from == "" || to == "" {
		t.Skip("toolhive-delta: run by make toolhive-delta FROM=<release> TO=<release>")
	}
	bins, err := framework.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	thv := os.Getenv(toolhive.BinariesEnv)
	if thv == "" {
		t.Fatalf("%s is not set", toolhive.BinariesEnv)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	modules := map[string]string{}
	for _, r := range []string{from, to} {
		if modules[r], err = toolhive.ReleaseModuleDir(r); err != nil {
			t.Fatal(err)
		}
	}
	tables := []string{filepath.Join(root, "test", "conformance", "testdata", "table"), filepath.Join(root, "test", "toolhivedelta", "testdata")}
	r := report{from: from, to: to}
	for _, v := range variants {
		snaps := map[string]snapshot{}
		for _, rel := range []string{from, to} {
			snaps[rel] = run(t, bins, toolhive.ReleaseBinaries(thv, rel), modules[rel], rel, v, tables)
		}
		r.add(v.name, snaps[from], snaps[to])
	}
	r.crds = crdChanges(t, toolhive.CRDDir(modules[from]), toolhive.CRDDir(modules[to]))
	doc := r.render(provenance.Current(root, fmt.Sprintf("make toolhive-delta FROM=%s TO=%s", from, to)))
	if *out == "" {
		t.Log(doc)
		return
	}
	if err := os.WriteFile(*out, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot is what one operator wrote: each object cleaned
// (toolhive.Clean), and each custom resource's status as compared, by
// "<case> <Kind>/<name>".
type snapshot struct {
	children map[string]map[string]any
	status   map[string]map[string]any
}

// run starts an API server with release's CRDs, applies the cases of
// tables (and none of the module's examples, which change between
// releases), runs release's operator with its chart's environment and
// v's values until it settles, and reads what it wrote.
func run(t *testing.T, bins, thvBins, module, release string, v variant, tables []string) snapshot {
	t.Helper()
	t.Logf("%s, %s: starting", release, v.name)
	srv, err := framework.Start(framework.Options{BinDir: bins, CRDDir: toolhive.CRDDir(module)})
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	}()
	env, err := framework.NewEnv(srv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var cases []*toolhive.Case
	for _, table := range tables {
		cs, err := toolhive.CasesOf(table, module, toolhive.HandoverKinds)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, slices.DeleteFunc(cs, func(c *toolhive.Case) bool { return !strings.HasPrefix(c.Name, "table/") })...)
	}
	for _, ns := range append([]string{toolhive.OperatorNamespace}, caseNamespaces(cases)...) {
		if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := toolhive.SeedInstanceID(ctx, env.Kube); err != nil {
		t.Fatal(err)
	}
	// The configs are created, and validated by the operator, before the
	// workloads that use them: an operator given both at once reconciles
	// a workload before its configs, fails it for that and retries after
	// a back-off that grows with each failure, so which workload shows a
	// transient Failed phase when the load settles is down to the order
	// it ran in (every run with both at once listed one, under a
	// different release or variant each time), not to the release.
	create := func(workloads bool) {
		for _, c := range cases {
			for _, o := range c.Objects {
				if toolhive.IsWorkload(o.GetKind()) == workloads {
					// What a release's CRD refuses is left out on both sides alike.
					_, _ = toolhive.Create(ctx, env.Dynamic, c.Namespace, o, metav1.FieldValidationIgnore)
				}
			}
		}
	}
	create(false)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "operator.kubeconfig")
	if err := srv.WriteKubeconfigForUser(kubeconfig, "toolhive-operator", "system:masters"); err != nil {
		t.Fatal(err)
	}
	values := ""
	if v.values != "" {
		root, _ := framework.RepoRoot()
		values = filepath.Join(root, "test", "toolhive", "testdata", v.values)
	}
	opts := toolhive.OperatorOptions{Binaries: thvBins, Module: module, Kubeconfig: kubeconfig,
		Namespace: toolhive.OperatorNamespace, Dir: dir, Values: values}
	resources := append(slices.Clone(toolhive.ChildResources), customResources(t, toolhive.CRDDir(module))...)
	op := toolhive.StartOperator(t, opts)
	defer op.Stop(t)
	settle(t, env, resources)
	create(true)
	objs := settle(t, env, resources)
	t.Logf("%s, %s: settled", release, v.name)
	snap := snapshot{children: map[string]map[string]any{}, status: map[string]map[string]any{}}
	byNamespace := map[string]string{}
	for _, c := range cases {
		byNamespace[c.Namespace] = c.Name
	}
	for ns, list := range objs {
		name, ok := byNamespace[ns]
		if !ok {
			continue
		}
		for key, o := range list {
			id := name + " " + key
			if o.GetAPIVersion() == toolhive.Group+"/v1beta1" {
				snap.status[id] = statusOf(o)
				continue
			}
			if toolhive.Owner(o) == "" {
				continue // the case's own objects, not the operator's
			}
			snap.children[id] = releaseImages(toolhive.Clean(o), release)
		}
	}
	return snap
}

func caseNamespaces(cases []*toolhive.Case) []string {
	var out []string
	for _, c := range cases {
		if !slices.Contains(out, c.Namespace) {
			out = append(out, c.Namespace)
		}
	}
	return out
}

// customResources are the resources of the CRDs in dir at v1beta1.
func customResources(t *testing.T, dir string) []schema.GroupVersionResource {
	t.Helper()
	crds, err := framework.ReadManifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []schema.GroupVersionResource
	for _, crd := range crds {
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		out = append(out, schema.GroupVersionResource{Group: toolhive.Group, Version: "v1beta1", Resource: plural})
	}
	return out
}

// quiet is how long nothing may change before the load counts as settled.
const quiet = 5 * time.Second

// settle waits until nothing of resources changes for quiet (3 minutes at
// most: an operator that keeps rewriting a status is read as it is then)
// and returns what it read last.
func settle(t *testing.T, env *framework.Env, resources []schema.GroupVersionResource) map[string]toolhive.Objects {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var last string
	var objs map[string]toolhive.Objects
	quietSince := time.Now()
	for time.Now().Before(deadline) {
		var err error
		if objs, err = toolhive.List(context.Background(), env.Dynamic, "", resources); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, ns := range sortedKeys(objs) {
			for _, k := range objs[ns].Keys() {
				fmt.Fprintf(&b, "%s/%s=%s\n", ns, k, objs[ns][k].GetResourceVersion())
			}
		}
		if b.String() != last {
			last, quietSince = b.String(), time.Now()
		} else if time.Since(quietSince) >= quiet {
			return objs
		}
		time.Sleep(time.Second)
	}
	t.Logf("still changing after 3 minutes: compared as it is")
	return objs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// statusOf is what the report compares of a custom resource's status:
// its phase, message and URL, and each condition's status, reason and
// message, by type (times and generations left out).
func statusOf(o *unstructured.Unstructured) map[string]any {
	st, _, _ := unstructured.NestedMap(o.Object, "status")
	out := map[string]any{}
	for _, f := range []string{"phase", "message", "url"} {
		if v, ok := st[f]; ok {
			out[f] = v
		}
	}
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		out["conditions."+fmt.Sprint(m["type"])] = map[string]any{"status": m["status"], "reason": m["reason"], "message": m["message"]}
	}
	return out
}

// releaseImages writes each release's own images (the chart's tags) as
// <release>, so that the report does not list every Deployment for them.
func releaseImages(o map[string]any, release string) map[string]any {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			if strings.HasPrefix(x, "ghcr.io/stacklok/toolhive/") && strings.HasSuffix(x, ":"+release) {
				return strings.TrimSuffix(x, release) + "<release>"
			}
		}
		return v
	}
	walk(o)
	return o
}
