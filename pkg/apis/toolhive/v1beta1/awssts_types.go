package v1beta1

// AWSStsConfig (type awsSts) exchanges the caller's token (an OIDC JWT)
// for temporary AWS credentials with STS AssumeRoleWithWebIdentity and
// signs the requests to the backend with SigV4. The role is the first
// matching roleMappings entry (lowest priority first), else
// fallbackRoleArn; at least one of them must be set (the config's Valid
// condition says so). ToolHive's schema at the pinned release.
type AWSStsConfig struct {
	// Region of the STS endpoint and of the signed service.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[a-z]{2}(-[a-z]+)+-\d+$`
	// +required
	Region string `json:"region"`
	// Service is the SigV4 service name.
	// +kubebuilder:default="aws-mcp"
	// +optional
	Service string `json:"service,omitempty"`
	// FallbackRoleArn is the role assumed when no mapping matches.
	// +kubebuilder:validation:Pattern=`^arn:(aws|aws-cn|aws-us-gov):iam::\d{12}:role/[\w+=,.@\-_/]+$`
	// +optional
	FallbackRoleArn string `json:"fallbackRoleArn,omitempty"`
	// RoleMappings select a role by the caller's claims.
	// +listType=atomic
	// +optional
	RoleMappings []AWSRoleMapping `json:"roleMappings,omitempty"`
	// RoleClaim is the claim a mapping's claim value is looked up in.
	// +kubebuilder:default="groups"
	// +optional
	RoleClaim string `json:"roleClaim,omitempty"`
	// SessionDuration of the credentials, in seconds.
	// +kubebuilder:validation:Minimum=900
	// +kubebuilder:validation:Maximum=43200
	// +kubebuilder:default=3600
	// +optional
	SessionDuration *int32 `json:"sessionDuration,omitempty"`
	// SessionNameClaim is the claim that names the role session.
	// +kubebuilder:default="sub"
	// +optional
	SessionNameClaim string `json:"sessionNameClaim,omitempty"`
	// SubjectProviderName selects an embedded authorization server's
	// upstream provider as the token's source; it has no effect on an
	// MCPServer or MCPRemoteProxy (ToolHive's vMCP reads it).
	// +optional
	SubjectProviderName string `json:"subjectProviderName,omitempty"`
}

// AWSRoleMapping selects roleArn when the caller's claims match: claim (a
// value of the config's roleClaim) or matcher (a CEL expression over
// claims), exactly one of them.
type AWSRoleMapping struct {
	// Claim is a value the roleClaim claim must contain.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Claim string `json:"claim,omitempty"`
	// Matcher is a CEL expression over the variable claims.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Matcher string `json:"matcher,omitempty"`
	// RoleArn is the role to assume.
	// +kubebuilder:validation:Pattern=`^arn:(aws|aws-cn|aws-us-gov):iam::\d{12}:role/[\w+=,.@\-_/]+$`
	// +required
	RoleArn string `json:"roleArn"`
	// Priority orders the mappings, lowest first; without one a mapping
	// comes after all that have one, in list order.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Priority *int32 `json:"priority,omitempty"`
}
