package v1beta1

import (
	"slices"
)

// VMCPToolConfigNames are the MCPToolConfigs a VirtualMCPServer's
// spec.config.aggregation.tools reference, sorted and without repeats.
func VMCPToolConfigNames(v *VirtualMCPServer) []string {
	c := v.Spec.Config
	if c == nil || c.Aggregation == nil {
		return nil
	}
	var names []string
	for _, t := range c.Aggregation.Tools {
		if t.ToolConfigRef != nil && t.ToolConfigRef.Name != "" {
			names = append(names, t.ToolConfigRef.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// VMCPExternalAuthConfigNames are the MCPExternalAuthConfigs a
// VirtualMCPServer's spec.outgoingAuth references (default and per
// backend), sorted and without repeats.
func VMCPExternalAuthConfigNames(v *VirtualMCPServer) []string {
	o := v.Spec.OutgoingAuth
	if o == nil {
		return nil
	}
	var names []string
	add := func(b *BackendAuth) {
		if b != nil && b.Type == BackendAuthTypeExternalAuthConfigRef && b.ExternalAuthConfigRef != nil && b.ExternalAuthConfigRef.Name != "" {
			names = append(names, b.ExternalAuthConfigRef.Name)
		}
	}
	add(o.Default)
	for _, b := range o.Backends {
		add(&b)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// VMCPCompositeToolNames are the VirtualMCPCompositeToolDefinitions a
// VirtualMCPServer references, sorted and without repeats. ToolHive keeps
// the references inside the vMCP configuration
// (spec.config.compositeToolRefs[].name).
func VMCPCompositeToolNames(v *VirtualMCPServer) []string {
	if v.Spec.Config == nil {
		return nil
	}
	var names []string
	for _, r := range v.Spec.Config.CompositeToolRefs {
		if r.Name != "" {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
