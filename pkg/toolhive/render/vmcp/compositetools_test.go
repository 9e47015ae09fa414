package vmcp

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// The referenced definitions follow the inline composite tools in
// config.yaml, in compositeToolRefs order, with the step defaults; the
// references stay as written; a server without any renders neither key.
func TestCompositeToolsRendered(t *testing.T) {
	b, a := toolhivetest.NewCompositeTool(testNS, "b", "hb"), toolhivetest.NewCompositeTool(testNS, "a", "ha")
	v := newVMCP("agg")
	in := Input{Image: testImage, Members: []any{newMember("m", testGroup)}}
	plain, err := Build(v, in)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := decodeRendered(t, plain); cfg["compositeTools"] != nil || cfg["compositeToolRefs"] != nil {
		t.Errorf("composite tools without any: %v", cfg)
	}
	v = newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](`{"compositeTools":[{"name":"inline","steps":[{"id":"s","tool":"m.echo"}]}],` +
			`"compositeToolRefs":[{"name":"b"},{"name":"a"}]}`)
	})
	in.CompositeTools = map[string]*thv1.VirtualMCPCompositeToolDefinition{"a": a, "b": b}
	withTools, err := Build(v, in)
	if err != nil {
		t.Fatal(err)
	}
	cfg := decodeRendered(t, withTools)
	tools, _ := cfg["compositeTools"].([]any)
	var names []string
	for _, tool := range tools {
		m := tool.(map[string]any)
		names = append(names, m["name"].(string))
		step := m["steps"].([]any)[0].(map[string]any)
		if step["type"] != "tool" {
			t.Errorf("tool %s: step not defaulted: %v", m["name"], step)
		}
	}
	if want := []string{"inline", "b", "a"}; !slices.Equal(names, want) {
		t.Errorf("composite tools %q, want %q", names, want)
	}
	if refs, _ := cfg["compositeToolRefs"].([]any); len(refs) != 2 {
		t.Errorf("compositeToolRefs %v", cfg["compositeToolRefs"])
	}
	if plain.Deployment.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == withTools.Deployment.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] {
		t.Error("the pod checksum does not cover the composite tools")
	}

	// A referenced tool with an inline tool's name is refused, as
	// ToolHive's converter refuses it.
	in.CompositeTools["a"] = toolhivetest.NewCompositeTool(testNS, "inline", "hi")
	if _, err := Build(v, in); err == nil || !strings.Contains(err.Error(), `duplicate composite tool name "inline"`) {
		t.Errorf("duplicate name: %v", err)
	}
}

// decodeRendered is the config.yaml of a build, decoded.
func decodeRendered(t *testing.T, c *Output) map[string]any {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(c.Config.Data[naming.VMCPConfigKey]), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}
