// Package architecture checks the shape of the module: imports point one
// way, from the binary down to the API types; the folders show that
// order; the translation of ToolHive's API is pure; and each layer
// exports what its callers need and no more.
package architecture_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/hivekeeper/hivekeeper/"

// layer ranks a package of the module; a package may import only packages
// of a higher rank (further down), and rank -1 is not checked (tests and
// tools, which may use anything). The order is the one
// docs/architecture.md draws:
//
//	cmd → plugin → app → controller/<kind> → workload → framework → toolhive/render/*
//	    → {drift, toolhive/wiring} → {toolhive/naming, toolhive/schema, toolhive/release}
//	    → {index, rbac, metrics, secureserving} → {apis, generated, config/crd}
//
// The test fixtures sit just above what they are fixtures of:
// workloadtest above workload, toolhivetest and drifttest above naming
// and schema, so that a test of any layer may use them.
func layer(pkg string) int {
	p := strings.TrimPrefix(pkg, module)
	switch {
	case strings.HasPrefix(p, "cmd/"):
		return 0
	case p == "pkg/plugin":
		return 1 // the kubectl plugin's commands: preflight runs app's controllers
	case p == "pkg/app":
		return 2
	case strings.HasPrefix(p, "pkg/controller/"):
		return 3
	case p == "pkg/workload/workloadtest":
		return 4 // the workload controllers' test fixture
	case p == "pkg/workload":
		return 5
	case p == "pkg/framework":
		return 6
	case strings.HasPrefix(p, "pkg/toolhive/render/"):
		return 7
	case p == "pkg/drift", p == "pkg/toolhive/wiring":
		return 8
	case p == "pkg/toolhive/toolhivetest", p == "pkg/drift/drifttest":
		return 9 // the translation's and the comparators' test fixtures
	case p == "pkg/toolhive/naming", p == "pkg/toolhive/schema", p == "pkg/toolhive/operatorenv", p == "pkg/toolhive/release":
		return 10
	case p == "pkg/index", p == "pkg/rbac", p == "pkg/metrics", p == "pkg/secureserving":
		return 11
	case strings.HasPrefix(p, "pkg/apis/"), strings.HasPrefix(p, "pkg/generated/"), p == "config/crd":
		return 12 // config/crd embeds the CRDs generated from pkg/apis
	}
	return -1
}

// sameLayerAllowed: packages of these layers may import each other (the
// generated clientset imports its own scheme; a shared helper such as
// metrics may be used by rbac's neighbours). Controller packages may not:
// one controller never reaches into another; nor may the two render
// packages, drift and wiring, naming and schema.
func sameLayerAllowed(l int) bool { return l == 11 || l == 12 }

// pkgInfo is what go list says of a package. In-package test files count
// (they share the package, so a back edge from them is a cycle waiting to
// happen); external _test packages do not, as they sit above everything.
type pkgInfo struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

// packages lists the module's packages.
func packages(t *testing.T) []pkgInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func TestImportsPointOneWay(t *testing.T) {
	checked := 0
	for _, p := range packages(t) {
		from := layer(p.ImportPath)
		if from < 0 {
			continue
		}
		checked++
		for _, imp := range append(p.Imports, p.TestImports...) {
			if !strings.HasPrefix(imp, module) || imp == p.ImportPath {
				continue
			}
			to := layer(imp)
			if to < 0 {
				t.Errorf("%s imports %s, which has no place in the layers", p.ImportPath, imp)
				continue
			}
			if to < from || (to == from && !sameLayerAllowed(from)) {
				t.Errorf("back edge: %s (layer %d) imports %s (layer %d)", p.ImportPath, from, imp, to)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d packages", checked)
	}
}

// TestNoImportOfAnAncestorFolder keeps the folders in the import order: a
// package never imports the package of a folder it sits in, so reading
// down the tree is reading down the layers (pkg/controller holds the
// controllers, not the framework they run on). Generated code, whose fake
// clientsets import their clientsets, is not checked.
func TestNoImportOfAnAncestorFolder(t *testing.T) {
	for _, p := range packages(t) {
		if layer(p.ImportPath) < 0 || strings.HasPrefix(p.ImportPath, module+"pkg/generated/") {
			continue
		}
		for _, imp := range append(p.Imports, p.TestImports...) {
			if strings.HasPrefix(p.ImportPath, imp+"/") {
				t.Errorf("%s imports %s, a package of a folder it sits in", p.ImportPath, imp)
			}
		}
	}
}

// impure are imports the translation (pkg/toolhive/...) and the
// comparators (pkg/drift/...) never make, outside their tests: no client,
// lister, informer or cache of client-go, nothing generated from the API
// types but the types, no index, no framework or outline, no context, no
// file system or environment, no logging. What they compute depends on
// their arguments alone, so the golden bytes, the parity tests and the
// fuzzers pin them.
var impure = []string{
	"k8s.io/client-go/", "k8s.io/klog", "context", "os", "os/exec", "net/http",
	module + "pkg/generated/", module + "pkg/index", module + "pkg/framework", module + "pkg/workload", module + "pkg/metrics",
}

func TestTranslationAndComparatorsArePure(t *testing.T) {
	checked := 0
	for _, p := range packages(t) {
		path := strings.TrimPrefix(p.ImportPath, module)
		if !strings.HasPrefix(path, "pkg/toolhive/") && path != "pkg/drift" && !strings.HasPrefix(path, "pkg/drift/") {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			for _, bad := range impure {
				if imp == bad || (strings.HasSuffix(bad, "/") && strings.HasPrefix(imp, bad)) || strings.HasPrefix(imp, bad+"/") {
					t.Errorf("%s imports %s: the translation and the comparators are pure", p.ImportPath, imp)
				}
			}
			// The builders never see the comparators; only their
			// parity tests pair the two.
			if strings.HasPrefix(path, "pkg/toolhive/render/") && strings.HasPrefix(imp, module+"pkg/drift") {
				t.Errorf("%s imports %s: a builder does not depend on the comparators", p.ImportPath, imp)
			}
		}
	}
	if checked < 6 {
		t.Fatalf("checked only %d packages", checked)
	}
}
