package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/test/argocd"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// healthScript is deploy/argocd/health.lua, read once by the test.
var healthScript string

// statusDifference is something a user reads off a custom resource —
// phase, message, a condition, a printer column, an event reason — that
// hivekeeper reports otherwise than ToolHive's operator in one case of the
// status differential. Where is "<case> <Kind>/<name> <aspect>", aspect
// being "phase", "message", "condition <Type>", "column <Name>",
// "event <Type> <Reason>", "health" (Argo CD's, through
// deploy/argocd/health.lua), "observedGeneration" (current, behind or
// absent, as kstatus reads it) or "existence" ("deleted" once a case's
// step deleted it and it went). Pending ones are the status surface's work
// list: differences not yet decided or mended; the others are deliberate
// and listed in docs/compatibility.md.
type statusDifference struct {
	Where, Reason string
	Pending       bool
}

// statusCases are the manifests the status differential applies, each to a
// namespace of its own on both API servers: hivekeeper's examples (every
// kind, as a user starts), workloads whose references name nothing, and
// workloads whose references name a config ToolHive's operator holds invalid
// (or an OIDC config whose CA bundle ConfigMap is missing). The cases with
// a step (statusSteps) go on from there as a cluster would: failing pods,
// a deleted runner StatefulSet, backends vmcp finds down, a group deleted
// under its members.
func statusCases() map[string][]string {
	examples, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	return map[string][]string{
		"examples":     examples,
		"missing-refs": {filepath.Join("testdata", "status", "missing-refs.yaml")},
		"invalid-refs": {filepath.Join("testdata", "status", "invalid-refs.yaml")},
		"xaa":          {filepath.Join("testdata", "status", "xaa.yaml")},
		// The embedded authorization server's checks, one config each,
		// and a workload refused by the server's own check.
		"auth-server-validation": {filepath.Join("testdata", "table", "50-auth-server-validation.yaml")},
		// A vMCP's own authorization server with two upstreams: its
		// advisories (IdentitySynthesized, DeprecatedInboundGrantConfiguration).
		"vmcp-auth-server": {filepath.Join("testdata", "table", "47-vmcp-xaa-subject-provider.yaml")},
		// Cases with a step (status_runtime_test.go).
		"pod-failures":       {filepath.Join("testdata", "status", "pod-failures.yaml")},
		"runner-statefulset": {filepath.Join("testdata", "status", "runner-statefulset.yaml")},
		"backends-down":      {filepath.Join("testdata", "status", "backends-down.yaml")},
		"group-deleted":      {filepath.Join("testdata", "status", "group-deleted.yaml")},
	}
}

