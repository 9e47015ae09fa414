package crds

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// minimalSpecs is one valid spec per kind, accepted by ToolHive's CRDs of
// both releases and by hivekeeper's: the objects that stand for a user's
// while CRDs are swapped under them.
var minimalSpecs = map[string]map[string]any{
	thv1.KindMCPServer:             {"image": "ghcr.io/example/mcp:1"},
	thv1.KindMCPRemoteProxy:        {"remoteUrl": "https://mcp.example.com/mcp"},
	thv1.KindVirtualMCPServer:      {"groupRef": map[string]any{"name": "g"}, "incomingAuth": map[string]any{"type": "anonymous"}},
	thv1.KindMCPGroup:              {"description": "a group"},
	thv1.KindMCPOIDCConfig:         {"type": "kubernetesServiceAccount", "kubernetesServiceAccount": map[string]any{}},
	thv1.KindMCPToolConfig:         {"toolsFilter": []any{"fetch"}},
	thv1.KindMCPAuthzConfig:        {"type": "cedarv1", "config": map[string]any{"policies": []any{"permit(principal, action, resource);"}}},
	thv1.KindMCPExternalAuthConfig: {"type": "unauthenticated"},
	thv1.KindMCPTelemetryConfig:    {"prometheus": map[string]any{"enabled": true}},
	thv1.KindMCPWebhookConfig:      {"validating": []any{map[string]any{"name": "v", "url": "https://hook.example.com/validate"}}},
	thv1.KindMCPServerEntry: {"groupRef": map[string]any{"name": "g"}, "remoteUrl": "https://mcp.example.com/mcp",
		"transport": "streamable-http"},
	thv1.KindVirtualMCPCompositeToolDefinition: {"name": "twice", "steps": []any{map[string]any{"id": "s", "tool": "b.fetch"}}},
	thv1.KindEmbeddingServer:                   {"model": "BAAI/bge-small-en-v1.5"},
	thv1.KindMCPRegistry:                       {"configYAML": "registryName: example\n"},
}

// crdSet is a folder of CRDs under a name for messages.
type crdSet struct{ name, dir string }

// TestCRDInstallAndRevert swaps CRDs on a real API server holding objects,
// as a user switching from ToolHive's operator to hivekeeper and back
// would, in the four states a cluster can be in when hivekeeper's CRDs
// are installed: fresh; with ToolHive's CRDs of the runtime-oracle release
// (v1beta1 stored); with those of the API release; and with a
// status.storedVersions that still lists v1alpha1 (a cluster that began
// before ToolHive stored v1beta1 and never migrated). In each, installing
// hivekeeper's CRDs succeeds, then applying ToolHive's CRDs of either
// release back succeeds, and after every step every object written so far
// (in either version, through whichever CRDs were installed) reads back in
// every version the installed CRDs serve. hivekeeper's CRDs never add to
// storedVersions a version ToolHive's CRDs do not serve.
func TestCRDInstallAndRevert(t *testing.T) {
	apiVersion, apiSrc := toolhiveSource(t, framework.ToolHiveAPIRelease)
	runtimeVersion, runtimeSrc := toolhiveSource(t, framework.ToolHiveRuntimeRelease)
	framework.Get(t) // skips without a test API server
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ours := crdSet{"hivekeeper's", filepath.Join(root, "config", "crd")}
	runtimeCRDs := crdSet{"ToolHive " + runtimeVersion + "'s", toolhiveCRDs(runtimeSrc)}
	apiCRDs := crdSet{"ToolHive " + apiVersion + "'s", toolhiveCRDs(apiSrc)}
	// Before ToolHive stored v1beta1: its CRDs with v1alpha1 stored.
	alphaStored := crdSet{"ToolHive " + runtimeVersion + "'s storing v1alpha1", alphaStoredCRDs(t, runtimeCRDs.dir)}

	for _, tc := range []struct {
		name   string
		before []crdSet // installed, with objects written, before hivekeeper's
	}{
		{"fresh", nil},
		{"runtime release", []crdSet{runtimeCRDs}},
		{"API release", []crdSet{apiCRDs}},
		{"storedVersions v1alpha1", []crdSet{alphaStored, runtimeCRDs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{t: t, env: startServer(t, "")}
			for _, set := range tc.before {
				c.install(set)
				c.writeAll(set.name)
			}
			if tc.name == "storedVersions v1alpha1" {
				c.wantStored(thv1.KindMCPServer, "v1alpha1")
			}
			c.install(ours)
			c.writeAll(ours.name)
			c.checkStoredServedBy(runtimeCRDs, apiCRDs)
			for _, back := range []crdSet{runtimeCRDs, apiCRDs, ours} {
				c.install(back)
			}
		})
	}
}

// cluster is one API server and the objects written to it so far.
type cluster struct {
	t       *testing.T
	env     *framework.Env
	plurals map[string]string // kind -> resource
	objects []*unstructured.Unstructured
}

