package toolhive

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// None stands for the side that has nothing at a path.
const None = "(none)"

// WholeObject is the path of a difference that is the whole object: one
// side has it, the other has not.
const WholeObject = "(object)"

// Difference is one path where two versions of an object differ: A is
// ToolHive's operator's (or before a switch), B hivekeeper's (or after).
type Difference struct {
	Object string // the caller's scope and the object's Key
	Path   string
	A, B   string // Show of each side's value
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: %s: %s → %s", d.Object, d.Path, d.A, d.B)
}

// Diff compares two versions of an object, as Clean returns them (nil for
// a side without the object), and returns every path where they differ,
// sorted: objects are walked key by key and lists entry by entry (by
// name when every entry of both has a distinct one, as containers, env,
// volumes and ports do, else by index; a list of scalars, such as args,
// is one value) down to the first path where one
// side has nothing or a value of another shape, or both have different
// scalars. A string under data whose key ends in .json, .yaml or .yml (a
// RunConfig, a vMCP config) is walked as the document it holds; when the
// documents are equal and the strings are not, the difference is the
// encoding and is reported at the key. Equal means equal bytes: nothing is
// normalised.
func Diff(object string, a, b any) []Difference {
	var out []Difference
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return []Difference{{object, WholeObject, None, Show(b)}}
	case b == nil:
		return []Difference{{object, WholeObject, Show(a), None}}
	}
	walk(object, "", a, b, &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func walk(object, path string, a, b any, out *[]Difference) {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			for _, k := range unionKeys(x, y) {
				av, aok := x[k]
				bv, bok := y[k]
				switch {
				case aok && bok:
					walk(object, join(path, k), av, bv, out)
				case aok:
					*out = append(*out, Difference{object, join(path, k), Show(av), None})
				default:
					*out = append(*out, Difference{object, join(path, k), None, Show(bv)})
				}
			}
			return
		}
	case []any:
		if y, ok := b.([]any); ok {
			walkList(object, path, x, y, out)
			return
		}
	case string:
		if y, ok := b.(string); ok && x != y && isDocumentKey(path) {
			da, aok := Document(x)
			db, bok := Document(y)
			if aok && bok {
				n := len(*out)
				walk(object, path, da, db, out)
				if len(*out) == n {
					*out = append(*out, Difference{object, path + " (encoding)", Show(x), Show(y)})
				}
				return
			}
		}
	}
	if encode(a) != encode(b) {
		*out = append(*out, Difference{object, path, Show(a), Show(b)})
	}
}

// walkList pairs list entries by name when every entry of both lists has
// a distinct string name, else by index; a list of scalars on both sides
// is one value.
func walkList(object, path string, a, b []any, out *[]Difference) {
	an, aok := byName(a)
	bn, bok := byName(b)
	if aok && bok {
		for _, k := range unionKeys(an, bn) {
			p := fmt.Sprintf("%s[name=%s]", path, k)
			av, ain := an[k]
			bv, bin := bn[k]
			switch {
			case ain && bin:
				walk(object, p, av, bv, out)
			case ain:
				*out = append(*out, Difference{object, p, Show(av), None})
			default:
				*out = append(*out, Difference{object, p, None, Show(bv)})
			}
		}
		// The same entries in another order are a difference of bytes.
		if len(an) == len(bn) && len(unionKeys(an, bn)) == len(an) && !sameOrder(a, b) {
			*out = append(*out, Difference{object, path + " (order)", Show(names(a)), Show(names(b))})
		}
		return
	}
	if scalars(a) && scalars(b) {
		// Arguments and the like read as a whole.
		if encode(a) != encode(b) {
			*out = append(*out, Difference{object, path, Show(a), Show(b)})
		}
		return
	}
	for i := range max(len(a), len(b)) {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case i < len(a) && i < len(b):
			walk(object, p, a[i], b[i], out)
		case i < len(a):
			*out = append(*out, Difference{object, p, Show(a[i]), None})
		default:
			*out = append(*out, Difference{object, p, None, Show(b[i])})
		}
	}
}

func scalars(list []any) bool {
	for _, e := range list {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func byName(list []any) (map[string]any, bool) {
	if len(list) == 0 {
		return nil, false
	}
	m := map[string]any{}
	for _, e := range list {
		em, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		n, ok := em["name"].(string)
		if !ok || n == "" {
			return nil, false
		}
		if _, dup := m[n]; dup {
			return nil, false
		}
		m[n] = e
	}
	return m, true
}

func names(list []any) []any {
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = e.(map[string]any)["name"]
	}
	return out
}

// sameOrder reports whether two lists of the same named entries list
// them in the same order.
func sameOrder(a, b []any) bool {
	for i := range a {
		if a[i].(map[string]any)["name"] != b[i].(map[string]any)["name"] {
			return false
		}
	}
	return true
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// join appends an object key to a path: .key, or ["key"] when the key has
// characters a path uses (labels, annotations, data keys).
func join(path, key string) string {
	if !plainKey.MatchString(key) {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

var documentKey = regexp.MustCompile(`^data\["[^"]+\.(json|ya?ml)"\]$`)

func isDocumentKey(path string) bool { return documentKey.MatchString(path) }

// Document decodes a JSON or YAML document holding an object.
func Document(s string) (any, bool) {
	var v map[string]any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil || v == nil {
		return nil, false
	}
	return v, true
}

// encode is the compact JSON of v, with <, > and & as they are.
func encode(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// maxShown is the longest value shown whole; a longer one is shown by its
// start and a digest of all of it, so an entry stays exact and readable.
const maxShown = 100

// Show renders a value for a Difference: its compact JSON, or for a long
// one its first characters and the SHA-256 of all of it.
func Show(v any) string {
	s := encode(v)
	if len(s) <= maxShown {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	head := s[:60]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	return fmt.Sprintf("%s… (sha256:%x, %d bytes)", head, sum[:6], len(s))
}
