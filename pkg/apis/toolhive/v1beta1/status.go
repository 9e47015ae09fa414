package v1beta1

// GetStatus returns the server's status, for the controllers' shared sync
// outline, which compares it with the status it is about to write.
func (s *MCPServer) GetStatus() *MCPServerStatus { return &s.Status }

// GetStatus returns the proxy's status (see MCPServer.GetStatus).
func (p *MCPRemoteProxy) GetStatus() *MCPRemoteProxyStatus { return &p.Status }

// GetStatus returns the server's status (see MCPServer.GetStatus).
func (v *VirtualMCPServer) GetStatus() *VirtualMCPServerStatus { return &v.Status }

// GetStatus returns the config's status, for the shared config controller
// (see MCPServer.GetStatus).
func (c *MCPOIDCConfig) GetStatus() *ConfigStatus { return &c.Status }

// GetStatus returns the config's status (see MCPOIDCConfig.GetStatus).
func (c *MCPToolConfig) GetStatus() *ConfigStatus { return &c.Status }

// GetStatus returns the config's status (see MCPOIDCConfig.GetStatus).
func (c *MCPAuthzConfig) GetStatus() *ConfigStatus { return &c.Status }

// GetStatus returns the config's status (see MCPOIDCConfig.GetStatus).
func (c *MCPExternalAuthConfig) GetStatus() *ConfigStatus { return &c.Status }

// GetStatus returns the config's status (see MCPOIDCConfig.GetStatus).
func (c *MCPTelemetryConfig) GetStatus() *ConfigStatus { return &c.Status }

// GetStatus returns the config's status (see MCPOIDCConfig.GetStatus).
func (c *MCPWebhookConfig) GetStatus() *ConfigStatus { return &c.Status }

// GetStatus returns the shared part of the definition's status, the part
// the config controller owns (see MCPOIDCConfig.GetStatus).
func (c *VirtualMCPCompositeToolDefinition) GetStatus() *ConfigStatus { return &c.Status.ConfigStatus }

// GetStatus returns the entry's status (see MCPServer.GetStatus).
func (e *MCPServerEntry) GetStatus() *MCPServerEntryStatus { return &e.Status }
