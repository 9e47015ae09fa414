package v1beta1

import (
	"encoding/json"
	"slices"
)

// vmcpToolRefs is the part of a VirtualMCPServer's spec.config that names
// MCPToolConfigs: aggregation.tools[].toolConfigRef.
type vmcpToolRefs struct {
	Aggregation *struct {
		Tools []struct {
			ToolConfigRef *ToolConfigReference `json:"toolConfigRef"`
		} `json:"tools"`
	} `json:"aggregation"`
}

// VMCPToolConfigNames are the MCPToolConfigs a VirtualMCPServer's
// spec.config.aggregation.tools reference, sorted and without repeats. A
// config that does not decode references none; the controller reports it.
func VMCPToolConfigNames(v *VirtualMCPServer) []string {
	if v.Spec.Config == nil || len(v.Spec.Config.Raw) == 0 {
		return nil
	}
	var c vmcpToolRefs
	if json.Unmarshal(v.Spec.Config.Raw, &c) != nil || c.Aggregation == nil {
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
// (spec.config.compositeToolRefs[].name); a config that cannot be decoded
// references nothing here (the vMCP build reports it).
func VMCPCompositeToolNames(v *VirtualMCPServer) []string {
	if v.Spec.Config == nil || len(v.Spec.Config.Raw) == 0 {
		return nil
	}
	var c struct {
		CompositeToolRefs []struct {
			Name string `json:"name"`
		} `json:"compositeToolRefs"`
	}
	if json.Unmarshal(v.Spec.Config.Raw, &c) != nil {
		return nil
	}
	var names []string
	for _, r := range c.CompositeToolRefs {
		if r.Name != "" {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
