package toolhive

import (
	"reflect"
	"strings"
	"testing"
)

// TestDiff pins how two objects are compared: by path, down to the first
// place one side has nothing or another value, entries of named lists
// by name, documents in ConfigMap data as documents, and nothing
// normalised.
func TestDiff(t *testing.T) {
	dep := func(timeout float64, env ...any) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "x"}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "toolhive", "env": env, "livenessProbe": map[string]any{"timeoutSeconds": timeout}},
			}}}},
		}
	}
	for _, c := range []struct {
		name string
		a, b any
		want []string
	}{
		{"equal", dep(5), dep(5), nil},
		{"scalar", dep(5), dep(3), []string{`spec.template.spec.containers[name=toolhive].livenessProbe.timeoutSeconds: 5 → 3`}},
		{"entry by name", dep(5, map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "2"}),
			dep(5, map[string]any{"name": "B", "value": "2"}),
			[]string{`spec.template.spec.containers[name=toolhive].env[name=A]: {"name":"A","value":"1"} → (none)`}},
		{"order", dep(5, map[string]any{"name": "A"}, map[string]any{"name": "B"}), dep(5, map[string]any{"name": "B"}, map[string]any{"name": "A"}),
			[]string{`spec.template.spec.containers[name=toolhive].env (order): ["A","B"] → ["B","A"]`}},
		{"label key", map[string]any{"metadata": map[string]any{"labels": map[string]any{"a.b/c": "x"}}}, map[string]any{"metadata": map[string]any{}},
			[]string{`metadata.labels: {"a.b/c":"x"} → (none)`}},
		{"whole object", nil, map[string]any{"kind": "Role"}, []string{`(object): (none) → {"kind":"Role"}`}},
		{"document", map[string]any{"data": map[string]any{"runconfig.json": `{"a":{"b":1},"c":2}`}},
			map[string]any{"data": map[string]any{"runconfig.json": `{"a":{"b":2}}`}},
			[]string{`data["runconfig.json"].a.b: 1 → 2`, `data["runconfig.json"].c: 2 → (none)`}},
		{"encoding", map[string]any{"data": map[string]any{"runconfig.json": "{\n  \"a\": 1\n}"}},
			map[string]any{"data": map[string]any{"runconfig.json": `{"a":1}`}},
			[]string{`data["runconfig.json"] (encoding): "{\n  \"a\": 1\n}" → "{\"a\":1}"`}},
		{"not a document key", map[string]any{"data": map[string]any{"x": `{"a":1}`}}, map[string]any{"data": map[string]any{"x": `{"a":2}`}},
			[]string{`data.x: "{\"a\":1}" → "{\"a\":2}"`}},
		{"scalars whole", map[string]any{"args": []any{"a", "b"}}, map[string]any{"args": []any{"a"}}, []string{`args: ["a","b"] → ["a"]`}},
		{"index when unnamed", map[string]any{"l": []any{map[string]any{"k": 1}, map[string]any{"k": 2}}}, map[string]any{"l": []any{map[string]any{"k": 1}}},
			[]string{`l[1]: {"k":2} → (none)`}},
	} {
		var got []string
		for _, d := range Diff("o", c.a, c.b) {
			got = append(got, strings.TrimPrefix(d.String(), "o: "))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestShow: a long value is shown by its start and a digest of all of it,
// so an exception stays exact.
func TestShow(t *testing.T) {
	long := strings.Repeat("x", 200)
	s := Show(long)
	if !strings.HasPrefix(s, `"xxxx`) || !strings.Contains(s, "sha256:") || !strings.HasSuffix(s, "202 bytes)") {
		t.Errorf("Show(200 x) = %s", s)
	}
	if Show(long) == Show(long+"y") {
		t.Errorf("two long values show alike")
	}
}

// TestJudge: an exception matches its objects, path and values only, and
// an object it names that shows no such difference is stale.
func TestJudge(t *testing.T) {
	j := NewJudge()
	j.Add("pending", []Exception{{Cause: "probes", Path: "p", A: "5", B: "3", Objects: []string{"c Deployment/a", "c Deployment/b"}}})
	if _, _, ok := j.Match(Difference{"c Deployment/a", "p", "5", "3"}); !ok {
		t.Errorf("no match for a listed object")
	}
	for _, d := range []Difference{{"c Deployment/x", "p", "5", "3"}, {"c Deployment/a", "p", "5", "4"}, {"c Deployment/a", "q", "5", "3"}} {
		if _, _, ok := j.Match(d); ok {
			t.Errorf("%s matched", d)
		}
	}
	if stale := j.Stale(); len(stale) != 1 || !strings.Contains(stale[0], "c Deployment/b") {
		t.Errorf("stale = %q, want the one for Deployment/b", stale)
	}
}

func TestCaseNamespace(t *testing.T) {
	for name, want := range map[string]string{
		"table/01-stdio-minimal.yaml":                   "table-01-stdio-minimal",
		"examples/virtual-mcps/vmcp_codemode.yaml":      "examples-virtual-mcps-vmcp-codemode",
		"examples/" + strings.Repeat("long-", 20) + "x": "examples-long-long-long-long-long-long-long-long-long-",
	} {
		got := CaseNamespace(name)
		if len(got) > 63 || !strings.HasPrefix(got, want) {
			t.Errorf("CaseNamespace(%q) = %q, want a DNS label starting %q", name, got, want)
		}
	}
}
