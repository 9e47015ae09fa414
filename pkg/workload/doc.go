// Package workload is the reconcile outline the workload controllers
// (MCPServer, MCPRemoteProxy, VirtualMCPServer) share, and the controller
// of every config kind they reference.
//
// A workload sync, top to bottom (Sync, Base): get the workload from its
// lister; resolve what it references from the listers (ResolveGroup,
// ConfigRefs.Resolve and ResolveAll, ResolveProxyRefs; a missing or
// invalid config is a condition and a wait, never a build); hand the spec
// and the resolved references to its builder in pkg/toolhive/render,
// which is pure; converge the children it returns (Children.Ensure, over
// the framework's ChildOps and pkg/drift's comparators and patch bodies);
// report (Report, Settle: errors become conditions, events and retries);
// write the status once. Nothing here translates a spec: what ToolHive's
// runtime reads is pkg/toolhive's.
//
// The config kinds (MCPOIDCConfig, MCPToolConfig, MCPAuthzConfig,
// MCPExternalAuthConfig, MCPTelemetryConfig, MCPWebhookConfig,
// VirtualMCPCompositeToolDefinition) are one ConfigKind declaration each
// (configkinds.go: informer, lister, patch, the spec its hash covers, the
// validation pkg/toolhive/wiring does, the workload condition), and one
// ConfigController serves them all: finalizer, configHash, Valid,
// referencingWorkloads recomputed in full from the reference index, and
// deletion protection.
package workload
