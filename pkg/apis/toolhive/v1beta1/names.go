package v1beta1

// The longest names the kinds with children accept, enforced by a CEL rule
// on each CRD (the literal in the marker must equal the constant; the
// integration suite checks both ends of each limit on a real API server).
//
// Every child is named after its custom resource plus a fixed prefix or
// suffix, and the API server limits child names: a Service name is a
// DNS-1035 label, at most 63 characters; every other child's name is a
// DNS-1123 subdomain, at most 253. The resource's name is also a label
// value on every child (toolhive-name, app.kubernetes.io/instance), at
// most 63. So the limit of a kind is 63 minus the longest prefix and suffix
// of a Service it leads to; the other children fit with room to spare.
// Each controller package has a test that derives the limit from its name
// functions and the API machinery's validators.
//
// Without it, a long name is accepted, some children are created, and the
// Service is refused: a workload half made that can never converge.
//
// The rules hold on create only ("oldSelf.hasValue() || ..."): a name
// cannot change, and an object created before the rule existed must stay
// updatable, or its finalizer could never be released.
const (
	// MaxMCPServerNameLength: the longest Service is the one the proxy
	// runner creates, mcp-<name>-headless (13 more characters); the proxy
	// Service mcp-<name>-proxy adds 10.
	MaxMCPServerNameLength = 63 - len("mcp-") - len("-headless")
	// MaxMCPRemoteProxyNameLength: the proxy Service
	// mcp-<name>-remote-proxy adds 17 characters.
	MaxMCPRemoteProxyNameLength = 63 - len("mcp-") - len("-remote-proxy")
	// MaxVirtualMCPServerNameLength: the Service vmcp-<name> adds 5.
	MaxVirtualMCPServerNameLength = 63 - len("vmcp-")
)
