package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/deliberate"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// childDifference is a child field where hivekeeper deliberately writes
// something other than ToolHive's operator, mirrored in
// docs/compatibility.md's differences. Path is a child of an Owner kind
// ("Kind" or "Kind/path") and everything under it.
type childDifference struct {
	Owner, Path, Reason string
}

var allowedChildDifferences = []childDifference{
	{thv1.KindMCPRegistry, "Role", "ToolHive's operator writes the registry API's rules into a Role per MCPRegistry, which its creator must hold itself; " +
		"hivekeeper binds the chart's ClusterRole (rbac.RegistryAPIRules, the same rules) and creates no Role"},
	{thv1.KindMCPRegistry, "RoleBinding/roleRef", "the registry API's RoleBinding names the chart's ClusterRole, not a Role of its own"},
}

// kindChild is one child of an EmbeddingServer or MCPRegistry.
type kindChild struct {
	kind string
	gvr  schema.GroupVersionResource
	name string
}

// childrenOf are the children ToolHive's operator makes for an
// EmbeddingServer or MCPRegistry named n.
func childrenOf(kind, n string) []kindChild {
	var (
		sts  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
		dep  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
		svc  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
		cm   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		sa   = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
		rb   = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
		role = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	)
	if kind == thv1.KindEmbeddingServer {
		return []kindChild{{"StatefulSet", sts, n}, {"Service", svc, n}}
	}
	return []kindChild{
		{"ConfigMap", cm, naming.RegistryConfigMapName(n)},
		{"ServiceAccount", sa, naming.RegistryAPIAccountName(n)},
		{"Role", role, naming.RegistryAPIAccountName(n)},
		{"RoleBinding", rb, naming.RegistryAPIAccountName(n)},
		{"Deployment", dep, naming.RegistryAPIName(n)},
		{"Service", svc, naming.RegistryAPIName(n)},
	}
}

