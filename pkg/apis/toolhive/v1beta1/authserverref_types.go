package v1beta1

// AuthServerRef names the resource that configures a workload's embedded
// OAuth authorization server. MCPExternalAuthConfig (of type
// embeddedAuthServer) is the only kind ToolHive accepts.
type AuthServerRef struct {
	// Kind of the referenced resource.
	// +kubebuilder:validation:Enum=MCPExternalAuthConfig
	// +kubebuilder:default=MCPExternalAuthConfig
	Kind string `json:"kind"`
	// Name of the referenced resource, in the workload's namespace.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}
