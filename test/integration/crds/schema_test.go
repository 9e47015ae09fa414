package crds

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// extraVersions are versions hivekeeper serves that ToolHive's CRD of the
// kind does not: served, never stored (so ToolHive's CRD can be applied
// back), with the same schema.
var extraVersions = map[string][]string{
	// ToolHive serves MCPWebhookConfig as v1alpha1 only; hivekeeper's
	// clients read v1beta1.
	"MCPWebhookConfig": {"v1beta1"},
}

// TestCRDsCoverToolHive reads ToolHive's CRD YAML at the API release and
// hivekeeper's config/crd, and fails, naming the kind, version and schema
// path, on anything of ToolHive's that hivekeeper's CRDs lack or serve
// differently: a kind, its names and short names, a CRD label, a version
// (served, stored, deprecated and its warning), a printer column, a schema
// path (a property, list item or map value at any depth) or its type, an
// enum value, a default, a list type and its keys, preserved unknown
// fields, or a CEL rule at its path. hivekeeper may add to ToolHive's
// schema (fields ToolHive has not got, stricter formats, preserved unknown
// fields), never lose from it. The versions of one hivekeeper CRD have one
// schema.
func TestCRDsCoverToolHive(t *testing.T) {
	version, src := toolhiveSource(t, framework.ToolHiveAPIRelease)
	theirs := readCRDs(t, filepath.Join(src, "deploy", "charts", "operator-crds", "files", "crds"))
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ours := readCRDs(t, filepath.Join(root, "config", "crd"))
	paths, rules := 0, 0
	for name, th := range theirs {
		hk, ok := ours[name]
		if !ok {
			t.Errorf("%s: ToolHive %s has this CRD, hivekeeper has not", name, version)
			continue
		}
		kind := th.Spec.Names.Kind
		for k, v := range th.Labels {
			if hk.Labels[k] != v {
				t.Errorf("%s: CRD label %s=%q, ToolHive's %q", kind, k, hk.Labels[k], v)
			}
		}
		if !equality.Semantic.DeepEqual(th.Spec.Names, hk.Spec.Names) || th.Spec.Scope != hk.Spec.Scope {
			t.Errorf("%s: names %+v scope %s, ToolHive's %+v %s", kind, hk.Spec.Names, hk.Spec.Scope, th.Spec.Names, th.Spec.Scope)
		}
		for _, v := range hk.Spec.Versions {
			if !slices.ContainsFunc(th.Spec.Versions, func(w apiextensionsv1.CustomResourceDefinitionVersion) bool { return w.Name == v.Name }) &&
				(!slices.Contains(extraVersions[kind], v.Name) || !v.Served || v.Storage) {
				t.Errorf("%s %s: ToolHive does not serve this version; hivekeeper may serve it only if listed in extraVersions and never store it", kind, v.Name)
			}
			if !equality.Semantic.DeepEqual(v.Schema, hk.Spec.Versions[0].Schema) {
				t.Errorf("%s: versions %s and %s have different schemas", kind, hk.Spec.Versions[0].Name, v.Name)
			}
		}
		for _, tv := range th.Spec.Versions {
			i := slices.IndexFunc(hk.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == tv.Name })
			if i < 0 {
				t.Errorf("%s: ToolHive serves %s, hivekeeper does not", kind, tv.Name)
				continue
			}
			hv := hk.Spec.Versions[i]
			id := kind + " " + tv.Name
			if hv.Served != tv.Served || hv.Storage != tv.Storage || hv.Deprecated != tv.Deprecated ||
				!equality.Semantic.DeepEqual(hv.DeprecationWarning, tv.DeprecationWarning) {
				t.Errorf("%s: served %t storage %t deprecated %t (%s), ToolHive's %t %t %t (%s)", id,
					hv.Served, hv.Storage, hv.Deprecated, show(hv.DeprecationWarning), tv.Served, tv.Storage, tv.Deprecated, show(tv.DeprecationWarning))
			}
			if got, want := columns(hv.AdditionalPrinterColumns), columns(tv.AdditionalPrinterColumns); !slices.Equal(got, want) {
				t.Errorf("%s: printer columns %q, ToolHive's %q", id, got, want)
			}
			if !equality.Semantic.DeepEqual(hv.Subresources, tv.Subresources) {
				t.Errorf("%s: subresources %+v, ToolHive's %+v", id, hv.Subresources, tv.Subresources)
			}
			p, r := coverSchema(t, id, tv.Schema.OpenAPIV3Schema, hv.Schema.OpenAPIV3Schema, "", false)
			paths, rules = paths+p, rules+r
		}
	}
	t.Logf("ToolHive %s: %d CRDs, %d schema paths and %d CEL rules (over all versions) found in hivekeeper's CRDs", version, len(theirs), paths, rules)
}

