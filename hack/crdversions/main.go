// Command crdversions gives every CRD controller-gen wrote the versions
// ToolHive's CRDs have, all with one schema: hack/update-codegen.sh runs it
// on config/crd after controller-gen.
//
// controller-gen writes each kind once, as v1beta1, from
// pkg/apis/toolhive/v1beta1. ToolHive serves every kind as v1alpha1 too,
// deprecated, with the same schema and no conversion, so a manifest or a
// client still on v1alpha1 keeps working and a cluster whose
// status.storedVersions still lists v1alpha1 accepts the CRD. Rather than
// declare every kind a second time in Go (and keep two sets of markers in
// step), this program copies the v1beta1 version entry into a v1alpha1 entry:
// same schema, printer columns and subresources, served, deprecated with
// ToolHive's warning, and not stored.
//
// The stored version is ToolHive's, kind by kind (storedIn): a cluster must
// never hold an object in a version ToolHive's CRDs do not serve, or
// ToolHive's CRDs could not be applied back. ToolHive serves MCPWebhookConfig
// as v1alpha1 only, so hivekeeper stores it as v1alpha1 and serves v1beta1
// beside it (not deprecated: hivekeeper's own client reads it) for its own
// clients.
//
// A kind whose v1beta1 is deprecated itself (MCPRegistry, through the
// +kubebuilder:deprecatedversion marker) keeps that warning on v1alpha1 too,
// as ToolHive's CRD does.
//
// Usage: go run ./hack/crdversions <folder of CRD YAML>
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

const (
	// served is the version controller-gen writes, the one hivekeeper's
	// clients use.
	served = "v1beta1"
	// alpha is the older version ToolHive still serves.
	alpha = "v1alpha1"
	// alphaWarning is ToolHive's deprecation warning of v1alpha1, which
	// kubectl prints for every request in that version.
	alphaWarning = "toolhive.stacklok.dev/v1alpha1 is deprecated; use v1beta1"
)

// storedIn is the stored version of the kinds ToolHive does not store as
// v1beta1, and whose v1alpha1 is therefore not deprecated: MCPWebhookConfig
// (v1alpha1 only, in every ToolHive release that has it).
var storedIn = map[string]string{
	"MCPWebhookConfig": alpha,
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdversions <folder of CRD YAML>")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*.yaml"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no CRDs in %s", os.Args[1])
	}
	for _, f := range files {
		if err != nil {
			break
		}
		err = rewrite(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crdversions:", err)
		os.Exit(1)
	}
}

// rewrite adds the v1alpha1 version to one CRD file, in place.
func rewrite(file string) error {
	in, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	// The file is edited as a tree of plain values, not as a typed CRD, so
	// that marshalling it back gives controller-gen's layout (sorted keys,
	// no zero-valued fields) and only the new version entry differs.
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	spec, _ := crd["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	kind, _ := names["kind"].(string)
	versions, _ := spec["versions"].([]any)
	var beta map[string]any
	if len(versions) == 1 {
		beta, _ = versions[0].(map[string]any)
	}
	if beta == nil || beta["name"] != served {
		return fmt.Errorf("%s: want the one version %s controller-gen writes, found %d versions", file, served, len(versions))
	}
	alphaEntry := copyEntry(beta)
	alphaEntry["name"] = alpha
	alphaEntry["storage"] = false
	if storedIn[kind] == alpha {
		alphaEntry["storage"], beta["storage"] = true, false
	} else {
		alphaEntry["deprecated"] = true
		if _, ok := beta["deprecationWarning"]; !ok {
			alphaEntry["deprecationWarning"] = alphaWarning
		}
	}
	spec["versions"] = []any{alphaEntry, beta}

	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	out = append([]byte("---\n"), out...)
	if bytes.Equal(in, out) {
		return nil
	}
	return os.WriteFile(file, out, 0o644)
}

// copyEntry deep-copies a version entry through YAML, so the two versions
// share no maps.
func copyEntry(v map[string]any) map[string]any {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err) // a tree just decoded from YAML always encodes
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