// TestDifferentialStatus applies the same manifests to hivekeeper and to
// ToolHive's operator, each on an API server of its own, lets both settle,
// and compares what `kubectl get`, `kubectl describe` and `kubectl wait`
// read off every custom resource: status.phase and status.message, each
// condition's status and reason, the printer columns as the API server
// prints them (its Table, from each side's own CRD) and the reasons of the
// events about it. It fails on a difference statusDifferences does not list,
// and on a listed one that no longer occurs.
func TestDifferentialStatus(t *testing.T) {
	requireToolHive(t)
	if _, err := os.Stat(filepath.Join(toolhiveBin, "thv-operator")); err != nil {
		framework.Missing(t, fmt.Sprintf("status differential: no thv-operator in %s (hack/toolhive-binaries.sh builds it): %v", toolhiveBin, err), toolhive.BinariesEnv)
	}
	var err error
	if healthScript, err = argocd.ReadScript(); err != nil {
		t.Fatal(err)
	}
	env := framework.Get(t)
	env.StartControllers(t, app.Options{Workers: 2})

	cases := statusCases()
	names := slices.Sorted(maps.Keys(cases))
	thv, namespaces := startBeside(t, env, names)

	objects := map[string][]*unstructured.Unstructured{}
	for _, c := range names {
		objs, err := framework.ReadManifests(cases[c]...)
		if err != nil {
			t.Fatal(err)
		}
		ns := namespaces[c]
		// What is referenced is created first, as a Helm chart orders it:
		// a workload created before its config would have each operator
		// report the config missing for a moment, and whether that moment
		// is seen is timing.
		sort.SliceStable(objs, func(i, j int) bool { return createRank(objs[i].GetKind()) < createRank(objs[j].GetKind()) })
		for _, o := range objs {
			if _, err := createStrict(env, ns, o.DeepCopy()); err != nil {
				t.Fatalf("%s: hivekeeper's server: creating %s %s: %v", c, o.GetKind(), o.GetName(), err)
			}
			if _, err := createStrict(thv.env, ns, o.DeepCopy()); err != nil {
				t.Fatalf("%s: ToolHive's server: creating %s %s: %v", c, o.GetKind(), o.GetName(), err)
			}
			if strings.HasPrefix(o.GetAPIVersion(), thv1.GroupName+"/") {
				objects[c] = append(objects[c], o)
			}
		}
	}

	// What no test server runs (kubelet, controller-manager, proxy
	// runner, vmcp) or a user does next, on both servers.
	runStatusSteps(t, map[string]*framework.Env{"hivekeeper's": env, "ToolHive's": thv.env}, namespaces)

	var hive, theirs map[string]string
	var wg sync.WaitGroup
	wg.Go(func() { hive = settledSurface(t, env, namespaces, objects, "hivekeeper") })
	wg.Go(func() { theirs = settledSurface(t, thv.env, namespaces, objects, "ToolHive's operator") })
	wg.Wait()

	checkStepsShow(t, theirs)

	both := maps.Clone(hive)
	maps.Copy(both, theirs)
	sorted := slices.Sorted(maps.Keys(both))
	used := map[string]bool{}
	compared, additions := 0, 0
	for _, k := range sorted {
		compared++
		a, b := orNothing(theirs[k]), orNothing(hive[k])
		if a == b {
			continue
		}
		if isAddition(k, a, b) {
			additions++
			t.Logf("%s: hivekeeper's addition: %s", k, b)
			continue
		}
		if d, ok := listedStatusDifference(k); ok {
			used[d.Where] = true
			t.Logf("%s: listed difference: ToolHive's operator %s, hivekeeper %s (%s)", k, a, b, d.Reason)
			continue
		}
		t.Errorf("%s: ToolHive's operator %s, hivekeeper %s", k, a, b)
	}
	t.Logf("%d aspects of %d custom resources compared; %d are hivekeeper's additions", compared, countObjects(objects), additions)
	for _, d := range statusDifferences {
		switch {
		case used[d.Where]:
		case d.Pending:
			// The work list is not a gate: an item that went away (mended,
			// or a message that changed) is removed by whoever notices.
			t.Logf("pending status difference %q did not occur", d.Where)
		default:
			t.Errorf("listed status difference %q matched nothing: remove it here and from docs/compatibility.md", d.Where)
		}
	}
}

// isAddition says whether the aspect at key, when ToolHive's operator
// writes nothing there, is one hivekeeper may add: a condition type or an
// event reason of its own. A script reading ToolHive's conditions and
// events finds all of them still there (what hivekeeper writes instead of
// one of ToolHive's shows as that one missing). Phase, message and columns
// have one value per object, so a value where ToolHive's has none is a
// difference.
//
// A status whose observedGeneration hivekeeper writes where ToolHive's
// operator leaves it out (a workload it failed on a missing reference, a
// kind it runs no controller for) is one too: kstatus and Flux read the
// object as reconciled instead of guessing.
func isAddition(key, theirs, ours string) bool {
	if strings.HasSuffix(key, " observedGeneration") {
		return theirs == "absent" && ours == "current"
	}
	return theirs == "nothing" && (strings.Contains(key, " condition ") || strings.Contains(key, " event "))
}

