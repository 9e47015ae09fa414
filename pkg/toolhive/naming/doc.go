// Package naming holds the names hivekeeper shares with ToolHive's runtime,
// its tests and the other controllers: the keys of the pod contract
// (annotations, environment variables, container names, ports), the labels
// and owner reference every child carries, and the names of each
// workload's children and in-cluster addresses. It is the bottom of the
// translation: it imports nothing of hivekeeper's but the API types.
package naming
