package crds

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// apiVersions are the versions of the group every kind is served in.
var apiVersions = []string{"v1alpha1", "v1beta1"}

// TestToolHiveExamples applies every document of ToolHive's
// examples/operator, of the runtime-oracle release and of the API release,
// in each API version, to two API servers: one with hivekeeper's CRDs and
// one with ToolHive's CRDs of the API release. Both use kubectl's strict
// field validation, so a field a schema does not know is an error rather
// than a silent loss. Then:
//
//   - hivekeeper's CRDs accept a document exactly when ToolHive's do (an
//     example ToolHive's own CRD refuses must be refused here too, rather
//     than stored as a config no operator can act on), but for one whose
//     only fault for ToolHive is a field its schema does not know (it
//     applies to ToolHive's server without strict validation): hivekeeper
//     keeps unknown fields, as it keeps any field of a later release, and
//     must then store it whole;
//   - an accepted object reads back from hivekeeper's server whole, in
//     every version, at every level, with the same values;
//   - its spec is stored as ToolHive's server stores it (the same
//     defaults), plus the unknown fields ToolHive's server prunes;
//   - it decodes into hivekeeper's Go types, as its informers will.
//
// A failure names the release, version, file, kind and name, and the first
// differing field.
func TestToolHiveExamples(t *testing.T) {
	apiVersion, apiSrc := toolhiveSource(t, framework.ToolHiveAPIRelease)
	runtimeVersion, runtimeSrc := toolhiveSource(t, framework.ToolHiveRuntimeRelease)
	env := framework.Get(t)
	theirs := startServer(t, toolhiveCRDs(apiSrc))
	mapper := restMapper(t, env)
	applied := map[string]int{}
	for _, rel := range []struct{ version, src string }{{runtimeVersion, runtimeSrc}, {apiVersion, apiSrc}} {
		root := filepath.Join(rel.src, "examples", "operator")
		for _, file := range exampleFiles(t, root) {
			name, _ := filepath.Rel(root, file)
			objs, err := framework.ReadManifests(file)
			if err != nil {
				t.Errorf("%s %s: %v", rel.version, name, err)
				continue
			}
			objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool {
				return o.GroupVersionKind().Group != thv1.GroupName
			})
			if len(objs) == 0 {
				continue
			}
			for _, version := range apiVersions {
				t.Run(rel.version+"/"+version+"/"+name, func(t *testing.T) {
					ns := env.Namespace(t)
					createNamespace(t, theirs, ns)
					for _, o := range objs {
						o = o.DeepCopy()
						o.SetAPIVersion(thv1.GroupName + "/" + version)
						o.SetNamespace(ns)
						if checkExample(t, env, theirs, mapper, o) {
							applied[rel.version]++
						}
					}
				})
			}
		}
	}
	t.Logf("documents applied and read back whole, by example release (over both versions): %v", applied)
}

