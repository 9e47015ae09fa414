package schema

// AWSStsConfig is ToolHive's awssts.Config: the runner exchanges the
// caller's token for temporary AWS credentials (AssumeRoleWithWebIdentity)
// of the role a mapping selects, and signs requests with SigV4. It holds
// no secret. subject_provider_name is left out, as ToolHive's operator
// leaves it out for an MCPServer or MCPRemoteProxy (vMCP reads it).
type AWSStsConfig struct {
	Region           string           `json:"region"`
	Service          string           `json:"service"`
	FallbackRoleArn  string           `json:"fallback_role_arn,omitempty"`
	RoleMappings     []AWSRoleMapping `json:"role_mappings,omitempty"`
	RoleClaim        string           `json:"role_claim,omitempty"`
	SessionDuration  int32            `json:"session_duration,omitempty"`
	SessionNameClaim string           `json:"session_name_claim,omitempty"`
}

// AWSRoleMapping is ToolHive's awssts.RoleMapping: a claim value or a CEL
// matcher that selects a role. A nil priority is the lowest.
type AWSRoleMapping struct {
	Claim    string `json:"claim,omitempty"`
	Matcher  string `json:"matcher,omitempty"`
	RoleArn  string `json:"role_arn"`
	Priority *int32 `json:"priority,omitempty"`
}