// createRank orders a case's objects for creation: Secrets, the config
// kinds, groups and entries before the workloads that reference them.
func createRank(kind string) int {
	switch kind {
	case thv1.KindMCPServer, thv1.KindMCPRemoteProxy, thv1.KindVirtualMCPServer:
		return 2
	case thv1.KindMCPServerEntry:
		return 1
	}
	return 0
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

func countObjects(objects map[string][]*unstructured.Unstructured) int {
	n := 0
	for _, objs := range objects {
		n += len(objs)
	}
	return n
}

func listedStatusDifference(where string) (statusDifference, bool) {
	for _, d := range statusDifferences {
		if d.Where == where {
			return d, true
		}
	}
	return statusDifference{}, false
}

// settledSurface reads the status surface of every object until it reads
// the same for settleFor in a row, and not before atLeast has passed (an
// operator starts on a namespace's objects a few seconds after they are
// created, then requeues, turns conditions and records events for a
// while), at most 3 minutes.
func settledSurface(t *testing.T, e *framework.Env, namespaces map[string]string, objects map[string][]*unstructured.Unstructured, who string) map[string]string {
	const settleFor, atLeast = 15 * time.Second, 30 * time.Second
	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	var last map[string]string
	stableSince := time.Now()
	versions, err := servedVersions(e)
	if err != nil {
		t.Errorf("%s: %v", who, err)
		return nil
	}
	for {
		got, err := surface(e, versions, namespaces, objects)
		if err != nil {
			t.Errorf("%s: reading the status surface: %v", who, err)
			return got
		}
		if last == nil || !maps.Equal(got, last) {
			last, stableSince = got, time.Now()
		} else if time.Since(stableSince) >= settleFor && time.Since(start) >= atLeast {
			return last
		}
		if time.Now().After(deadline) {
			t.Logf("%s: status still changing after 3 minutes; comparing the last read", who)
			return last
		}
		time.Sleep(time.Second)
	}
}

// servedVersions maps each resource of the group to the version the server
// serves it at, v1beta1 where it can: ToolHive v0.63.0 serves a few kinds
// (MCPWebhookConfig) only as v1alpha1.
func servedVersions(e *framework.Env) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range []string{"v1alpha1", thv1.SchemeGroupVersion.Version} {
		list, err := e.Kube.Discovery().ServerResourcesForGroupVersion(thv1.GroupName + "/" + v)
		if err != nil {
			return nil, fmt.Errorf("discovery of %s/%s: %w", thv1.GroupName, v, err)
		}
		for _, r := range list.APIResources {
			out[r.Name] = v
		}
	}
	return out, nil
}

// surface is the status surface of every object of every case, keyed by
// "<case> <Kind>/<name> <aspect>".
func surface(e *framework.Env, versions, namespaces map[string]string, objects map[string][]*unstructured.Unstructured) (map[string]string, error) {
	ctx := context.Background()
	out := map[string]string{}
	for c, objs := range objects {
		ns := namespaces[c]
		events, err := e.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, err
		}
		for _, o := range objs {
			id := fmt.Sprintf("%s %s/%s ", c, o.GetKind(), o.GetName())
			resource := resourceOf(o.GetKind())
			version := versions[resource]
			got, err := e.Dynamic.Resource(thv1.SchemeGroupVersion.WithResource(resource).GroupResource().WithVersion(version)).Namespace(ns).Get(ctx, o.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				// Deleted by a case's step, finalizers released.
				out[id+"existence"] = "deleted"
				continue
			}
			if err != nil {
				return out, fmt.Errorf("%s%w", id, err)
			}
			// What Argo CD shows, through the health check hivekeeper
			// ships: the same under both operators, or listed.
			health, _, err := argocd.Health(healthScript, got.Object)
			if err != nil {
				return out, fmt.Errorf("%sArgo CD health: %w", id, err)
			}
			out[id+"health"] = health
			out[id+"observedGeneration"] = generationSeen(got)
			status, _ := got.Object["status"].(map[string]any)
			for _, f := range []string{"phase", "message"} {
				if v, ok := status[f]; ok {
					out[id+f] = fmt.Sprint(v)
				}
			}
			conds, _ := status["conditions"].([]any)
			for _, c := range conds {
				m, _ := c.(map[string]any)
				out[id+"condition "+fmt.Sprint(m["type"])] = fmt.Sprintf("%v/%v", m["status"], m["reason"])
			}
			cols, err := printerColumns(ctx, e, version, ns, resource, o.GetName())
			if err != nil {
				return out, fmt.Errorf("%sprinter columns: %w", id, err)
			}
			for name, v := range cols {
				out[id+"column "+name] = v
			}
			for _, ev := range events.Items {
				if ev.InvolvedObject.Kind == o.GetKind() && ev.InvolvedObject.Name == o.GetName() {
					out[id+"event "+ev.Type+" "+ev.Reason] = "recorded"
				}
			}
		}
	}
	return out, nil
}