// checkExample applies o to both servers and checks what the test's
// comment promises; it reports whether hivekeeper's CRDs accepted it.
func checkExample(t *testing.T, env, theirs *framework.Env, mapper *restmapper.DeferredDiscoveryRESTMapper, o *unstructured.Unstructured) bool {
	t.Helper()
	ctx := context.Background()
	id := fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
	gvr := resourceOf(t, mapper, o)
	// ToolHive serves some kinds in one version only (MCPWebhookConfig):
	// its server gets the document in the version it serves.
	theirGVR, theirObj := gvr, o.DeepCopy()
	if v := servedBy(t, theirs, gvr.GroupResource()); !slices.Contains(v, gvr.Version) {
		theirGVR.Version = v[0]
		theirObj.SetAPIVersion(theirGVR.GroupVersion().String())
	}
	strict := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	theirStored, theirErr := theirs.Dynamic.Resource(theirGVR).Namespace(o.GetNamespace()).Create(ctx, theirObj.DeepCopy(), strict)
	_, ourErr := env.Dynamic.Resource(gvr).Namespace(o.GetNamespace()).Create(ctx, o.DeepCopy(), strict)
	pruned := false // ToolHive's server prunes fields hivekeeper's keeps
	if theirErr != nil && ourErr == nil {
		var err error
		theirStored, err = theirs.Dynamic.Resource(theirGVR).Namespace(o.GetNamespace()).Create(ctx, theirObj,
			metav1.CreateOptions{FieldValidation: metav1.FieldValidationIgnore})
		if err != nil {
			t.Errorf("%s: accepted, but ToolHive's CRD refuses it: %v", id, theirErr)
			return false
		}
		t.Logf("%s: kept fields ToolHive's CRD does not know: %v", id, theirErr)
		pruned = true
	}
	switch {
	case theirErr != nil && ourErr != nil:
		t.Logf("%s: refused by both, as ToolHive's CRD refuses it: %v", id, theirErr)
		return false
	case ourErr != nil:
		t.Errorf("%s: refused, but ToolHive's CRD accepts it: %v", id, ourErr)
		return false
	}
	for _, version := range servedBy(t, env, gvr.GroupResource()) {
		read := gvr.GroupResource().WithVersion(version)
		got, err := env.Dynamic.Resource(read).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: reading it back as %s: %v", id, version, err)
			continue
		}
		want := o.DeepCopy()
		want.SetAPIVersion(read.GroupVersion().String())
		if path, w, h, ok := subset(normalize(t, want.Object), normalize(t, got.Object), ""); !ok {
			t.Errorf("%s: read back as %s, field %s applied as %s, read back as %s", id, version, path, w, h)
		}
		if version != thv1.SchemeGroupVersion.Version {
			continue
		}
		same := equal
		if pruned {
			same = subset
		}
		if path, w, h, ok := same(normalize(t, theirStored.Object["spec"]), normalize(t, got.Object["spec"]), "spec"); !ok {
			t.Errorf("%s: stored with %s = %s, ToolHive's server stores %s", id, path, h, w)
		}
		typed, err := thscheme.Scheme.New(read.GroupVersion().WithKind(o.GetKind()))
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if b, err := json.Marshal(got.Object); err != nil || json.Unmarshal(b, typed) != nil {
			t.Errorf("%s: does not decode into hivekeeper's %T: %v", id, typed, json.Unmarshal(b, typed))
		}
	}
	return true
}

// exampleFiles are the YAML files under root, sorted.
func exampleFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples under %s: %v", root, err)
	}
	slices.Sort(files)
	return files
}

// restMapper maps the group's kinds to resources through discovery.
func restMapper(t *testing.T, env *framework.Env) *restmapper.DeferredDiscoveryRESTMapper {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
}

// resourceOf is the resource of o's kind, in o's version.
func resourceOf(t *testing.T, mapper *restmapper.DeferredDiscoveryRESTMapper, o *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", gvk, err)
	}
	return m.Resource
}

// servedBy lists the versions a server's CRD serves gr in.
func servedBy(t *testing.T, env *framework.Env, gr schema.GroupResource) []string {
	t.Helper()
	crd, err := env.Dynamic.Resource(framework.CRDResource).Get(context.Background(), gr.String(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("CRD %s: %v", gr, err)
	}
	return servedVersions(crd)
}

// servedVersions lists the versions a CRD serves.
func servedVersions(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range versions {
		if m, _ := v.(map[string]any); m["served"] == true {
			out = append(out, m["name"].(string))
		}
	}
	return out
}

// startServer starts an API server of its own with the CRDs of crdDir and
// stops it when the test ends.
func startServer(t *testing.T, crdDir string) *framework.Env {
	t.Helper()
	srv, err := framework.Start(framework.Options{CRDDir: crdDir})
	if err != nil {
		t.Fatalf("starting an API server with the CRDs of %s: %v", crdDir, err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	})
	env, err := framework.NewEnv(srv)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// createNamespace creates ns on a server of the test's own.
func createNamespace(t *testing.T, env *framework.Env, ns string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := env.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).
		Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
}

// toolhiveCRDs is where a ToolHive release keeps its CRDs as plain YAML.
func toolhiveCRDs(src string) string {
	return filepath.Join(src, "deploy", "charts", "operator-crds", "files", "crds")
}
