// Package mcpgroup is the MCPGroup controller, the only writer of
// MCPGroup.status: one writer, so two controllers never clobber its lists.
//
// A group's status is a pure function of which MCPServers,
// MCPRemoteProxies and MCPServerEntries in its namespace name it in
// spec.groupRef. The controller
// reads that membership from the ByGroup index of the workload informers and
// recomputes the whole status on every sync, so a missed or reordered event
// can never leave a stale name behind: the next sync of the group rewrites
// the lists from the index, and when nothing changed it writes nothing.
//
// Phases:
//
//   - Ready: the membership lists describe the group's current generation.
//     The first sync already knows the full membership, so a group goes
//     straight from no phase to Ready.
//   - Pending: the group has not been processed yet. The controller never
//     writes Pending — an extra write before the first real status would buy
//     nothing — so readers treat an empty phase, or an observedGeneration
//     behind metadata.generation, as Pending.
//   - Failed: the membership could not be read from the index (a wiring bug:
//     the index was not added to a workload informer). The last known lists
//     are kept rather than reported as empty, the Ready condition says why,
//     and the key is not retried, because a retry cannot add an index.
//
// The controller also holds ToolHive's finalizer
// (toolhive.stacklok.dev/mcpgroup-finalizer) on every group, added before
// the first status write and released when the group is deleted, so that
// a group either operator finalized deletes under the other. ToolHive's
// operator marks the members' GroupRefValidated False before releasing
// it; here the members' own controllers report it
// (workload.ResolveMemberGroup), since each status has one writer.
//
// Besides its Ready condition the status carries ToolHive's
// MCPServersChecked, which the CRD's Checked printer column reads.
//
// The workload side of membership (the GroupRefValidated condition on
// MCPServer and MCPRemoteProxy) belongs to the workload controllers; this
// package exports GroupRefCondition and MemberHandler for them so every
// controller answers "does my group exist" the same way.
package mcpgroup
