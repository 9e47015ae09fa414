package conformance_test

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

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// exampleOrder lists the kinds hivekeeper serves in the order a file's
// documents are created: groups and configs before the workloads that
// reference them.
var exampleOrder = []string{
	thv1.KindMCPGroup, thv1.KindMCPOIDCConfig, thv1.KindMCPExternalAuthConfig, thv1.KindMCPTelemetryConfig,
	thv1.KindMCPWebhookConfig, thv1.KindVirtualMCPCompositeToolDefinition, thv1.KindMCPServer, thv1.KindMCPRemoteProxy,
	thv1.KindMCPServerEntry, thv1.KindVirtualMCPServer,
}

// toolhiveRejects are example documents ToolHive's own CRD at the pinned
// release refuses (they lag behind it); hivekeeper's must refuse them too,
// rather than store a config no operator can act on.
var toolhiveRejects = map[string]string{
	"external-auth/mcpexternalauthconfig_basic.yaml: MCPExternalAuthConfig oauth-token-exchange": "tokenExchange keys in snake_case, no tokenUrl or audience",
	"external-auth/mcpexternalauthconfig_minimal.yaml: MCPExternalAuthConfig minimal-oauth":      "tokenExchange keys in snake_case, no tokenUrl",
	"external-auth/complete_example.yaml: MCPExternalAuthConfig keycloak-token-exchange":         "tokenExchange keys in snake_case, no tokenUrl or audience",
	// ToolHive's step schema has onError.retryCount, not maxRetries (and
	// no spec.failureMode, which hivekeeper's spec keeps as it keeps any
	// field of a later release).
	"virtual-mcps/composite_tool_complex.yaml: VirtualMCPCompositeToolDefinition multi-source-data-processor":  "onError.maxRetries is not in the step schema",
	"virtual-mcps/composite_tool_simple.yaml: VirtualMCPCompositeToolDefinition fetch-and-validate":            "onError.maxRetries is not in the step schema",
	"virtual-mcps/composite_tool_with_elicitations.yaml: VirtualMCPCompositeToolDefinition interactive-deploy": "onError.maxRetries is not in the step schema",
}

// TestToolHiveExamples applies every document of the pinned ToolHive
// release's examples/operator whose kind hivekeeper serves, read from the
// module cache at run time, as a ToolHive user would with kubectl: in a
// namespace of its own per file, with strict field validation, so a field
// the schema does not know is an error rather than a silent loss. Each
// object is then read back from the API server and must hold every field
// it was applied with, at every level, with the same value; a failure
// names the file, kind, name and the first differing field. hivekeeper
// runs meanwhile, but whether it converges the examples (many reference
// objects of kinds it does not serve) is not asserted here. No document is
// exempt: hivekeeper's own limits (name lengths) refuse none of them, and
// the few ToolHive's own CRD refuses (toolhiveRejects) hivekeeper's must
// refuse too.
func TestToolHiveExamples(t *testing.T) {
	requireToolHive(t)
	env := framework.Get(t)
	env.StartControllers(t, app.Options{Workers: 4})
	root := filepath.Join(toolhiveModule, "examples", "operator")
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
	applied := 0
	rejected := map[string]bool{}
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		objs, err := framework.ReadManifests(file)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		var served []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetAPIVersion() != thv1.SchemeGroupVersion.String() || !slices.Contains(exampleOrder, o.GetKind()) {
				t.Logf("%s: skipped %s %s %s: not a kind hivekeeper serves", rel, o.GetAPIVersion(), o.GetKind(), o.GetName())
				continue
			}
			served = append(served, o)
		}
		if len(served) == 0 {
			continue
		}
		slices.SortStableFunc(served, func(a, b *unstructured.Unstructured) int {
			return slices.Index(exampleOrder, a.GetKind()) - slices.Index(exampleOrder, b.GetKind())
		})
		t.Run(rel, func(t *testing.T) {
			ns := env.Namespace(t)
			for _, o := range served {
				id := fmt.Sprintf("%s: %s %s", rel, o.GetKind(), o.GetName())
				if why, ok := toolhiveRejects[id]; ok {
					rejected[id] = true
					if _, err := createStrict(env, ns, o); err == nil {
						t.Errorf("%s: created, but ToolHive's CRD refuses it (%s)", id, why)
					}
					continue
				}
				if _, err := createStrict(env, ns, o); err != nil {
					t.Errorf("%s: %v", id, err)
					continue
				}
				applied++
				gvr, _ := toolhive.Resource(o)
				got, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(context.Background(), o.GetName(), metav1.GetOptions{})
				if err != nil {
					t.Errorf("%s: reading it back: %v", id, err)
					continue
				}
				if path, want, have, ok := subset(normalize(t, o.Object), normalize(t, got.Object), ""); !ok {
					t.Errorf("%s: field %s applied as %s, read back as %s", id, path, want, have)
				}
			}
		})
	}
	for id := range toolhiveRejects {
		if !rejected[id] {
			t.Errorf("toolhiveRejects %s matched no document", id)
		}
	}
	t.Logf("%d example documents applied and read back, %d refused as ToolHive's CRD refuses them", applied, len(rejected))
}

