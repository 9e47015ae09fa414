package toolhivekeys_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// node is what a Go type accepts when a file is decoded into it, as a tree
// of keys: a struct's keys (fields), a map's values under any key (elem),
// or anything (open, for an interface, a raw message or a type the loader
// cannot see). A struct with a decoder of its own is open too, beside its
// fields: ToolHive's authorization config keeps the keys of its backend
// that way. A slice is its element's node; a scalar has no keys.
type node struct {
	fields map[string]*node
	elem   *node
	open   bool
	// where is the Go type, for messages.
	where string
}

// scalar is a node without keys.
func scalar(where string) *node { return &node{where: where} }

// keys is the tree flattened to paths ("a.b", "a.*.c" under a map, "a.…"
// where anything is accepted), sorted.
func (n *node) keys() []string {
	seen := map[*node]bool{}
	var out []string
	var walk func(prefix string, n *node)
	walk = func(prefix string, n *node) {
		if seen[n] {
			return // a recursive type: its keys are already listed
		}
		seen[n] = true
		defer delete(seen, n)
		if n.open {
			out = append(out, prefix+"…")
		}
		for k, c := range n.fields {
			out = append(out, prefix+k)
			walk(prefix+k+".", c)
		}
		if n.elem != nil {
			walk(prefix+"*.", n.elem)
		}
	}
	walk("", n)
	slices.Sort(out)
	return out
}

// check walks a decoded document (maps, slices, scalars) along the tree
// and returns the path of every key the tree does not accept.
func (n *node) check(prefix string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		var bad []string
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		}) {
			p := prefix + k
			switch c, ok := n.fields[k]; {
			case ok:
				bad = append(bad, c.check(p+".", x[k])...)
			case n.elem != nil:
				bad = append(bad, n.elem.check(p+".", x[k])...)
			case !n.open:
				bad = append(bad, fmt.Sprintf("%s (no such key in %s)", p, n.where))
			}
		}
		return bad
	case []any:
		var bad []string
		for _, e := range x {
			bad = append(bad, n.check(prefix, e)...)
		}
		return bad
	}
	return nil
}

// loader reads Go types from source with go/parser and turns them into
// key trees, following types across packages of the modules it knows.
type loader struct {
	// tag is the struct tag that names keys: json for the RunConfig,
	// yaml for the files vmcp reads.
	tag string
	// modules are the module paths it reads, and their folders.
	modules map[string]string
	pkgs    map[string]*pkg
	named   map[string]*node
	fset    *token.FileSet
}

func newLoader(tag string, modules map[string]string) *loader {
	return &loader{tag: tag, modules: modules, pkgs: map[string]*pkg{}, named: map[string]*node{}, fset: token.NewFileSet()}
}

// pkg is one parsed package: its type declarations, the file each is in
// (for its imports), and the methods of each type.
type pkg struct {
	name    string
	types   map[string]*ast.TypeSpec
	fileOf  map[string]*ast.File
	methods map[string][]string
}

// dir is the folder of an import path in a known module, "" for any other.
func (l *loader) dir(importPath string) string {
	best := ""
	for m := range l.modules {
		if (importPath == m || strings.HasPrefix(importPath, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return ""
	}
	return filepath.Join(l.modules[best], strings.TrimPrefix(importPath, best))
}

func (l *loader) load(importPath string) (*pkg, error) {
	if p, ok := l.pkgs[importPath]; ok {
		return p, nil
	}
	dir := l.dir(importPath)
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &pkg{types: map[string]*ast.TypeSpec{}, fileOf: map[string]*ast.File{}, methods: map[string][]string{}}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(l.fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.name = f.Name.Name
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						p.types[ts.Name.Name], p.fileOf[ts.Name.Name] = ts, f
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					t := d.Recv.List[0].Type
					if s, ok := t.(*ast.StarExpr); ok {
						t = s.X
					}
					if id, ok := t.(*ast.Ident); ok {
						p.methods[id.Name] = append(p.methods[id.Name], d.Name.Name)
					}
				}
			}
		}
	}
	l.pkgs[importPath] = p
	return p, nil
}

// importPath is what a file names as pkgName.
func (l *loader) importPath(f *ast.File, pkgName string) string {
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if im.Name != nil {
			if im.Name.Name == pkgName {
				return p
			}
			continue
		}
		if loaded, err := l.load(p); err == nil && loaded != nil && loaded.name != "" {
			if loaded.name == pkgName {
				return p
			}
			continue
		}
		if last := path.Base(p); last == pkgName || strings.TrimSuffix(strings.Split(last, ".")[0], "-go") == pkgName {
			return p
		}
	}
	return ""
}

