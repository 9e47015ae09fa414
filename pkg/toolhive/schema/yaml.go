package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	yaml "go.yaml.in/yaml/v3"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// MarshalYAML encodes v as ToolHive's operator encodes the same content
// with its YAML library (go.yaml.in/yaml/v3, as of ToolHive v0.63.0;
// gopkg.in/yaml.v3 before): struct fields in declaration order, map keys
// sorted, four-space indentation, a field left out under omitempty
// exactly when that library calls it zero (an empty struct too).
//
// hivekeeper's types carry JSON tags only, named and ordered as
// ToolHive's YAML tags are, so v is first mirrored into types built at
// run time whose YAML tags are its JSON tags, then encoded by the library
// itself: every quoting and layout decision is the library's. A value
// whose type encodes itself as JSON (a Duration, a RawExtension) is
// written as what that JSON decodes to, numbers as float64, the way
// ToolHive's own types hand such values to the encoder; an empty one
// (nil, or an empty object or list) is left out. A spec duration
// (thv1.VMCPDuration) is written as Go prints it, as Duration is.
func MarshalYAML(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	src := reflect.ValueOf(v)
	dst := reflect.New(mirrorType(src.Type())).Elem()
	if err := mirrorInto(dst, src); err != nil {
		return "", err
	}
	out, err := yaml.Marshal(dst.Interface())
	return string(out), err
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	anyType       = reflect.TypeFor[any]()
	specDuration  = reflect.TypeFor[thv1.VMCPDuration]()
	mirrors       sync.Map // reflect.Type → reflect.Type
)

// selfEncoding reports whether values of t are written as their JSON.
func selfEncoding(t reflect.Type) bool {
	return t == specDuration || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)
}

// mirrorType is the type a value of t is mirrored into.
func mirrorType(t reflect.Type) reflect.Type {
	if m, ok := mirrors.Load(t); ok {
		return m.(reflect.Type)
	}
	m := mirrorTypeIn(t, map[reflect.Type]bool{})
	mirrors.Store(t, m)
	return m
}

// mirrorTypeIn is mirrorType below the struct types being mirrored
// (visiting): a type that refers to itself (a step's nested step) is
// mirrored as any where it recurs, which the encoder writes the same.
func mirrorTypeIn(t reflect.Type, visiting map[reflect.Type]bool) reflect.Type {
	switch {
	case selfEncoding(t), visiting[t]:
		return anyType
	case t.Kind() == reflect.Pointer:
		if e := mirrorTypeIn(t.Elem(), visiting); e != anyType {
			return reflect.PointerTo(e)
		}
		return anyType
	case t.Kind() == reflect.Slice:
		return reflect.SliceOf(mirrorTypeIn(t.Elem(), visiting))
	case t.Kind() == reflect.Map:
		return reflect.MapOf(t.Key(), mirrorTypeIn(t.Elem(), visiting))
	case t.Kind() == reflect.Struct:
		visiting[t] = true
		defer delete(visiting, t)
		var fields []reflect.StructField
		for _, f := range visibleFields(t) {
			fields = append(fields, reflect.StructField{Name: f.field.Name, Type: mirrorTypeIn(f.field.Type, visiting), Tag: f.tag})
		}
		return reflect.StructOf(fields)
	}
	return t
}

// yamlField is a struct field that JSON encodes, with its YAML tag.
type yamlField struct {
	field reflect.StructField
	tag   reflect.StructTag
}

// visibleFields are t's exported fields JSON encodes, each tagged for
// YAML with its JSON name and omitempty; an embedded struct without a
// name is inlined, as JSON inlines it.
func visibleFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		yt := name
		if yt == "" {
			yt = f.Name
		}
		if strings.Contains(","+opts+",", ",omitempty,") {
			yt += ",omitempty"
		}
		if f.Anonymous && name == "" {
			yt = ",inline"
		}
		f.Anonymous = false
		out = append(out, yamlField{field: f, tag: reflect.StructTag(`yaml:"` + yt + `"`)})
	}
	return out
}

// mirrorInto copies v into dst, a settable value of v's mirror type (or
// any); nothing is set for nothing to write.
func mirrorInto(dst, v reflect.Value) error {
	t := v.Type()
	switch {
	case t == specDuration:
		d, err := ParseDuration(v.String())
		if err != nil {
			return err
		}
		if d != 0 {
			dst.Set(reflect.ValueOf(d.String()))
		}
		return nil
	case selfEncoding(t):
		if v.IsZero() {
			return nil
		}
		raw, err := json.Marshal(v.Interface())
		if err != nil {
			return err
		}
		var decoded any
		if err := json.Unmarshal(raw, &decoded); err != nil {
			return fmt.Errorf("decoding the JSON of %s: %w", t, err)
		}
		if !empty(decoded) {
			dst.Set(reflect.ValueOf(decoded))
		}
		return nil
	case dst.Kind() == reflect.Interface && t.Kind() != reflect.Interface:
		// A recurring type: mirrored on its own, and left unset where
		// the encoder would leave the original out.
		if (t.Kind() == reflect.Pointer || t.Kind() == reflect.Map || t.Kind() == reflect.Slice) && (v.IsNil() || t.Kind() != reflect.Pointer && v.Len() == 0) {
			return nil
		}
		m := reflect.New(mirrorType(t)).Elem()
		if err := mirrorInto(m, v); err != nil {
			return err
		}
		dst.Set(m)
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		dst.Set(reflect.New(dst.Type().Elem()))
		return mirrorInto(dst.Elem(), v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		dst.Set(reflect.MakeSlice(dst.Type(), v.Len(), v.Len()))
		for i := range v.Len() {
			if err := mirrorInto(dst.Index(i), v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		dst.Set(reflect.MakeMapWithSize(dst.Type(), v.Len()))
		it := v.MapRange()
		for it.Next() {
			e := reflect.New(dst.Type().Elem()).Elem()
			if err := mirrorInto(e, it.Value()); err != nil {
				return err
			}
			dst.SetMapIndex(it.Key(), e)
		}
	case reflect.Struct:
		for i, f := range visibleFields(t) {
			if err := mirrorInto(dst.Field(i), v.FieldByIndex(f.field.Index)); err != nil {
				return fmt.Errorf("%s: %w", f.field.Name, err)
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			dst.Set(v)
		}
	default:
		dst.Set(v)
	}
	return nil
}

// empty reports whether a decoded JSON value is nothing to write.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// Duration is a Go duration in a file ToolHive's runtime reads: parsed
// from the spec's text ("90s") and written as Go prints it ("1m30s"), as
// ToolHive's own duration type round-trips it. Zero is written as
// nothing.
type Duration time.Duration

// ParseDuration parses a duration of the spec; "" is zero.
func ParseDuration(s string) (Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	return Duration(d), err
}

// String is the duration as Go prints it.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as Go prints it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string, or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if json.Unmarshal(b, &n) != nil {
			return fmt.Errorf("duration: %w", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