// TestDifferentialEmbeddingAndRegistryChildren applies ToolHive's
// EmbeddingServer and MCPRegistry examples, hivekeeper's and the suite's
// own (testdata/kinds) to hivekeeper and to ToolHive's operator (each on
// its own API server, namespaces of the same name) and compares every
// child both write, as stored: metadata and spec, all but what the API
// server assigns (UIDs, versions, timestamps, cluster IPs) and status. A
// difference fails unless it is in allowedChildDifferences.
func TestDifferentialEmbeddingAndRegistryChildren(t *testing.T) {
	requireToolHive(t)
	if _, err := os.Stat(filepath.Join(toolhiveBin, "thv-operator")); err != nil {
		framework.Missing(t, fmt.Sprintf("differential: no thv-operator in %s (hack/toolhive-binaries.sh builds it): %v", toolhiveBin, err), toolhive.BinariesEnv)
	}
	env := framework.Get(t)
	var files []string
	for _, dir := range []string{"embedding-servers", "mcp-registries"} {
		found, _ := filepath.Glob(filepath.Join(toolhiveModule, "examples", "operator", dir, "*.yaml"))
		files = append(files, found...)
	}
	own, _ := filepath.Glob("testdata/kinds/*.yaml")
	files = append(files, own...)
	files = append(files, filepath.Join("..", "..", "examples", "embeddingserver.yaml"), filepath.Join("..", "..", "examples", "mcpregistry.yaml"))
	if len(files) < 10 {
		t.Fatalf("only %d manifests: %v", len(files), files)
	}
	registryAPIImage, err := toolhive.RegistryAPIImage(toolhiveModule)
	if err != nil {
		t.Fatal(err)
	}
	env.StartControllers(t, app.Options{Workers: 2, RegistryAPIImage: registryAPIImage})
	type owner struct{ file, ns, kind, name string }
	var owners []owner
	thv, namespaces := startBeside(t, env, files)
	for _, f := range files {
		objs, err := framework.ReadManifests(f)
		if err != nil {
			t.Fatal(err)
		}
		ns := namespaces[f]
		for _, o := range objs {
			if _, err := createStrict(env, ns, o.DeepCopy()); err != nil {
				t.Fatalf("%s: hivekeeper's server: creating %s %s: %v", f, o.GetKind(), o.GetName(), err)
			}
			if _, err := createStrict(thv.env, ns, o.DeepCopy()); err != nil {
				// An example that lags behind ToolHive's own CRD (an
				// EmbeddingServer's resourceOverrides.deployment): the
				// server drops what the schema does not know.
				t.Logf("%s: ToolHive's CRD refuses fields of %s %s; created without them: %v", f, o.GetKind(), o.GetName(), err)
				if _, err := createWith(thv.env, ns, o.DeepCopy(), metav1.FieldValidationIgnore); err != nil {
					t.Fatalf("%s: ToolHive's server: creating %s %s: %v", f, o.GetKind(), o.GetName(), err)
				}
			}
			if k := o.GetKind(); k == thv1.KindEmbeddingServer || k == thv1.KindMCPRegistry {
				owners = append(owners, owner{filepath.Base(f), ns, k, o.GetName()})
			}
		}
	}

	used := map[string]bool{}
	compared := 0
	for _, o := range owners {
		for _, c := range childrenOf(o.kind, o.name) {
			id := fmt.Sprintf("%s %s %s/%s", o.file, c.kind, o.ns, c.name)
			thvObj := settled(t, thv.env, c, o.ns, id+" (ToolHive's operator)")
			if c.kind == "Role" {
				// hivekeeper creates none.
				if _, err := env.Dynamic.Resource(c.gvr).Namespace(o.ns).Get(context.Background(), c.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("%s: hivekeeper wrote a Role: %v", id, err)
				}
				used["Role"] = true
				continue
			}
			hiveObj := settled(t, env, c, o.ns, id+" (hivekeeper)")
			compared++
			var fields int
			for _, d := range diffObjects("", comparable(thvObj.Object), comparable(hiveObj.Object), &fields) {
				if a, ok := allowedChild(c.kind, d.path); ok {
					used[a.Path] = true
					t.Logf("%s: allowed difference %s: ToolHive's operator writes %s, hivekeeper %s (%s)", id, d.path, d.a, d.b, a.Reason)
					continue
				}
				t.Errorf("%s: %s: ToolHive's operator writes %s, hivekeeper %s", id, d.path, d.a, d.b)
			}
			t.Logf("%s: %d fields compared", id, fields)
		}
	}
	t.Logf("%d children of %d EmbeddingServers and MCPRegistries compared", compared, len(owners))
	// docs/compatibility.md states these numbers.
	if compared != 50 || len(owners) != 13 {
		t.Errorf("compared %d children of %d owners; docs/compatibility.md says 50 of 13: update it", compared, len(owners))
	}
	for _, a := range allowedChildDifferences {
		if !used[a.Path] {
			t.Errorf("allowed child difference %s matched nothing: remove it here and in docs/compatibility.md", a.Path)
		}
	}
}

// settled waits until the child exists and reads the same twice, a
// second apart: an operator may rewrite a child it just made.
func settled(t *testing.T, e *framework.Env, c kindChild, ns, what string) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		got, err := e.Dynamic.Resource(c.gvr).Namespace(ns).Get(context.Background(), c.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		same := last != nil && got.GetResourceVersion() == last.GetResourceVersion()
		last = got
		if !same {
			time.Sleep(time.Second)
		}
		return same, nil
	}, "%s to exist and settle", what)
	return last
}

// comparable is a stored object without what the API server assigns
// (identity, versions, timestamps, cluster IPs) or other controllers
// write (status).
func comparable(obj map[string]any) map[string]any {
	out := deepCopyJSON(obj)
	delete(out, "status")
	md, _ := out["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"} {
		delete(md, k)
	}
	if refs, ok := md["ownerReferences"].([]any); ok {
		for _, r := range refs {
			delete(r.(map[string]any), "uid")
		}
	}
	if spec, ok := out["spec"].(map[string]any); ok {
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
	return out
}

func deepCopyJSON(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// objectDifference is one path where two objects differ, with both values
// as JSON ("nothing" for absent).
type objectDifference struct{ path, a, b string }

// diffObjects compares a and b at path, counting the leaves it compared.
func diffObjects(path string, a, b any, fields *int) []objectDifference {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []objectDifference
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			out = append(out, diffObjects(p, am[k], bm[k], fields)...)
		}
		return out
	}
	*fields++
	if reflect.DeepEqual(a, b) {
		return nil
	}
	show := func(v any) string {
		if v == nil {
			return "nothing"
		}
		j, _ := json.Marshal(v)
		return string(j)
	}
	return []objectDifference{{path, show(a), show(b)}}
}