// typeNode is the tree of a named type.
func (l *loader) typeNode(importPath, name string) (*node, error) {
	key := importPath + "." + name
	if n, ok := l.named[key]; ok {
		return n, nil
	}
	p, err := l.load(importPath)
	if err != nil {
		return nil, err
	}
	if p == nil || p.types[name] == nil {
		// Outside the modules read: the standard library's scalars, and
		// anything else accepted as it comes.
		switch key {
		case "time.Duration", "time.Time":
			return scalar(key), nil
		}
		return &node{open: true, where: key}, nil
	}
	n := &node{where: key}
	l.named[key] = n // before the fields: a type may contain itself
	ts := p.types[name]
	if ts.TypeParams != nil {
		n.open = true
		return n, nil
	}
	built, err := l.expr(p, p.fileOf[name], ts.Type)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	*n = *built
	n.where = key
	decoder := "UnmarshalJSON"
	if l.tag == "yaml" {
		decoder = "UnmarshalYAML"
	}
	if slices.Contains(p.methods[name], decoder) {
		if n.fields == nil && n.elem == nil {
			return scalar(key), nil // a scalar with its own text form (a duration)
		}
		n.open = true
	}
	return n, nil
}

// expr is the tree of a type expression of package p's file f.
func (l *loader) expr(p *pkg, f *ast.File, e ast.Expr) (*node, error) {
	switch t := e.(type) {
	case *ast.Ident:
		switch t.Name {
		case "any", "error":
			return &node{open: true, where: t.Name}, nil
		}
		if p.types[t.Name] == nil {
			return scalar(t.Name), nil // a predeclared type
		}
		return l.typeNode(l.pathOf(p), t.Name)
	case *ast.SelectorExpr:
		x, ok := t.X.(*ast.Ident)
		if !ok {
			return &node{open: true}, nil
		}
		return l.typeNode(l.importPath(f, x.Name), t.Sel.Name)
	case *ast.StarExpr:
		return l.expr(p, f, t.X)
	case *ast.ArrayType:
		if id, ok := t.Elt.(*ast.Ident); ok && id.Name == "byte" {
			return scalar("[]byte"), nil
		}
		return l.expr(p, f, t.Elt)
	case *ast.MapType:
		v, err := l.expr(p, f, t.Value)
		return &node{elem: v}, err
	case *ast.InterfaceType, *ast.IndexExpr, *ast.IndexListExpr:
		return &node{open: true}, nil
	case *ast.StructType:
		return l.structNode(p, f, t)
	}
	return scalar(fmt.Sprintf("%T", e)), nil
}

// pathOf is the import path of a loaded package.
func (l *loader) pathOf(p *pkg) string {
	for k, v := range l.pkgs {
		if v == p {
			return k
		}
	}
	return ""
}

// structNode is a struct's keys as the tag's encoder names them: the tag's
// name, the Go name (json) or the lowercased Go name (yaml) without one;
// "-" and unexported fields skipped; merged in, an embedded struct
// without a name (json) or with ",inline" (yaml, which otherwise keys an
// embedded struct by its lowercased type name).
func (l *loader) structNode(p *pkg, f *ast.File, st *ast.StructType) (*node, error) {
	n := &node{fields: map[string]*node{}}
	for _, fld := range st.Fields.List {
		tag := ""
		if fld.Tag != nil {
			raw, _ := strconv.Unquote(fld.Tag.Value)
			tag = reflect.StructTag(raw).Get(l.tag)
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		child, err := l.expr(p, f, fld.Type)
		if err != nil {
			return nil, err
		}
		embedded := len(fld.Names) == 0
		inline := embedded && name == "" && l.tag == "json" || strings.Contains(","+opts+",", ",inline,")
		if inline {
			for k, v := range child.fields {
				n.fields[k] = v
			}
			n.open = n.open || child.open
			continue
		}
		for _, id := range fld.Names {
			if !unicode.IsUpper(rune(id.Name[0])) {
				continue
			}
			key := name
			if key == "" {
				key = id.Name
				if l.tag == "yaml" {
					key = strings.ToLower(id.Name)
				}
			}
			n.fields[key] = child
		}
		if embedded {
			if name == "" {
				name = strings.ToLower(embeddedName(fld.Type))
			}
			n.fields[name] = child
		}
	}
	return n, nil
}

// embeddedName is the type name of an embedded field.
func embeddedName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return embeddedName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}
