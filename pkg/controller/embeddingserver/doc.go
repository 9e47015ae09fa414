// Package embeddingserver is the EmbeddingServer controller: it runs a text
// embeddings server as a StatefulSet behind a Service, both built by
// pkg/toolhive/render/embedding as ToolHive's operator builds them, and
// reports the server's phase from the StatefulSet's status (Pending,
// Downloading while no replica is ready yet, Ready) with its in-cluster
// URL, which the VirtualMCPServers naming it in spec.embeddingServerRef
// read (their controller watches EmbeddingServers through the reference
// index).
//
// The children carry ToolHive's labels only, and are watched by them
// (naming.EmbeddingServerSelector): a StatefulSet ToolHive's operator made
// is this controller's as it stands, and the other way round. The
// finalizer is ToolHive's too. sync.go is the only file that writes.
package embeddingserver
