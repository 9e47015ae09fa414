package conformance_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// vmcpValidates reports whether ToolHive's `vmcp validate` accepts a
// minimal static configuration carrying tool as its one composite tool,
// and what it said.
func vmcpValidates(t *testing.T, tool *thv1.CompositeToolSpec) (bool, string) {
	t.Helper()
	toolJSON, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(toolJSON, &decoded); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"name": "composite", "groupRef": "tools",
		"incomingAuth": map[string]any{"type": "anonymous"},
		"outgoingAuth": map[string]any{"source": "inline", "default": map[string]any{"type": "unauthenticated"}},
		"aggregation": map[string]any{"conflictResolution": "prefix",
			"conflictResolutionConfig": map[string]any{"prefixFormat": "{workload}_"}},
		"backends": []any{map[string]any{"name": "fetch", "url": "http://mcp-fetch-proxy.ns.svc.cluster.local:8080/mcp",
			"transport": "streamable-http"}},
		"compositeTools": []any{decoded},
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	said, err := exec.Command(filepath.Join(toolhiveBin, "vmcp"), "validate", "--config", file).CombinedOutput()
	return err == nil, string(said)
}

// What a VirtualMCPCompositeToolDefinition's spec becomes (the typed spec
// the informer holds, encoded as JSON) is a composite tool ToolHive's vmcp
// accepts, and hivekeeper's validation agrees with vmcp's on every case:
// ToolHive's example definitions (without the onError.maxRetries their
// schema refuses) and one broken definition per rule family.
func TestCompositeToolDefinitionsAreVmcpCompositeTools(t *testing.T) {
	requireToolHive(t)
	objs, err := framework.ReadManifests(filepath.Join(toolhiveModule, "examples", "operator", "virtual-mcps"))
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name string
		spec thv1.CompositeToolSpec
	}
	var cases []tc
	for _, o := range objs {
		if o.GetKind() != thv1.KindVirtualMCPCompositeToolDefinition {
			continue
		}
		for _, s := range unstructuredSteps(o.Object) {
			if onError, ok := s["onError"].(map[string]any); ok {
				delete(onError, "maxRetries")
			}
		}
		b, _ := json.Marshal(o.Object["spec"])
		var spec thv1.CompositeToolSpec
		if err := json.Unmarshal(b, &spec); err != nil {
			t.Fatalf("%s: %v", o.GetName(), err)
		}
		cases = append(cases, tc{"example " + o.GetName(), spec})
	}
	if len(cases) != 3 {
		t.Fatalf("%d example definitions, want 3", len(cases))
	}
	broken := func(name string, mut func(*thv1.CompositeToolSpec)) {
		s := *cases[0].spec.DeepCopy()
		mut(&s)
		cases = append(cases, tc{name, s})
	}
	broken("no description", func(s *thv1.CompositeToolSpec) { s.Description = "" })
	broken("unknown dependency", func(s *thv1.CompositeToolSpec) { s.Steps[0].DependsOn = []string{"nowhere"} })
	broken("duplicate step id", func(s *thv1.CompositeToolSpec) { s.Steps[1].ID = s.Steps[0].ID })
	broken("elicitation without message", func(s *thv1.CompositeToolSpec) {
		s.Steps[0].Type, s.Steps[0].Message, s.Steps[0].Tool = thv1.WorkflowStepTypeElicitation, "", ""
	})
	broken("retry without count", func(s *thv1.CompositeToolSpec) {
		s.Steps[0].OnError = &thv1.StepErrorHandling{Action: "retry"}
	})
	broken("dependency cycle", func(s *thv1.CompositeToolSpec) {
		s.Steps[0].DependsOn = []string{s.Steps[len(s.Steps)-1].ID}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			accepted, said := vmcpValidates(t, &c.spec)
			problems := wiring.ValidateCompositeTool("spec", &c.spec)
			if accepted != (len(problems) == 0) {
				t.Errorf("vmcp validate accepts: %t (%s); hivekeeper's problems: %q", accepted, said, problems)
			}
		})
	}
}

// unstructuredSteps returns spec.steps of a decoded object.
func unstructuredSteps(obj map[string]any) []map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	list, _ := spec["steps"].([]any)
	var out []map[string]any
	for _, s := range list {
		if m, ok := s.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
