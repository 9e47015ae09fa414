package architecture_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// controllerExports is the whole contract of a controller package: its
// name, its constructor and the type New returns. Anything else a test or
// another kind needs (keys, child names, reasons) belongs to pkg/workload
// or the API types, or it becomes a second way into the controller.
var controllerExports = []string{"Controller", "Name", "New"}

func TestControllerPackagesExportOnlyTheirContract(t *testing.T) {
	dirs, err := filepath.Glob("../../pkg/controller/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		var got []string
		fset := token.NewFileSet()
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for name, obj := range exportedTopLevel(file) {
				if !slices.Contains(controllerExports, name) {
					got = append(got, fset.Position(obj).String()+": "+name)
				}
			}
		}
		for _, g := range got {
			t.Errorf("%s exports more than %v: %s", filepath.Base(dir), controllerExports, g)
		}
	}
}

// exportedTopLevel returns the exported package-level names of a file
// (functions, types, constants, variables; not methods) and where each is
// declared.
func exportedTopLevel(f *ast.File) map[string]token.Pos {
	out := map[string]token.Pos{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.IsExported() {
				out[d.Name.Name] = d.Pos()
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						out[s.Name.Name] = s.Pos()
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out[n.Name] = n.Pos()
						}
					}
				}
			}
		}
	}
	return out
}