// install applies a set of CRDs over whatever is installed, then reads
// every object back.
func (c *cluster) install(set crdSet) {
	c.t.Helper()
	if err := framework.InstallCRDs(context.Background(), c.env.Config, set.dir); err != nil {
		c.t.Fatalf("installing %s CRDs: %v", set.name, err)
	}
	c.readAll(set.name)
}

// writeAll creates one object of every kind in every version the
// installed CRDs serve, in the namespace default.
func (c *cluster) writeAll(by string) {
	c.t.Helper()
	for _, kind := range slices.Sorted(maps.Keys(minimalSpecs)) {
		gr := c.resource(kind)
		for _, version := range servedBy(c.t, c.env, gr) {
			name := fmt.Sprintf("%s-%d", strings.ToLower(version), len(c.objects))
			o := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": thv1.GroupName + "/" + version, "kind": kind,
				"metadata": map[string]any{"name": name, "namespace": metav1.NamespaceDefault},
				"spec":     minimalSpecs[kind],
			}}
			if _, err := c.env.Dynamic.Resource(gr.WithVersion(version)).Namespace(metav1.NamespaceDefault).
				Create(context.Background(), o.DeepCopy(), metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
				c.t.Errorf("with %s CRDs, creating %s %s as %s: %v", by, kind, name, version, err)
				continue
			}
			c.objects = append(c.objects, o)
		}
	}
}

// readAll reads every object written so far in every version the
// installed CRDs serve, and checks its spec.
func (c *cluster) readAll(by string) {
	c.t.Helper()
	for _, o := range c.objects {
		gr := c.resource(o.GetKind())
		for _, version := range servedBy(c.t, c.env, gr) {
			got, err := c.env.Dynamic.Resource(gr.WithVersion(version)).Namespace(o.GetNamespace()).
				Get(context.Background(), o.GetName(), metav1.GetOptions{})
			if err != nil {
				c.t.Errorf("with %s CRDs, reading %s %s as %s: %v", by, o.GetKind(), o.GetName(), version, err)
				continue
			}
			if path, w, h, ok := subset(normalize(c.t, o.Object["spec"]), normalize(c.t, got.Object["spec"]), "spec"); !ok {
				c.t.Errorf("with %s CRDs, %s %s read as %s: %s written as %s, read as %s", by, o.GetKind(), o.GetName(), version, path, w, h)
			}
		}
	}
}

// checkStoredServedBy fails when a CRD's status.storedVersions lists a
// version one of the sets does not serve: that set could not be applied
// back.
func (c *cluster) checkStoredServedBy(sets ...crdSet) {
	c.t.Helper()
	for _, set := range sets {
		crds, err := framework.ReadManifests(set.dir)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, crd := range crds {
			for _, stored := range c.storedVersions(crd.GetName()) {
				if !slices.Contains(servedVersions(crd), stored) {
					c.t.Errorf("%s stores %s, which %s CRD does not serve", crd.GetName(), stored, set.name)
				}
			}
		}
	}
}

// wantStored fails unless the kind's storedVersions list version.
func (c *cluster) wantStored(kind, version string) {
	c.t.Helper()
	if got := c.storedVersions(c.resource(kind).String()); !slices.Contains(got, version) {
		c.t.Fatalf("%s storedVersions %v, want %s listed", kind, got, version)
	}
}

func (c *cluster) storedVersions(crdName string) []string {
	c.t.Helper()
	crd, err := c.env.Dynamic.Resource(framework.CRDResource).Get(context.Background(), crdName, metav1.GetOptions{})
	if err != nil {
		c.t.Fatalf("CRD %s: %v", crdName, err)
	}
	got, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return got
}

// resource is a kind's group and resource, from the installed CRDs.
func (c *cluster) resource(kind string) schema.GroupResource {
	c.t.Helper()
	if c.plurals == nil {
		c.plurals = map[string]string{}
		list, err := c.env.Dynamic.Resource(framework.CRDResource).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		for _, crd := range list.Items {
			k, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			p, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
			c.plurals[k] = p
		}
	}
	if c.plurals[kind] == "" {
		c.t.Fatalf("no CRD installed for %s", kind)
	}
	return schema.GroupResource{Group: thv1.GroupName, Resource: c.plurals[kind]}
}

// alphaStoredCRDs writes dir's CRDs to a temporary folder with v1alpha1
// as the stored version, as ToolHive's were before they stored v1beta1.
func alphaStoredCRDs(t *testing.T, dir string) string {
	t.Helper()
	crds, err := framework.ReadManifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, crd := range crds {
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m := v.(map[string]any)
			m["storage"] = m["name"] == "v1alpha1"
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			t.Fatal(err)
		}
		b, err := yaml.Marshal(crd.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, crd.GetName()+".yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
