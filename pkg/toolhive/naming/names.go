package naming

import (
	"fmt"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// The names of the children of every workload kind, and how an MCPServer is
// addressed. They are ToolHive's names, which its runtime and users rely on, kept in one place: the
// VirtualMCPServer controller addresses MCPServers, tests and the
// benchmark look children up by these names, and the CRDs' name limits are
// derived from them.

// RunConfigName is the RunConfig ConfigMap of an MCPServer or MCPRemoteProxy.
func RunConfigName(n string) string { return n + "-runconfig" }

// AuthzInlineName is the ConfigMap that holds an MCPServer's or
// MCPRemoteProxy's inline authorization config.
func AuthzInlineName(n string) string { return n + "-authz-inline" }

// ProxyRunnerName names an MCPServer's proxy-runner ServiceAccount and
// RoleBinding.
func ProxyRunnerName(n string) string { return n + "-proxy-runner" }

// BackendServiceAccountName is an MCPServer's backend pod account when the
// spec names none.
func BackendServiceAccountName(n string) string { return n + "-sa" }

// MCPServerServiceName is an MCPServer's proxy Service.
func MCPServerServiceName(n string) string { return "mcp-" + n + "-proxy" }

// RemoteProxyRunnerName names an MCPRemoteProxy's runner ServiceAccount
// and RoleBinding.
func RemoteProxyRunnerName(n string) string { return n + "-remote-proxy-runner" }

// RemoteProxyServiceName is an MCPRemoteProxy's proxy Service.
func RemoteProxyServiceName(n string) string { return "mcp-" + n + "-remote-proxy" }

// VMCPServiceName is a VirtualMCPServer's Service.
func VMCPServiceName(n string) string { return "vmcp-" + n }

// VMCPServerURL is the in-cluster address clients of a VirtualMCPServer
// use, its status.url.
func VMCPServerURL(v *thv1.VirtualMCPServer) string {
	return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", VMCPServiceName(v.Name), v.Namespace, VMCPPort)
}

// VMCPConfigMapName is a VirtualMCPServer's configuration ConfigMap.
func VMCPConfigMapName(n string) string { return n + "-vmcp-config" }

// VMCPHMACSecretName is the Secret of a VirtualMCPServer's session HMAC
// key.
func VMCPHMACSecretName(n string) string { return n + "-hmac-secret" }

// VMCPServiceAccountName is the ServiceAccount hivekeeper creates for a
// VirtualMCPServer whose spec names none.
func VMCPServiceAccountName(n string) string { return n + "-vmcp" }

// MCPServerRunnerStatefulSetName is the StatefulSet the proxy runner of
// an MCPServer creates, which the MCPServer's finalizer removes.
func MCPServerRunnerStatefulSetName(n string) string { return n }

// MCPServerRunnerServiceNames are the Services the proxy runner of an
// MCPServer creates, which the MCPServer's finalizer removes.
func MCPServerRunnerServiceNames(n string) []string {
	return []string{"mcp-" + n + "-headless", "mcp-" + n}
}

// MCPServerTransport returns the transport with the schema default
// applied, so a build never depends on whether the object passed through
// the server.
func MCPServerTransport(s *thv1.MCPServer) string {
	if s.Spec.Transport == "" {
		return thv1.TransportStdio
	}
	return s.Spec.Transport
}

// MCPServerProxyMode is what an MCPServer's proxy exposes: the configured
// mode for stdio, the transport itself for the HTTP transports.
func MCPServerProxyMode(s *thv1.MCPServer) string {
	if t := MCPServerTransport(s); t != thv1.TransportStdio {
		return t
	}
	if s.Spec.ProxyMode == "" {
		return thv1.TransportStreamableHTTP
	}
	return s.Spec.ProxyMode
}

// MCPServerProxyPort returns an MCPServer's proxy port with its default.
func MCPServerProxyPort(s *thv1.MCPServer) int32 {
	if s.Spec.ProxyPort == 0 {
		return DefaultProxyPort
	}
	return s.Spec.ProxyPort
}

// MCPServerAddress is the in-cluster base URL of an MCPServer's proxy.
func MCPServerAddress(s *thv1.MCPServer) string {
	return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", MCPServerServiceName(s.Name), s.Namespace, MCPServerProxyPort(s))
}

// MCPServerURL is the in-cluster address clients of an MCPServer use, its
// status.url.
func MCPServerURL(s *thv1.MCPServer) string {
	base := MCPServerAddress(s)
	if MCPServerProxyMode(s) == thv1.TransportSSE {
		return base + "/sse#" + s.Name
	}
	return base + "/mcp"
}

// OIDCConfigName is the MCPOIDCConfig a reference names, "" for none.
func OIDCConfigName(ref *thv1.OIDCConfigReference) string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// RemoteProxyTransport returns an MCPRemoteProxy's transport with the
// schema default applied, so a build never depends on whether the object
// passed through the server.
func RemoteProxyTransport(p *thv1.MCPRemoteProxy) string {
	if p.Spec.Transport == "" {
		return thv1.TransportStreamableHTTP
	}
	return p.Spec.Transport
}

// RemoteProxyPort returns an MCPRemoteProxy's proxy port with its default.
func RemoteProxyPort(p *thv1.MCPRemoteProxy) int32 {
	if p.Spec.ProxyPort == 0 {
		return DefaultProxyPort
	}
	return p.Spec.ProxyPort
}

// RemoteProxyURL is the in-cluster MCP endpoint of an MCPRemoteProxy: its
// Service with the path of its transport, /mcp or /sse. It is the proxy's
// status.url, and the URL a vMCP aggregating the proxy connects to.
func RemoteProxyURL(p *thv1.MCPRemoteProxy) string {
	base := fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", RemoteProxyServiceName(p.Name), p.Namespace, RemoteProxyPort(p))
	if RemoteProxyTransport(p) == thv1.TransportSSE {
		return base + "/sse"
	}
	return base + "/mcp"
}

// EmbeddingServerPort is an EmbeddingServer's port with its default.
func EmbeddingServerPort(e *thv1.EmbeddingServer) int32 {
	if e.Spec.Port > 0 {
		return e.Spec.Port
	}
	return DefaultEmbeddingServerPort
}

// EmbeddingServerURL is the in-cluster address of an EmbeddingServer, its
// status.url: its Service, which has the server's own name.
func EmbeddingServerURL(e *thv1.EmbeddingServer) string {
	return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", e.Name, e.Namespace, EmbeddingServerPort(e))
}

// RegistryAPIName names an MCPRegistry's registry API Deployment and
// Service.
func RegistryAPIName(n string) string { return n + "-api" }

// RegistryAPIAccountName names the registry API's ServiceAccount, Role
// and RoleBinding.
func RegistryAPIAccountName(n string) string { return n + "-registry-api" }

// RegistryConfigMapName is an MCPRegistry's configuration ConfigMap.
func RegistryConfigMapName(n string) string { return n + "-registry-server-config" }

// RegistryAPIURL is the in-cluster address of an MCPRegistry's API, its
// status.url, as ToolHive's operator writes it (the Service's short name).
func RegistryAPIURL(r *thv1.MCPRegistry) string {
	return fmt.Sprintf("http://%s.%s:%d", RegistryAPIName(r.Name), r.Namespace, RegistryAPIPort)
}
