package plugin

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// children is what a switch can do to a namespace's children, by
// "<Kind> <namespace>/<name>": the pod templates, UIDs and ConfigMap data.
type children struct {
	templates map[string]corev1.PodTemplateSpec
	uids      map[string]string
	data      map[string]map[string]string
}

func readChildren(t *testing.T, env *framework.Env, ns string) children {
	t.Helper()
	ctx := context.Background()
	c := children{templates: map[string]corev1.PodTemplateSpec{}, uids: map[string]string{}, data: map[string]map[string]string{}}
	deps, err := env.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		c.templates["Deployment "+ns+"/"+d.Name] = d.Spec.Template
		c.uids["Deployment "+ns+"/"+d.Name] = string(d.UID)
	}
	cms, err := env.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if isNeighbour(&cm) {
			continue
		}
		c.data["ConfigMap "+ns+"/"+cm.Name] = cm.Data
		c.uids["ConfigMap "+ns+"/"+cm.Name] = string(cm.UID)
	}
	for _, list := range []func() ([]metav1.Object, error){
		func() ([]metav1.Object, error) {
			l, err := env.Kube.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
			return objects(l, err, func(i int) metav1.Object { return &l.Items[i] }, func() int { return len(l.Items) })
		},
		func() ([]metav1.Object, error) {
			l, err := env.Kube.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
			return objects(l, err, func(i int) metav1.Object { return &l.Items[i] }, func() int { return len(l.Items) })
		},
		func() ([]metav1.Object, error) {
			l, err := env.Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
			return objects(l, err, func(i int) metav1.Object { return &l.Items[i] }, func() int { return len(l.Items) })
		},
	} {
		objs, err := list()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if isNeighbour(o) {
				continue
			}
			kind := map[string]string{"*v1.RoleBinding": "RoleBinding", "*v1.ServiceAccount": "ServiceAccount", "*v1.Service": "Service"}[fmt.Sprintf("%T", o)]
			c.uids[kind+" "+ns+"/"+o.GetName()] = string(o.GetUID())
		}
	}
	return c
}

func objects[L any](_ L, err error, at func(int) metav1.Object, n func() int) ([]metav1.Object, error) {
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, n())
	for i := range out {
		out[i] = at(i)
	}
	return out, nil
}

// TestPreflightPredictsTheSwitch has ToolHive's own operator converge
// examples/ (one object of every kind) and an MCPServer with host-path
// volumes (which the switch rolls on purpose), stops it, runs preflight, then
// lets hivekeeper take over with the settings preflight printed, and
// requires that the Deployments whose pod template changed, the children
// that got a new UID and the ConfigMaps whose data changed are exactly
// the ones predicted.
func TestPreflightPredictsTheSwitch(t *testing.T) {
	tc := newToolhiveCluster(t)
	env, root, module := tc.env, tc.root, tc.module
	ctx := context.Background()
	const opNS, ns = toolhiveNS, "team-a"
	if _, err := framework.ApplyManifests(ctx, env.Config, ns, filepath.Join(root, "examples")); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(ctx, hostPathServer(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	srv, bins := tc.srv, tc.bins
	thv := toolhive.StartOperator(t, toolhive.OperatorOptions{Binaries: bins, Module: module, Kubeconfig: srv.Kubeconfig, Namespace: opNS, Dir: t.TempDir()})
	settle(t, env, ns, 3*time.Minute)
	thv.Stop(t)
	before := readChildren(t, env, ns)

	code, r, out := preflightOn(t, srv.Kubeconfig, opNS)
	if !r.Prediction.Settled || (code != 0 && code != 3) {
		t.Fatalf("preflight exited %d:\n%s", code, out)
	}
	t.Logf("preflight exited %d: %s", code, r.Summary)

	// The switch as docs/migration.md runs it: hivekeeper's CRDs over
	// ToolHive's, then hivekeeper with the flags preflight printed.
	if err := framework.InstallCRDs(ctx, env.Config, filepath.Join(root, "deploy", "charts", "hivekeeper", "crds")); err != nil {
		t.Fatal(err)
	}
	flags, err := toolhive.ChartFlags(module, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(flags, r.Settings.Flags) {
		t.Errorf("preflight's flags %v, the chart environment's %v", r.Settings.Flags, flags)
	}
	t.Run("hivekeeper", func(t *testing.T) {
		opts, err := toolhive.Options(ctx, env.Kube, flags)
		if err != nil {
			t.Fatal(err)
		}
		opts.Namespaces = []string{ns}
		env.StartControllers(t, opts)
		workloadtest.Quiesce(t, 3*time.Second, 3*time.Minute, "mcpserver", "mcpremoteproxy", "virtualmcpserver", "embeddingserver", "mcpregistry")
	})
	after := readChildren(t, env, ns)

	restarted, recreated, rewritten := changedBetween(before, after)
	var wantRestarted, wantRecreated, wantRewritten []string
	for _, x := range r.Prediction.Restarts {
		if x.Kind == "Deployment" {
			wantRestarted = append(wantRestarted, x.Key())
		}
	}
	for _, c := range r.Prediction.Recreated {
		wantRecreated = append(wantRecreated, c.Key())
	}
	for _, c := range r.Prediction.Rewritten {
		wantRewritten = append(wantRewritten, c.Key())
	}
	for _, c := range []struct {
		what            string
		measured, wants []string
	}{{"pod templates changed", restarted, wantRestarted}, {"children recreated", recreated, wantRecreated}, {"ConfigMaps rewritten", rewritten, wantRewritten}} {
		sort.Strings(c.measured)
		sort.Strings(c.wants)
		if !slices.Equal(c.measured, c.wants) {
			t.Errorf("%s: the switch %q, preflight %q", c.what, c.measured, c.wants)
		}
	}
	if t.Failed() {
		t.Logf("preflight's report:\n%s", out)
	}
	if len(restarted) == 0 {
		t.Error("the switch restarted nothing: the MCPServer with host paths was to roll")
	}
	t.Logf("switch: %d pod templates changed, %d children recreated, %d ConfigMaps rewritten, as predicted", len(restarted), len(recreated), len(rewritten))
}

// settle waits until nothing in ns has changed for a few seconds.
func settle(t *testing.T, env *framework.Env, ns string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last, since := versions(t, env, ns), time.Now()
	for time.Since(since) < 5*time.Second {
		if time.Now().After(deadline) {
			t.Fatalf("%s still changing after %v", ns, timeout)
		}
		time.Sleep(250 * time.Millisecond)
		if now := versions(t, env, ns); !maps.Equal(now, last) {
			last, since = now, time.Now()
		}
	}
}

// versions are the resourceVersions of the children and workloads in ns,
// read with the versions ToolHive's CRDs serve.
func versions(t *testing.T, env *framework.Env, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	add := func(objs []metav1.Object, err error) {
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if isNeighbour(o) {
				continue
			}
			out[fmt.Sprintf("%T/%s", o, o.GetName())] = o.GetResourceVersion()
		}
	}
	deps, err := env.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	add(objects(deps, err, func(i int) metav1.Object { return &deps.Items[i] }, func() int { return len(deps.Items) }))
	cms, err := env.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	add(objects(cms, err, func(i int) metav1.Object { return &cms.Items[i] }, func() int { return len(cms.Items) }))
	svcs, err := env.Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	add(objects(svcs, err, func(i int) metav1.Object { return &svcs.Items[i] }, func() int { return len(svcs.Items) }))
	sts, err := env.Kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	add(objects(sts, err, func(i int) metav1.Object { return &sts.Items[i] }, func() int { return len(sts.Items) }))
	servers, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).List(ctx, metav1.ListOptions{})
	add(objects(servers, err, func(i int) metav1.Object { return &servers.Items[i] }, func() int { return len(servers.Items) }))
	vmcps, err := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns).List(ctx, metav1.ListOptions{})
	add(objects(vmcps, err, func(i int) metav1.Object { return &vmcps.Items[i] }, func() int { return len(vmcps.Items) }))
	return out
}