// generationSeen says whether the status describes the object's current
// generation, which kstatus (Flux) reads: "current", "behind" or "absent".
func generationSeen(obj *unstructured.Unstructured) string {
	seen, found, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	switch {
	case !found:
		return "absent"
	case seen < obj.GetGeneration():
		return "behind"
	}
	return "current"
}

// printerColumns is the row `kubectl get` prints for the object, as the API
// server renders it from the CRD's additionalPrinterColumns (a Table),
// without its date columns (Age), which no two creations share.
func printerColumns(ctx context.Context, e *framework.Env, version, ns, resource, name string) (map[string]string, error) {
	raw, err := e.Kube.CoreV1().RESTClient().Get().
		AbsPath("/apis", thv1.GroupName, version, "namespaces", ns, resource, name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		return nil, err
	}
	out := map[string]string{}
	if len(table.Rows) != 1 {
		return nil, fmt.Errorf("%s %s/%s: the Table has %d rows", resource, ns, name, len(table.Rows))
	}
	for i, col := range table.ColumnDefinitions {
		if col.Type == "date" || col.Name == "Name" || i >= len(table.Rows[0].Cells) {
			continue
		}
		if v := fmt.Sprint(table.Rows[0].Cells[i]); v != "" && v != "<nil>" {
			out[col.Name] = v
		}
	}
	return out, nil
}

// resourceOf is the plural resource name of a ToolHive kind.
func resourceOf(kind string) string {
	r := strings.ToLower(kind)
	if strings.HasSuffix(r, "y") {
		return strings.TrimSuffix(r, "y") + "ies"
	}
	return r + "s"
}

// The reasons several listed differences share.
const (
	refURL             = "hivekeeper publishes status.url while a referenced config is missing or not valid (docs/compatibility.md, MCPServer and MCPRemoteProxy status)"
	refMessage         = "hivekeeper says which reference is missing or not valid in status.message (ToolHive's operator leaves it as it was, or words it its own way) (docs/compatibility.md, MCPServer and MCPRemoteProxy status)"
	vmcpAuthzConfigMap = "a vMCP whose authorization ConfigMap is missing or not usable is Failed, Ready=False with the cause in status.message, " +
		"where ToolHive's operator leaves it Pending and retries (docs/compatibility.md, Authorization from a ConfigMap)"
	remoteProxyURL = "an MCPRemoteProxy's status.url carries the transport path (/mcp), which vmcp reaches it at; ToolHive's operator writes the bare Service address (docs/compatibility.md, vMCP outgoing auth and backends)"
)

