package toolhive

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// Kinds are the kinds a case of the differential applies, in creation
// order: what a workload references comes before it. The EmbeddingServers
// and MCPRegistries of ToolHive's examples are compared by a test of their
// own (test/conformance's kinds differential) and are left out here.
var Kinds = []string{
	"ConfigMap", "Secret", "ServiceAccount",
	"MCPGroup", "MCPOIDCConfig", "MCPToolConfig", "MCPTelemetryConfig",
	"MCPExternalAuthConfig", "MCPAuthzConfig", "MCPWebhookConfig",
	"MCPServerEntry", // a vMCP backend: before the VirtualMCPServer
	"MCPServer", "MCPRemoteProxy",
	"VirtualMCPCompositeToolDefinition",
	"VirtualMCPServer",
}

// HandoverKinds are Kinds and the two kinds whose children are not a
// workload's (an EmbeddingServer's StatefulSet and Service, an
// MCPRegistry's registry API), in creation order: the handover suite's
// load, which every kind an operator reconciles is part of.
var HandoverKinds = slices.Concat(Kinds[:slices.Index(Kinds, "VirtualMCPServer")],
	[]string{"EmbeddingServer", "VirtualMCPServer", "MCPRegistry"})

// IsWorkload reports whether kind is one an operator runs a Deployment
// and writes a config for.
func IsWorkload(kind string) bool {
	return kind == "MCPServer" || kind == "MCPRemoteProxy" || kind == "VirtualMCPServer"
}

// Case is one manifest file, applied in a namespace of its own whose name
// is derived from the file's, so that values containing it (resource
// URLs, checksums over them) are the same on every server and every run.
type Case struct {
	Name      string // table/<file> or examples/<path>
	Namespace string
	Objects   []*unstructured.Unstructured // applied, in Kinds order
	// Left names the documents left out, with the reason.
	Left      []string
	Workloads []Workload
}

// Workload is one MCPServer, MCPRemoteProxy or VirtualMCPServer of a case.
type Workload struct{ Kind, Name string }

// ID is how suites name a workload within its case: "Kind name".
func (w Workload) ID() string { return w.Kind + " " + w.Name }

// Key is the workload's Key as an object ("Kind/name").
func (w Workload) Key() string { return w.Kind + "/" + w.Name }

// Cases reads every manifest of table (hivekeeper's conformance table, a
// folder of YAML files) and of the module's examples/operator, applying
// Kinds, and keeps each file with at least one workload.
func Cases(table, module string) ([]*Case, error) {
	return CasesOf(table, module, Kinds)
}

// CasesOf reads the manifests as Cases does, applying the kinds named (in
// their order), and keeps each file with at least one workload or an
// object of a kind of kinds that is not in Kinds (an EmbeddingServer, an
// MCPRegistry).
func CasesOf(table, module string, kinds []string) ([]*Case, error) {
	var files, names []string
	found, err := filepath.Glob(filepath.Join(table, "*.yaml"))
	if err != nil || len(found) == 0 {
		return nil, fmt.Errorf("no manifests in %s: %v", table, err)
	}
	for _, f := range found {
		files, names = append(files, f), append(names, "table/"+filepath.Base(f))
	}
	root := ExamplesDir(module)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			rel, _ := filepath.Rel(root, path)
			files, names = append(files, path), append(names, "examples/"+rel)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", root, err)
	}
	var cases []*Case
	for i, file := range files {
		objs, err := framework.ReadManifests(file)
		if err != nil {
			return nil, err
		}
		c := &Case{Name: names[i], Namespace: CaseNamespace(names[i])}
		owners := 0
		for _, o := range objs {
			if !slices.Contains(kinds, o.GetKind()) {
				c.Left = append(c.Left, fmt.Sprintf("%s %s: applied to neither server: it shapes nothing either operator writes here", o.GetKind(), o.GetName()))
				continue
			}
			c.Objects = append(c.Objects, o)
			if IsWorkload(o.GetKind()) {
				c.Workloads = append(c.Workloads, Workload{o.GetKind(), o.GetName()})
			} else if !slices.Contains(Kinds, o.GetKind()) {
				owners++
			}
		}
		if len(c.Workloads) == 0 && owners == 0 {
			continue
		}
		slices.SortStableFunc(c.Objects, func(a, b *unstructured.Unstructured) int {
			return slices.Index(kinds, a.GetKind()) - slices.Index(kinds, b.GetKind())
		})
		cases = append(cases, c)
	}
	return cases, nil
}

// CaseNamespace derives a namespace name from a case's name:
// "table/01-stdio-minimal.yaml" is "table-01-stdio-minimal".
func CaseNamespace(name string) string {
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".yml")
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	ns := strings.Trim(b.String(), "-")
	if len(ns) > 63 {
		sum := sha256.Sum256([]byte(name))
		ns = fmt.Sprintf("%s-%x", strings.TrimRight(ns[:54], "-"), sum[:4])
	}
	return ns
}

// Resource maps the kinds the table and ToolHive's examples use to their
// resources.
func Resource(o *unstructured.Unstructured) (schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(o.GetAPIVersion())
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	plural := map[string]string{
		"ConfigMap": "configmaps", "Secret": "secrets", "ServiceAccount": "serviceaccounts",
		"MCPServer": "mcpservers", "MCPOIDCConfig": "mcpoidcconfigs", "MCPRemoteProxy": "mcpremoteproxies",
		"VirtualMCPServer": "virtualmcpservers", "MCPGroup": "mcpgroups", "MCPToolConfig": "mcptoolconfigs",
		"MCPAuthzConfig": "mcpauthzconfigs", "MCPTelemetryConfig": "mcptelemetryconfigs",
		"MCPExternalAuthConfig": "mcpexternalauthconfigs", "MCPWebhookConfig": "mcpwebhookconfigs",
		"MCPServerEntry": "mcpserverentries", "VirtualMCPCompositeToolDefinition": "virtualmcpcompositetooldefinitions",
		"EmbeddingServer": "embeddingservers", "MCPRegistry": "mcpregistries",
	}[o.GetKind()]
	if plural == "" {
		return schema.GroupVersionResource{}, fmt.Errorf("kind %s is not one the suites apply", o.GetKind())
	}
	return gv.WithResource(plural), nil
}

// Create creates o in ns with the given field validation and returns the
// object as the API server stored it.
func Create(ctx context.Context, dyn dynamic.Interface, ns string, o *unstructured.Unstructured, validation string) (*unstructured.Unstructured, error) {
	o = o.DeepCopy()
	o.SetNamespace(ns)
	gvr, err := Resource(o)
	if err != nil {
		return nil, err
	}
	return dyn.Resource(gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{FieldValidation: validation})
}
