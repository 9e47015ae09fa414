// Package workload builds the children that every ToolHive proxy workload
// (MCPServer, MCPRemoteProxy) shares — the RunConfig ConfigMap, the runner's
// ServiceAccount and its RoleBinding to a runner ClusterRole, the proxy
// Deployment and Service — and holds the drift comparators and owned-field
// patch bodies for them.
//
// Builders and comparators live side by side on purpose: a comparator
// projects both the desired and the live object through the same
// normalising view, so "build, feed back as live, compare" finds no drift by
// construction, and fields the API server defaults never count as drift.
// The builders, comparators and patch bodies are pure: no clients, no
// listers. ops.go and wiring.go only connect them to informers and typed
// clients; every write still goes through pkg/framework's helpers.
package workload
