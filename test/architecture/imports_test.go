// Package architecture checks the shape of the module: imports point one
// way, from the binary down to the API types.
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
// tools, which may use anything). The order is the one docs/architecture.md
// draws:
//
//	cmd → app → controller/<kind> → workload → controller → {index, runconfig, rbac, metrics, secureserving} → {apis, generated}
func layer(pkg string) int {
	p := strings.TrimPrefix(pkg, module)
	switch {
	case strings.HasPrefix(p, "cmd/"):
		return 0
	case p == "pkg/app":
		return 1
	case strings.HasPrefix(p, "pkg/controller/"):
		return 2
	case p == "pkg/workload/workloadtest":
		return 3 // the workload controllers' test fixture
	case p == "pkg/workload":
		return 4
	case p == "pkg/framework", strings.HasPrefix(p, "pkg/toolhive/render/"):
		return 5
	case p == "pkg/index", p == "pkg/toolhive/schema", p == "pkg/toolhive/naming", p == "pkg/drift", p == "pkg/drift/drifttest", p == "pkg/toolhive/wiring", p == "pkg/toolhive/toolhivetest", p == "pkg/rbac", p == "pkg/metrics", p == "pkg/secureserving":
		return 6
	case strings.HasPrefix(p, "pkg/apis/"), strings.HasPrefix(p, "pkg/generated/"):
		return 7
	}
	return -1
}

// sameLayerAllowed: packages of these layers may import each other (the
// generated clientset imports its own scheme; a shared helper such as
// metrics may be used by rbac's neighbours). Controller packages may not:
// one controller never reaches into another.
func sameLayerAllowed(l int) bool { return l == 6 || l == 7 }

// pkgInfo is what go list says of a package. In-package test files count
// (they share the package, so a back edge from them is a cycle waiting to
// happen); external _test packages do not, as they sit above everything.
type pkgInfo struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

func TestImportsPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for {
		var p pkgInfo
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
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