// allowedChild finds the allowed difference covering path of a child of
// kind.
func allowedChild(kind, path string) (childDifference, bool) {
	for _, a := range allowedChildDifferences {
		k, p, _ := strings.Cut(a.Path, "/")
		if k == kind && (p == "" || path == p || strings.HasPrefix(path, p+".")) {
			return a, true
		}
	}
	return childDifference{}, false
}

// markEmbeddingServersReady plays the StatefulSet controller and kubelet
// for the EmbeddingServers of objs on hivekeeper's server and ToolHive's:
// once the operator there made an EmbeddingServer's StatefulSet, its
// replica is reported created and ready, so that the EmbeddingServer turns
// Ready and the vMCPs naming it are deployed.
func markEmbeddingServersReady(t *testing.T, ns string, objs []*unstructured.Unstructured, hive, thv *framework.Env) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != thv1.KindEmbeddingServer {
			continue
		}
		for side, e := range map[string]*framework.Env{"hivekeeper's": hive, "ToolHive's": thv} {
			if _, err := e.Toolhive.ToolhiveV1beta1().EmbeddingServers(ns).Get(context.Background(), o.GetName(), metav1.GetOptions{}); err != nil {
				t.Fatalf("EmbeddingServer %s/%s on %s server: %v", ns, o.GetName(), side, err)
			}
			sts := e.Kube.AppsV1().StatefulSets(ns)
			framework.Eventually(t, 3*time.Minute, func() (bool, error) {
				_, err := sts.Patch(context.Background(), o.GetName(), types.MergePatchType,
					[]byte(`{"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1}}`), metav1.PatchOptions{}, "status")
				return err == nil, err
			}, "the StatefulSet of EmbeddingServer %s/%s on %s server", ns, o.GetName(), side)
		}
	}
}

// TestAllowedChildDifferencesDocumented keeps allowedChildDifferences and
// test/deliberate's Children (docs/compatibility.md's table of children)
// the same.
func TestAllowedChildDifferencesDocumented(t *testing.T) {
	var got, want []string
	for _, a := range allowedChildDifferences {
		got = append(got, a.Owner+" "+a.Path)
	}
	for _, d := range deliberate.Children {
		if slices.Contains(d.Suites, deliberate.SuiteChildren) {
			want = append(want, d.Owner+" "+d.Field)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("allowedChildDifferences accepts %q; test/deliberate lists %q: list each deliberate difference in both", got, want)
	}
}

// addEmbeddingServers adds the EmbeddingServers of a case's manifest to
// its objects, before its VirtualMCPServers: toolhive.Kinds leaves them
// out (the handover suite's load has none), and a vMCP naming one is
// deployed by either operator only once it is ready
// (markEmbeddingServersReady).
func addEmbeddingServers(t *testing.T, c *toolhive.Case) {
	t.Helper()
	rel, example := strings.CutPrefix(c.Name, "examples/")
	file := filepath.Join(toolhive.ExamplesDir(toolhiveModule), rel)
	if !example {
		file = filepath.Join("testdata", c.Name)
	}
	objs, err := framework.ReadManifests(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != thv1.KindEmbeddingServer {
			continue
		}
		at := slices.IndexFunc(c.Objects, func(x *unstructured.Unstructured) bool { return x.GetKind() == thv1.KindVirtualMCPServer })
		if at < 0 {
			at = len(c.Objects)
		}
		c.Objects = slices.Insert(c.Objects, at, o)
		c.Left = slices.DeleteFunc(c.Left, func(note string) bool {
			return strings.HasPrefix(note, thv1.KindEmbeddingServer+" "+o.GetName()+":")
		})
	}
}
