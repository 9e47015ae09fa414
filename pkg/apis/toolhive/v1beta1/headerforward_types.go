package v1beta1

// HeaderForwardConfig are headers an MCPRemoteProxy adds to every request
// it sends to the remote MCP server, such as a tenant id or an API key the
// remote server expects. ToolHive's runner sets them on the request, over
// any value the client sent.
type HeaderForwardConfig struct {
	// AddPlaintextHeaders are header names and literal values. The values
	// are stored in the MCPRemoteProxy and in the proxy's RunConfig
	// ConfigMap, readable by anyone who can read those: put credentials in
	// addHeadersFromSecret instead.
	// +optional
	AddPlaintextHeaders map[string]string `json:"addPlaintextHeaders,omitempty"`
	// AddHeadersFromSecret are headers whose values are keys of Secrets in
	// the proxy's namespace. The value reaches the proxy container as an
	// environment variable from a secretKeyRef; it is never copied into a
	// ConfigMap or the status.
	// +listType=map
	// +listMapKey=headerName
	// +optional
	AddHeadersFromSecret []HeaderFromSecret `json:"addHeadersFromSecret,omitempty"`
}

// HeaderFromSecret is one header whose value is a key of a Secret.
type HeaderFromSecret struct {
	// HeaderName is the HTTP header, e.g. X-API-Key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +required
	HeaderName string `json:"headerName"`
	// ValueSecretRef is the Secret and key that hold the header's value.
	// +required
	ValueSecretRef *SecretKeyRef `json:"valueSecretRef"`
}