// normalize gives a decoded object one encoding of numbers (JSON's), so
// an int64 read back equals the same value decoded from YAML.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// subset reports whether every field of applied is in stored with the
// same value: maps may gain keys (server defaults, status, metadata),
// lists must keep their length with each element a subset, and a null in
// applied means absent. When not, it returns the dotted path of the
// first difference and both values as JSON ("absent" when stored lacks it).
func subset(applied, stored any, path string) (where, want, have string, ok bool) {
	show := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch a := applied.(type) {
	case nil:
		return "", "", "", true
	case map[string]any:
		s, isMap := stored.(map[string]any)
		if !isMap {
			return path, show(a), show(stored), false
		}
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			sv, present := s[k]
			if !present && a[k] != nil {
				return p, show(a[k]), "absent", false
			}
			if where, want, have, ok := subset(a[k], sv, p); !ok {
				return where, want, have, false
			}
		}
		return "", "", "", true
	case []any:
		s, isList := stored.([]any)
		if !isList || len(s) != len(a) {
			return path, show(a), show(stored), false
		}
		for i := range a {
			if where, want, have, ok := subset(a[i], s[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return where, want, have, false
			}
		}
		return "", "", "", true
	default:
		if show(a) != show(stored) {
			return path, show(a), show(stored), false
		}
		return "", "", "", true
	}
}

// TestSubset pins what TestToolHiveExamples counts as a loss: a missing
// or changed value at any depth, named by its path; additions and nulls
// are not losses.
func TestSubset(t *testing.T) {
	applied := map[string]any{"spec": map[string]any{
		"image": "x", "port": 8080.0, "drop": nil,
		"list": []any{map[string]any{"name": "a", "value": "1"}},
	}}
	for _, c := range []struct {
		name, stored, where string
	}{
		{"whole, with additions", `{"spec":{"image":"x","port":8080,"extra":true,"list":[{"name":"a","value":"1","more":2}]},"status":{}}`, ""},
		{"pruned key", `{"spec":{"image":"x","port":8080,"list":[{"name":"a"}]}}`, "spec.list[0].value"},
		{"changed value", `{"spec":{"image":"y","port":8080,"list":[{"name":"a","value":"1"}]}}`, "spec.image"},
		{"shorter list", `{"spec":{"image":"x","port":8080,"list":[]}}`, "spec.list"},
		{"number as string", `{"spec":{"image":"x","port":"8080","list":[{"name":"a","value":"1"}]}}`, "spec.port"},
	} {
		var stored any
		if err := json.Unmarshal([]byte(c.stored), &stored); err != nil {
			t.Fatal(err)
		}
		where, _, _, ok := subset(normalize(t, applied), stored, "")
		if ok != (c.where == "") || where != c.where {
			t.Errorf("%s: subset says ok=%t at %q, want the difference at %q", c.name, ok, where, c.where)
		}
	}
}