// toolhiveNS is where ToolHive's operator runs in a toolhiveCluster.
const toolhiveNS = toolhive.OperatorNamespace

// toolhiveCluster is an API server of its own with ToolHive's CRDs, as a
// cluster that runs ToolHive's operator has, and the namespaces
// toolhive-system, team-a, team-b and hivekeeper-system; toolhive-system
// holds the operator's Deployment with the environment ToolHive's chart
// renders by default: what preflight and switch read. The operator itself
// runs as a process with the same environment, started by the caller.
type toolhiveCluster struct {
	srv                *framework.Server
	env                *framework.Env
	root, module, bins string
}

func newToolhiveCluster(t *testing.T) *toolhiveCluster {
	t.Helper()
	framework.Get(t) // skips without an API server
	tc := &toolhiveCluster{bins: os.Getenv(toolhive.BinariesEnv)}
	if tc.bins == "" {
		framework.Missing(t, "$"+toolhive.BinariesEnv+" is not set: needs ToolHive's operator (hack/toolhive-binaries.sh)")
	}
	var err error
	if tc.module, err = toolhive.ModuleDir(); err != nil {
		framework.Missing(t, fmt.Sprintf("ToolHive's source: %v", err))
	}
	if tc.root, err = framework.RepoRoot(); err != nil {
		t.Fatal(err)
	}
	if tc.srv, err = framework.Start(framework.Options{CRDDir: toolhive.CRDDir(tc.module)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tc.srv.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	})
	if tc.env, err = framework.NewEnv(tc.srv); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{toolhiveNS, "team-a", "team-b", "hivekeeper-system"} {
		if _, err := tc.env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dep, err := toolhive.ChartDeployment(tc.module, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.env.Kube.AppsV1().Deployments(toolhiveNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return tc
}

// hostPathServer is an MCPServer the switch rolls on purpose: ToolHive's
// operator mounts spec.volumes' host paths into the proxy pod, hivekeeper
// does not (docs/compatibility.md).
func hostPathServer(ns string) *thv1.MCPServer {
	return &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "files"}, Spec: thv1.MCPServerSpec{
		Image: "docker.io/mcp/filesystem:latest", Transport: thv1.TransportStdio, ProxyPort: 8080,
		Volumes: []thv1.Volume{{Name: "data", HostPath: "/srv/data", MountPath: "/data"}}}}
}

// changedBetween are the children a switch changed, by "<Kind>
// <namespace>/<name>": the Deployments whose pod template changed or that
// were recreated (their pods restart), the children recreated (a new
// UID), the ConfigMaps whose data changed.
func changedBetween(before, after children) (restarted, recreated, rewritten []string) {
	for k, tpl := range before.templates {
		if a, ok := after.templates[k]; ok && !equality.Semantic.DeepEqual(tpl, a) {
			restarted = append(restarted, k)
		}
	}
	for k, uid := range before.uids {
		if a, ok := after.uids[k]; ok && a != uid {
			recreated = append(recreated, k)
			if strings.HasPrefix(k, "Deployment ") && !slices.Contains(restarted, k) {
				restarted = append(restarted, k)
			}
		}
	}
	for k, d := range before.data {
		if a, ok := after.data[k]; ok && !maps.Equal(d, a) {
			rewritten = append(rewritten, k)
		}
	}
	return restarted, recreated, rewritten
}
