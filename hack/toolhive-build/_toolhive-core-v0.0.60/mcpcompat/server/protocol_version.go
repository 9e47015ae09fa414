// This file is not part of any toolhive-core release. It is hivekeeper's
// overlay on toolhive-core v0.0.59 (hack/toolhive-build/_toolhive-core-v0.0.60/,
// assembled by hack/toolhive-binaries.sh): ToolHive v0.66.0 requires
// toolhive-core v0.0.60, whose source the Go module proxy does not serve, and
// its vmcp calls a name v0.0.59 lacks. The name is written here for hivekeeper
// from ToolHive v0.66.0's call site (pkg/vmcp/server/legacy_url_elicitation.go)
// and from v0.0.59's own SessionWithClientCapabilities, whose known-flag rules
// it follows.

package server

import (
	"slices"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionWithProtocolVersion is a ClientSession that can report the MCP
// protocol version negotiated in its initialize handshake. A handler reaches
// it by type-asserting the session ClientSessionFromContext returns; vmcp uses
// it to send a revision-specific answer (the 2025-11-25 URL elicitation error)
// only to a session that negotiated that revision.
type SessionWithProtocolVersion interface {
	ClientSession
	// NegotiatedProtocolVersion returns the protocol version the server
	// answered the client's initialize with, and known=true, when this
	// instance saw that initialize. known is false, and the version empty,
	// in the same cases as DeclaredClientCapabilities: a rehydrated session
	// (its initialize state is seeded, not negotiated), a stateless request,
	// an SSE or stdio session, and before initialize has completed. Callers
	// must treat that as "unknown", not as any particular version.
	NegotiatedProtocolVersion() (version string, known bool)
}

var _ SessionWithProtocolVersion = (*clientSession)(nil)

// NegotiatedProtocolVersion implements SessionWithProtocolVersion. go-sdk
// keeps the negotiated version in its session state without exporting it, so
// it is derived from what go-sdk does export: the version the client asked
// for (InitializeParams) and the versions the server supports (the shim sets
// no ServerOptions.SupportedProtocolVersions, so all of go-sdk's), by go-sdk's
// rule (negotiatedInitializeVersion).
func (c *clientSession) NegotiatedProtocolVersion() (string, bool) {
	ss := c.goSession.Load()
	if ss == nil || c.initializedOn.Load() != ss {
		return "", false
	}
	params := ss.InitializeParams()
	if params == nil {
		return "", false
	}
	return negotiatedInitializeVersion(params.ProtocolVersion, gosdk.SupportedProtocolVersions()), true
}

// firstRequestScopedVersion is the first MCP revision without an initialize
// handshake (a client states its version with each request); go-sdk never
// answers an initialize with it or a later one.
const firstRequestScopedVersion = "2026-07-28"

// negotiatedInitializeVersion is go-sdk's answer to an initialize request for
// version requested, given the versions the server supports, newest first:
// the requested version when the server supports it and it is a revision that
// has initialize, else the newest supported revision that has initialize,
// else 2025-11-25.
func negotiatedInitializeVersion(requested string, supported []string) string {
	if requested < firstRequestScopedVersion && slices.Contains(supported, requested) {
		return requested
	}
	for _, v := range supported {
		if v < firstRequestScopedVersion {
			return v
		}
	}
	return "2025-11-25"
}