// coverSchema checks that ours has every path, type, enum value, default
// and CEL rule of theirs under path, and returns how many paths and rules
// it compared. required says ours requires the field, so that a default
// of theirs is never used by ours.
func coverSchema(t *testing.T, id string, theirs, ours *apiextensionsv1.JSONSchemaProps, path string, required bool) (paths, rules int) {
	t.Helper()
	at := path
	if at == "" {
		at = "."
	}
	if ours == nil {
		t.Errorf("%s: %s is not in hivekeeper's schema", id, at)
		return 0, 0
	}
	paths++
	if theirs.Type != ours.Type || theirs.Format != ours.Format && theirs.Format != "" {
		t.Errorf("%s: %s has type %q format %q, ToolHive's %q %q", id, at, ours.Type, ours.Format, theirs.Type, theirs.Format)
	}
	for _, e := range theirs.Enum {
		if !slices.ContainsFunc(ours.Enum, func(o apiextensionsv1.JSON) bool { return string(o.Raw) == string(e.Raw) }) {
			t.Errorf("%s: %s does not allow ToolHive's value %s", id, at, e.Raw)
		}
	}
	if theirs.Default != nil && !(ours.Default == nil && required) && (ours.Default == nil || string(ours.Default.Raw) != string(theirs.Default.Raw)) {
		t.Errorf("%s: %s defaults to %s, ToolHive's to %s", id, at, show(ours.Default), theirs.Default.Raw)
	}
	if theirs.XListType != nil && (ours.XListType == nil || *ours.XListType != *theirs.XListType) ||
		!slices.Equal(theirs.XListMapKeys, ours.XListMapKeys) {
		t.Errorf("%s: %s is a list of type %s keyed by %q, ToolHive's %s keyed by %q", id, at,
			show(ours.XListType), ours.XListMapKeys, show(theirs.XListType), theirs.XListMapKeys)
	}
	if theirs.XPreserveUnknownFields != nil && *theirs.XPreserveUnknownFields &&
		(ours.XPreserveUnknownFields == nil || !*ours.XPreserveUnknownFields) {
		t.Errorf("%s: %s prunes unknown fields, ToolHive's keeps them", id, at)
	}
	for _, r := range theirs.XValidations {
		rules++
		if !slices.ContainsFunc(ours.XValidations, func(o apiextensionsv1.ValidationRule) bool { return o.Rule == r.Rule }) {
			t.Errorf("%s: %s lacks ToolHive's CEL rule %q", id, at, r.Rule)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(theirs.Properties)) {
		th := theirs.Properties[name]
		var o *apiextensionsv1.JSONSchemaProps
		if p, ok := ours.Properties[name]; ok {
			o = &p
		}
		p, r := coverSchema(t, id, &th, o, path+"."+name, slices.Contains(ours.Required, name))
		paths, rules = paths+p, rules+r
	}
	if theirs.Items != nil && theirs.Items.Schema != nil {
		var o *apiextensionsv1.JSONSchemaProps
		if ours.Items != nil {
			o = ours.Items.Schema
		}
		p, r := coverSchema(t, id, theirs.Items.Schema, o, path+"[]", false)
		paths, rules = paths+p, rules+r
	}
	if a := theirs.AdditionalProperties; a != nil && a.Schema != nil {
		var o *apiextensionsv1.JSONSchemaProps
		if ours.AdditionalProperties != nil {
			o = ours.AdditionalProperties.Schema
		}
		p, r := coverSchema(t, id, a.Schema, o, path+"{}", false)
		paths, rules = paths+p, rules+r
	}
	return paths, rules
}

// readCRDs reads every CRD in dir, by name.
func readCRDs(t *testing.T, dir string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[crd.Name] = crd
	}
	return out
}

// columns renders printer columns as name type jsonPath (descriptions are
// each project's own words).
func columns(cs []apiextensionsv1.CustomResourceColumnDefinition) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s %s %s priority=%d", c.Name, c.Type, c.JSONPath, c.Priority)
	}
	return out
}

// show renders an optional value for a message.
func show(v any) string {
	switch v := v.(type) {
	case *string:
		if v == nil {
			return "none"
		}
		return *v
	case *apiextensionsv1.JSON:
		if v == nil {
			return "nothing"
		}
		return string(v.Raw)
	}
	return strings.TrimSpace(fmt.Sprint(v))
}
