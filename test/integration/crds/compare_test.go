package crds

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// equal reports whether a and b are the same value, and where they first
// differ when not: each must hold every field of the other.
func equal(a, b any, path string) (where, inA, inB string, ok bool) {
	if where, inA, inB, ok := subset(a, b, path); !ok {
		return where, inA, inB, false
	}
	where, inB, inA, ok = subset(b, a, path)
	return where, inA, inB, ok
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
