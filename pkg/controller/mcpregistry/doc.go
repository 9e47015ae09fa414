// Package mcpregistry is the MCPRegistry controller: it runs ToolHive's
// registry API server for each MCPRegistry (its configuration ConfigMap,
// ServiceAccount, the RoleBinding of its permissions, Deployment and
// Service), built by pkg/toolhive/render/registry as ToolHive's operator
// builds them, and reports the phase from the Deployment with the API's
// URL. ToolHive deprecates the kind in favour of the registry server's own
// Helm chart: every spec change gets ToolHive's MCPRegistryDeprecated
// Warning event.
//
// The children carry ToolHive's labels and are watched by them
// (naming.RegistrySelector); the finalizer is ToolHive's too. The
// registry API's permissions are the chart's ClusterRole
// (rbac.RegistryAPIRules), bound in the registry's namespace: the
// controller holds none of them. sync.go is the only file that writes.
package mcpregistry
