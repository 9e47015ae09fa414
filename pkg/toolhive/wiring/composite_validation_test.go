package wiring

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// ValidateCompositeTool refuses what ToolHive's vmcp refuses, one rule per
// case, each named by the path of the field at fault.
func TestValidateCompositeTool(t *testing.T) {
	if errs := ValidateCompositeTool("spec", ptr.To(toolhivetest.CompositeTool())); len(errs) != 0 {
		t.Fatalf("valid tool refused: %q", errs)
	}
	for _, c := range []struct {
		name string
		mut  func(*thv1.CompositeToolSpec)
		want string
	}{
		{"no name", func(s *thv1.CompositeToolSpec) { s.Name = "" }, "spec.name is required"},
		{"no description", func(s *thv1.CompositeToolSpec) { s.Description = "" }, "spec.description is required"},
		{"no steps", func(s *thv1.CompositeToolSpec) { s.Steps = nil }, "spec.steps must have at least one step"},
		{"bad timeout", func(s *thv1.CompositeToolSpec) { s.Timeout = "soon" }, "spec.timeout"},
		{"parameters not an object schema", func(s *thv1.CompositeToolSpec) { s.Parameters = raw(`{"type":"string"}`) }, "spec.parameters: 'type' must be 'object'"},
		{"parameters without type", func(s *thv1.CompositeToolSpec) { s.Parameters = raw(`{"properties":{}}`) }, "spec.parameters: must have 'type'"},
		{"step without id", func(s *thv1.CompositeToolSpec) { s.Steps[0].ID = "" }, "spec.steps[0].id is required"},
		{"duplicate id", func(s *thv1.CompositeToolSpec) { s.Steps[1].ID = "list" }, `spec.steps[1].id "list" is duplicated`},
		{"tool step without tool", func(s *thv1.CompositeToolSpec) { s.Steps[0].Tool = "" }, "spec.steps[0].tool is required"},
		{"tool and message untyped", func(s *thv1.CompositeToolSpec) { s.Steps[0].Message = "hi" }, "cannot have both tool and message"},
		{"unknown type", func(s *thv1.CompositeToolSpec) { s.Steps[0].Type = "shell" }, "spec.steps[0].type must be one of"},
		{"elicitation without message", func(s *thv1.CompositeToolSpec) { s.Steps[2].Message = "" }, "spec.steps[2].message is required"},
		{"bad decline action", func(s *thv1.CompositeToolSpec) { s.Steps[2].OnDecline.Action = "ignore" }, "spec.steps[2].onDecline.action"},
		{"unknown dependency", func(s *thv1.CompositeToolSpec) { s.Steps[1].DependsOn = []string{"nope"} }, `references unknown step "nope"`},
		{"cycle", func(s *thv1.CompositeToolSpec) { s.Steps[0].DependsOn = []string{"ask"} }, "dependency cycle"},
		{"bad error action", func(s *thv1.CompositeToolSpec) { s.Steps[0].OnError.Action = "panic" }, "spec.steps[0].onError.action"},
		{"retry without count", func(s *thv1.CompositeToolSpec) { s.Steps[0].OnError.RetryCount = 0 }, "retryCount must be at least 1"},
		{"forEach without collection", func(s *thv1.CompositeToolSpec) { s.Steps[1].Collection = "" }, "spec.steps[1].collection is required"},
		{"forEach without step", func(s *thv1.CompositeToolSpec) { s.Steps[1].InnerStep = nil }, "spec.steps[1].step is required"},
		{"forEach inner not a tool", func(s *thv1.CompositeToolSpec) { s.Steps[1].InnerStep = raw(`{"type":"elicitation"}`) }, "step.type must be 'tool'"},
		{"forEach reserved item var", func(s *thv1.CompositeToolSpec) { s.Steps[1].ItemVar = "index" }, "itemVar"},
		{"forEach too parallel", func(s *thv1.CompositeToolSpec) { s.Steps[1].MaxParallel = 51 }, "maxParallel"},
		{"forEach too many iterations", func(s *thv1.CompositeToolSpec) { s.Steps[1].MaxIterations = 1001 }, "maxIterations"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := toolhivetest.CompositeTool()
			c.mut(&s)
			errs := ValidateCompositeTool("spec", &s)
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, c.want) }) {
				t.Errorf("problems %q, want one containing %q", errs, c.want)
			}
		})
	}
}
