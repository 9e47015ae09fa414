package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
)

// FieldManager is the server-side-apply manager of everything the framework
// applies, distinct from the controller's "hivekeeper" so tests can tell the
// two writers apart in managedFields.
const FieldManager = "hivekeeper-framework"

// CRDResource is the CustomResourceDefinition resource.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ReadManifests decodes every object in the given YAML or JSON files;
// a folder contributes its *.yaml, *.yml and *.json files in name order.
// Multi-document files and empty documents are fine.
func ReadManifests(paths ...string) ([]*unstructured.Unstructured, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	var objs []*unstructured.Unstructured
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				f.Close()
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.GetKind() == "" || u.GetAPIVersion() == "" {
				f.Close()
				return nil, fmt.Errorf("%s: a document lacks apiVersion or kind", file)
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

// InstallCRDs applies every CustomResourceDefinition in dir and waits until
// each is Established and its resource answers a list: Established alone can
// precede the moment the handler serves requests by a few milliseconds. It
// also warms up each resource's write path, which costs about two seconds
// on first use; without that, the first create in every test package would
// be slow and skew timing-sensitive tests.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dir string) error {
	objs, err := ReadManifests(dir)
	if err != nil {
		return err
	}
	// The warm-up requests touch every served version, deprecated ones
	// included (ToolHive's CRDs still serve v1alpha1): their warnings would
	// only be noise on the test's stderr.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("%s %s in %s is not a CustomResourceDefinition", obj.GetKind(), obj.GetName(), dir)
		}
		if _, err := dyn.Resource(CRDResource).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("applying CRD %s: %w", obj.GetName(), err)
		}
	}
	// In parallel: most of the wait is the API server's one-off work per
	// CRD, which it does concurrently.
	g, gctx := errgroup.WithContext(ctx)
	for _, obj := range objs {
		g.Go(func() error { return waitCRDServed(gctx, dyn, obj.GetName()) })
	}
	return g.Wait()
}

func waitCRDServed(ctx context.Context, dyn dynamic.Interface, name string) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd, err := dyn.Resource(CRDResource).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		if !CRDEstablished(crd) {
			last = fmt.Errorf("CRD %s not Established yet", name)
			return false, nil
		}
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if served, _ := vm["served"].(bool); !served {
				continue
			}
			version, _ := vm["name"].(string)
			gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
			if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				last = fmt.Errorf("listing %s: %w", gvr, err)
				return false, nil
			}
			warmUpCreate(ctx, dyn, crd, gvr)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s: %w (last: %v)", name, err, last)
	}
	return nil
}

// warmUpCreate sends a dry-run create of an object without a spec. The
// server does its first-use setup for the resource's write path, then
// rejects the object (or would store nothing, being a dry run); either
// answer means the setup is done, so the result is ignored.
func warmUpCreate(ctx context.Context, dyn dynamic.Interface, crd *unstructured.Unstructured, gvr schema.GroupVersionResource) {
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{"generateName": "warm-up-"},
	}}
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if scope == "Namespaced" {
		ri = dyn.Resource(gvr).Namespace(metav1.NamespaceDefault)
	}
	_, _ = ri.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// CRDEstablished reports whether a CRD (as unstructured) has the condition
// Established=True.
func CRDEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	return slices.ContainsFunc(conds, func(c any) bool {
		cm, _ := c.(map[string]any)
		return cm["type"] == "Established" && cm["status"] == "True"
	})
}

// ApplyManifests server-side-applies every object in paths (files or
// folders, see ReadManifests). Namespaced objects without a namespace go to
// namespace. Kinds unknown to discovery are retried until ctx ends, because
// a CRD applied a moment ago may not be in discovery yet. It returns the
// objects as the API server stored them.
func ApplyManifests(ctx context.Context, cfg *rest.Config, namespace string, paths ...string) ([]*unstructured.Unstructured, error) {
	objs, err := ReadManifests(paths...)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		var mapping *meta.RESTMapping
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) {
				mapper.Reset()
				return false, nil
			}
			mapping = m
			return err == nil, err
		})
		if err != nil {
			return out, fmt.Errorf("mapping %s: %w", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(namespace)
			}
			ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		}
		applied, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil {
			return out, fmt.Errorf("applying %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		out = append(out, applied)
	}
	return out, nil
}

// ServedKinds is how many ToolHive kinds hivekeeper serves: one CRD each,
// in config/crd and in the chart. It is read from the generated scheme, so
// adding a kind needs no test edit.
func ServedKinds() int {
	n := 0
	pkg := reflect.TypeFor[thv1.MCPServer]().PkgPath()
	for gvk, typ := range thscheme.Scheme.AllKnownTypes() {
		// The group also carries meta types (ListOptions, WatchEvent, ...).
		if gvk.Group == thv1.GroupName && typ.PkgPath() == pkg && !strings.HasSuffix(gvk.Kind, "List") {
			n++
		}
	}
	return n
}