// statusDifferences lists every difference the status differential finds
// beyond hivekeeper's additions, measured against the suites' release of
// ToolHive's operator. The pending ones are the status surface's work list: when one
// is mended it goes; when one is decided as deliberate, Pending turns
// false and docs/compatibility.md says why.
var statusDifferences = []statusDifference{
	{"examples MCPRemoteProxy/vendor-tools column URL", remoteProxyURL, false},
	{"examples VirtualMCPCompositeToolDefinition/check-dependency health", "ToolHive's operator runs no controller for the kind, so Argo CD reads it Progressing forever; hivekeeper validates it, and it reads Healthy (docs/compatibility.md, Composite tool definitions)", false},
	{"examples VirtualMCPCompositeToolDefinition/check-dependency column Status", "ToolHive's operator runs no controller for the kind, so its Status column stays empty; hivekeeper validates the definition and fills it (docs/compatibility.md, Composite tool definitions)", false},
	{"auth-server-validation MCPServer/asv-delegate-audience-server column URL", refURL, false},
	{"invalid-refs MCPRemoteProxy/authz-config-invalid column URL", refURL, false},
	{"invalid-refs MCPRemoteProxy/proxy-auth-server-ca-invalid column URL", refURL, false},
	{"invalid-refs MCPServer/auth-server-ca-invalid column URL", refURL, false},
	{"invalid-refs MCPRemoteProxy/authz-config-invalid message", refMessage, false},
	{"invalid-refs MCPRemoteProxy/proxy-oidc-ca-bundle-missing column URL", remoteProxyURL, false},
	{"invalid-refs MCPServer/external-auth-enterprise column URL", refURL, false},
	{"invalid-refs MCPServer/external-auth-enterprise message", refMessage, false},
	{"invalid-refs MCPServer/oidc-config-invalid column URL", refURL, false},
	{"invalid-refs MCPServer/oidc-config-invalid message", refMessage, false},
	{"missing-refs MCPRemoteProxy/external-auth-missing column URL", refURL, false},
	{"missing-refs MCPRemoteProxy/remote-authz-configmap-missing column URL", refURL, false},
	{"missing-refs MCPServer/authz-configmap-missing column URL", refURL, false},
	{"missing-refs VirtualMCPServer/gateway-authz-configmap-missing column Phase", vmcpAuthzConfigMap, false},
	{"missing-refs VirtualMCPServer/gateway-authz-configmap-missing column Ready", vmcpAuthzConfigMap, false},
	{"missing-refs VirtualMCPServer/gateway-authz-configmap-missing column URL", vmcpAuthzConfigMap, false},
	{"missing-refs VirtualMCPServer/gateway-authz-configmap-missing health", vmcpAuthzConfigMap, false},
	{"missing-refs VirtualMCPServer/gateway-authz-configmap-missing message", vmcpAuthzConfigMap, false},
	{"missing-refs VirtualMCPServer/gateway-authz-configmap-missing phase", vmcpAuthzConfigMap, false},
	{"missing-refs MCPRemoteProxy/external-auth-missing message", refMessage, false},
	{"missing-refs MCPServer/oidc-config-missing column URL", refURL, false},
	{"missing-refs MCPServer/oidc-config-missing message", refMessage, false},
	{"missing-refs MCPServer/tool-config-missing column URL", refURL, false},
	{"missing-refs MCPServer/tool-config-missing message", refMessage, false},
	{"missing-refs VirtualMCPServer/gateway-group-missing column Ready", "hivekeeper sets Ready=False GroupRefNotFound on a vMCP failed for its missing group, where ToolHive's operator writes no Ready (docs/compatibility.md, VirtualMCPServer status)", false},
	{"pod-failures MCPRemoteProxy/remote-crash-loop column URL", "an MCPRemoteProxy's status.url carries the transport path (/mcp), which vmcp reaches it at; ToolHive's operator writes the bare Service address (docs/compatibility.md, vMCP outgoing auth and backends)", false},
	{"pod-failures MCPRemoteProxy/remote-image-pull-backoff column URL", "an MCPRemoteProxy's status.url carries the transport path (/mcp), which vmcp reaches it at; ToolHive's operator writes the bare Service address (docs/compatibility.md, vMCP outgoing auth and backends)", false},
	{"pod-failures MCPRemoteProxy/remote-terminating column URL", "an MCPRemoteProxy's status.url carries the transport path (/mcp), which vmcp reaches it at; ToolHive's operator writes the bare Service address (docs/compatibility.md, vMCP outgoing auth and backends)", false},
	{"runner-statefulset MCPServer/runner-gone message", "a ready proxy whose runner StatefulSet was deleted is Pending on both; ToolHive's operator says it is recreating the StatefulSet (it restarts the proxy), hivekeeper, which does not, says the runner creates it when the proxy restarts (docs/compatibility.md, The runner's StatefulSet is not adopted or bounced for)", false},
	{"group-deleted MCPRemoteProxy/member-proxy column URL", "an MCPRemoteProxy's status.url carries the transport path (/mcp), which vmcp reaches it at; ToolHive's operator writes the bare Service address (docs/compatibility.md, vMCP outgoing auth and backends)", false},
	{"group-deleted VirtualMCPServer/member-vmcp condition Ready", "a vMCP whose MCPGroup was deleted is Failed on both; hivekeeper sets Ready=False GroupRefNotFound, where ToolHive's operator leaves the Ready it last wrote (False/DeploymentNotReady here) (docs/compatibility.md, VirtualMCPServer status)", false},
}
