package wiring

import (
	"fmt"
	"slices"
	"strings"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// ApplyToolConfig sets the runner's tool filter and overrides from a
// referenced MCPToolConfig (nil: none), as ToolHive's operator maps them.
// An override that sets neither a name nor a description (only
// annotations, which the runner cannot apply) is left out: the runner
// refuses an override with both empty.
func ApplyToolConfig(rc *schema.RunConfig, cfg *thv1.MCPToolConfig) {
	if cfg == nil {
		return
	}
	rc.ToolsFilter = slices.Clone(cfg.Spec.ToolsFilter)
	for tool, o := range cfg.Spec.ToolsOverride {
		if o.Name == "" && o.Description == "" {
			continue
		}
		if rc.ToolsOverride == nil {
			rc.ToolsOverride = map[string]schema.ToolOverride{}
		}
		rc.ToolsOverride[tool] = schema.ToolOverride{Name: o.Name, Description: o.Description}
	}
}

// ValidateToolConfig re-checks what the schema enforces on the filter
// (for configs stored before it did): the runner reads the filter as
// comma-separated values, so an empty name, a comma or a line break would
// silently change which tools pass. Override keys name tools and may not
// be empty.
func ValidateToolConfig(cfg *thv1.MCPToolConfig) []string {
	var errs []string
	for i, tool := range cfg.Spec.ToolsFilter {
		if tool == "" || strings.ContainsAny(tool, ",\r\n") {
			errs = append(errs, fmt.Sprintf("spec.toolsFilter[%d] %q: a tool name must be non-empty, without commas or line breaks", i, tool))
		}
	}
	keys := make([]string, 0, len(cfg.Spec.ToolsOverride))
	for k := range cfg.Spec.ToolsOverride {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "" {
			errs = append(errs, "spec.toolsOverride: a tool name (key) must be non-empty")
		}
	}
	return errs
}
