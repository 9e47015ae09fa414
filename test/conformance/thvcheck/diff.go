package main

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/stacklok/toolhive/pkg/runner"
)

// Difference is one path whose decoded values differ. A nil A or B means
// that side lacks the path.
type Difference struct {
	Path string `json:"path"`
	A    any    `json:"a,omitempty"`
	B    any    `json:"b,omitempty"`
}

// DiffReport is what `thvcheck diff` prints.
type DiffReport struct {
	Compared    []string     `json:"compared"`
	Differences []Difference `json:"differences"`
	// Derived names the fields a side lacked that were filled in the way
	// the runner fills them when it starts, as "a:<field>" or "b:<field>".
	Derived []string `json:"derived"`
}

// diffRunConfigs decodes both files with decodeRunConfig (strict, nothing
// lost), completes each the way the runner does before it uses the config,
// and compares the re-encoded values, so both sides are read exactly as
// ToolHive's runner reads them and encoded one way.
//
// The one completion: the runner builds middleware_configs from the
// RunConfig's other fields (runner.PopulateMiddlewareConfigs) when the
// file has none, so a side without them gets the list the runner would
// build, and the comparison shows whether the two runners would install
// the same middleware with the same parameters.
func diffRunConfigs(fileA, fileB string) ([]byte, error) {
	report := DiffReport{Compared: []string{}, Differences: []Difference{}, Derived: []string{}}
	var sides [2]any
	for i, file := range []string{fileA, fileB} {
		rc, err := decodeRunConfig(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(rc.MiddlewareConfigs) == 0 {
			if err := runner.PopulateMiddlewareConfigs(rc); err != nil {
				return nil, fmt.Errorf("%s: deriving middleware_configs as the runner does: %w", file, err)
			}
			report.Derived = append(report.Derived, []string{"a", "b"}[i]+":middleware_configs")
		}
		out, err := json.Marshal(rc)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(out, &sides[i]); err != nil {
			return nil, err
		}
	}
	compare("", sides[0], sides[1], &report)
	sort.Strings(report.Compared)
	sort.Slice(report.Differences, func(i, j int) bool { return report.Differences[i].Path < report.Differences[j].Path })
	out, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// compare walks both values together. Objects recurse into the union of
// their keys and lists into the longer one's indexes, so every leaf of
// either side is compared and named; a leaf is a scalar, or a container
// whose other side is not a container of the same shape.
func compare(path string, a, b any, r *DiffReport) {
	a, b = canonical(a), canonical(b)
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if (aIsMap || a == nil) && (bIsMap || b == nil) && (aIsMap || bIsMap) {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			compare(join(path, k), am[k], bm[k], r)
		}
		return
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if (aIsList || a == nil) && (bIsList || b == nil) && (aIsList || bIsList) {
		for i := range max(len(al), len(bl)) {
			var x, y any
			if i < len(al) {
				x = al[i]
			}
			if i < len(bl) {
				y = bl[i]
			}
			compare(fmt.Sprintf("%s[%d]", path, i), x, y, r)
		}
		return
	}
	if a == nil && b == nil {
		return
	}
	r.Compared = append(r.Compared, path)
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	if string(x) != string(y) {
		r.Differences = append(r.Differences, Difference{Path: path, A: a, B: b})
	}
}

// canonical turns the encodings of "nothing" (null, {}, []) into nil.
func canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return nil
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
	}
	return v
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
