package architecture_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// controllerExports is the whole contract of a controller package: its
// name, its constructor and the type New returns. Anything else a test or
// another kind needs (keys, child names, reasons) belongs to
// pkg/toolhive/naming or the API types, or it becomes a second way into
// the controller.
var controllerExports = []string{"Controller", "Name", "New"}

func TestControllerPackagesExportOnlyTheirContract(t *testing.T) {
	dirs, err := filepath.Glob("../../pkg/controller/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no controller packages: %v", err)
	}
	for _, dir := range dirs {
		for name, pos := range packageExports(t, dir) {
			if !slices.Contains(controllerExports, name) {
				t.Errorf("%s exports more than %v: %s: %s", filepath.Base(dir), controllerExports, pos, name)
			}
		}
	}
}

// renderExports are what a render package offers its controller: its
// builders (Build*), their Input and Output, and, where the controller
// needs more of the translation than a build, the names below with why.
var renderExports = map[string][]string{
	"embedding": {"Output"},
	"registry":  {"Input", "Output"},
	"proxy":     {"Input", "Output"},
	"vmcp": {"Input", "Output",
		// The type of Output.AuthConditions.
		"AuthCondition",
		// What of a group member reaches config.yaml: the member
		// handlers compare it to drop members' status writes, and the
		// sync reads the member's own MCPExternalAuthConfig from it.
		"MemberView", "ViewMember",
		// The spec fields the vMCP stores without acting on, reported
		// before the references resolve (so before any build).
		"UnsupportedFields",
		// The type of Input.ClusterRoles.
		"ClusterRoles",
		// Whether vmcp discovers the members itself: the sync waits for
		// a first backend only when it does not.
		"Discovers",
		// The session HMAC key's Secret, created by the sync alone and
		// only where missing (never a desired state to converge), from
		// a key of HMACKeySize random bytes the sync draws.
		"HMACSecret", "HMACKeySize"},
}

func TestRenderPackagesExportOnlyTheirBuilders(t *testing.T) {
	dirs, err := filepath.Glob("../../pkg/toolhive/render/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no render packages: %v", err)
	}
	for _, dir := range dirs {
		allowed, ok := renderExports[filepath.Base(dir)]
		if !ok {
			t.Errorf("render package %s is not in renderExports", filepath.Base(dir))
			continue
		}
		for name, pos := range packageExports(t, dir) {
			if !strings.HasPrefix(name, "Build") && !slices.Contains(allowed, name) {
				t.Errorf("%s: render package %s exports %s: only Build*, %v", pos, filepath.Base(dir), name, allowed)
			}
		}
	}
}

// controllerFiles are the files of a controller package: its
// constructor and handlers, its sync (the only file that writes), and
// what derives its status; the translation is pkg/toolhive/render's.
var controllerFiles = []string{"controller.go", "doc.go", "status.go", "sync.go"}

// writeHelpers are the framework's functions that write to the API
// server; only sync.go calls them (or the outline's workload.Sync, or a
// Children's Ensure).
var writeHelpers = []string{"CreateChild", "DeleteChild", "DeleteCollection", "DeleteLabelled", "DeleteStaleChild",
	"EnsureChild", "EnsureFinalizer", "PatchChild", "PatchObject", "PatchStatus", "ReleaseFinalizer"}

func TestControllerPackagesHoldOnlyTheOutlineAndOnlySyncWrites(t *testing.T) {
	dirs, err := filepath.Glob("../../pkg/controller/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no controller packages: %v", err)
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			base := filepath.Base(f)
			if strings.HasSuffix(base, "_test.go") {
				continue
			}
			if !slices.Contains(controllerFiles, base) {
				t.Errorf("%s: a controller package holds only %v", f, controllerFiles)
			}
			if base == "sync.go" {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, _ := sel.X.(*ast.Ident)
				switch {
				case pkg != nil && pkg.Name == "framework" && slices.Contains(writeHelpers, sel.Sel.Name),
					pkg != nil && pkg.Name == "workload" && sel.Sel.Name == "Sync",
					sel.Sel.Name == "Ensure":
					t.Errorf("%s calls %s: only sync.go writes", f, sel.Sel.Name)
				}
				return true
			})
		}
	}
}

// packageExports are the exported package-level names of the non-test
// files of dir, and where each is declared.
func packageExports(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
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
		for name, pos := range exportedTopLevel(file) {
			out[name] = fset.Position(pos).String()
		}
	}
	return out
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
