package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of every ToolHive kind.
const GroupName = "toolhive.stacklok.dev"

// SchemeGroupVersion is the group and version these types are served under.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

// Kind names, used in owner references, the reference index and status lists.
const (
	KindMCPServer             = "MCPServer"
	KindMCPOIDCConfig         = "MCPOIDCConfig"
	KindMCPRemoteProxy        = "MCPRemoteProxy"
	KindVirtualMCPServer      = "VirtualMCPServer"
	KindMCPGroup              = "MCPGroup"
	KindMCPToolConfig         = "MCPToolConfig"
	KindMCPAuthzConfig        = "MCPAuthzConfig"
	KindMCPExternalAuthConfig = "MCPExternalAuthConfig"
	KindMCPTelemetryConfig    = "MCPTelemetryConfig"
	KindMCPWebhookConfig      = "MCPWebhookConfig"
	KindMCPServerEntry        = "MCPServerEntry"
	KindEmbeddingServer       = "EmbeddingServer"
	KindMCPRegistry           = "MCPRegistry"
	// KindVirtualMCPCompositeToolDefinition is the composite tool kind.
	KindVirtualMCPCompositeToolDefinition = "VirtualMCPCompositeToolDefinition"
)

// Kind takes an unqualified kind and returns a group-qualified GroupKind.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&MCPServer{}, &MCPServerList{},
		&MCPOIDCConfig{}, &MCPOIDCConfigList{},
		&MCPRemoteProxy{}, &MCPRemoteProxyList{},
		&VirtualMCPServer{}, &VirtualMCPServerList{},
		&MCPGroup{}, &MCPGroupList{},
		&MCPToolConfig{}, &MCPToolConfigList{},
		&MCPAuthzConfig{}, &MCPAuthzConfigList{},
		&MCPExternalAuthConfig{}, &MCPExternalAuthConfigList{},
		&MCPTelemetryConfig{}, &MCPTelemetryConfigList{},
		&MCPWebhookConfig{}, &MCPWebhookConfigList{},
		&MCPServerEntry{}, &MCPServerEntryList{},
		&VirtualMCPCompositeToolDefinition{}, &VirtualMCPCompositeToolDefinitionList{},
		&EmbeddingServer{}, &EmbeddingServerList{},
		&MCPRegistry{}, &MCPRegistryList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
