// Package v1beta1 holds the ToolHive MCP API types (group
// toolhive.stacklok.dev, version v1beta1) that hivekeeper serves.
//
// The field names, defaults and enums follow the ToolHive API so that a
// manifest written for the ToolHive operator works unchanged; the Go types and
// their comments are hivekeeper's own. Every spec preserves unknown fields:
// ToolHive has fields hivekeeper does not act on yet, and another controller
// may own them, so the schema must store them whole.
//
// +k8s:deepcopy-gen=package
// +groupName=toolhive.stacklok.dev
package v1beta1
