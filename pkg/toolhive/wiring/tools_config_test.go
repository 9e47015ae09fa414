package wiring

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

func toolConfig(name string, spec thv1.MCPToolConfigSpec) *thv1.MCPToolConfig {
	return &thv1.MCPToolConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Generation: 1, ResourceVersion: "7"},
		Spec:       spec,
	}
}

// The RunConfig carries the filter and every override the runner can
// apply; an override with only annotations is left out.
func TestApplyToolConfig(t *testing.T) {
	rc := &schema.RunConfig{}
	ApplyToolConfig(rc, nil)
	if rc.ToolsFilter != nil || rc.ToolsOverride != nil {
		t.Fatalf("no config set tool fields: %+v", rc)
	}
	ApplyToolConfig(rc, toolConfig("t", thv1.MCPToolConfigSpec{
		ToolsFilter: []string{"a", "b"},
		ToolsOverride: map[string]thv1.ToolOverride{
			"x": {Name: "a"},
			"y": {Description: "why"},
			"z": {Annotations: &thv1.ToolAnnotationsOverride{ReadOnlyHint: ptr.To(true)}},
		},
	}))
	want := map[string]schema.ToolOverride{"x": {Name: "a"}, "y": {Description: "why"}}
	if !reflect.DeepEqual(rc.ToolsFilter, []string{"a", "b"}) || !reflect.DeepEqual(rc.ToolsOverride, want) {
		t.Errorf("got filter %q overrides %+v", rc.ToolsFilter, rc.ToolsOverride)
	}
}

func TestValidateToolConfig(t *testing.T) {
	ok := toolConfig("t", thv1.MCPToolConfigSpec{ToolsFilter: []string{"fetch"}, ToolsOverride: map[string]thv1.ToolOverride{"fetch": {Name: "get"}}})
	if errs := ValidateToolConfig(ok); len(errs) != 0 {
		t.Errorf("valid config rejected: %q", errs)
	}
	bad := toolConfig("t", thv1.MCPToolConfigSpec{ToolsFilter: []string{"", "a,b", "c\nd"}, ToolsOverride: map[string]thv1.ToolOverride{"": {Name: "x"}}})
	errs := ValidateToolConfig(bad)
	if len(errs) != 4 || !strings.Contains(errs[1], `spec.toolsFilter[1] "a,b"`) || !strings.Contains(errs[3], "spec.toolsOverride") {
		t.Errorf("errors = %q", errs)
	}
}
