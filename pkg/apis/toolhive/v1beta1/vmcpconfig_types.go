package v1beta1

// A VirtualMCPServer's spec.config: the configuration file of ToolHive's
// vmcp (config.yaml), in its keys. The operator builds config.yaml from it;
// some sections are replaced by what other spec fields and referenced
// configs say (see the VirtualMCPServer controller). Names, JSON keys,
// enums, defaults and CEL rules are those of ToolHive's CRD at the API
// release; the JSON tags (which fields are omitted when empty) follow
// vmcp's own types, so a section hivekeeper passes through is written as
// ToolHive's operator writes it. Every object keeps fields of a later
// release, as spec.config always has.

// VMCPDuration is a Go duration such as "30s" or "1m30s", kept as written.
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
type VMCPDuration string

// VirtualMCPConfig is spec.config.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:Type=object
type VirtualMCPConfig struct {
	// Name of the virtual server; the operator sets the resource's name.
	// +optional
	Name string `json:"name,omitempty"`
	// GroupRef is the MCPGroup aggregated; the operator sets
	// spec.groupRef's.
	// +optional
	GroupRef string `json:"groupRef,omitempty"`
	// Backends are static backends, listed instead of discovered.
	// +optional
	Backends []VMCPStaticBackend `json:"backends,omitempty"`
	// IncomingAuth is how clients authenticate; the operator builds it from
	// spec.incomingAuth.
	// +optional
	IncomingAuth *VMCPIncomingAuth `json:"incomingAuth,omitempty"`
	// OutgoingAuth is how the vMCP authenticates to backends; the operator
	// builds it from spec.outgoingAuth.
	// +optional
	OutgoingAuth *VMCPOutgoingAuth `json:"outgoingAuth,omitempty"`
	// Aggregation is how the backends' tools are merged.
	// +optional
	Aggregation *VMCPAggregation `json:"aggregation,omitempty"`
	// CompositeTools are workflows of backend tool calls defined inline.
	// +optional
	CompositeTools []CompositeToolSpec `json:"compositeTools,omitempty"`
	// CompositeToolRefs name VirtualMCPCompositeToolDefinitions in the
	// same namespace.
	// +optional
	CompositeToolRefs []VMCPCompositeToolRef `json:"compositeToolRefs,omitempty"`
	// Operational are timeouts, health checks and failure handling.
	// +optional
	Operational *VMCPOperational `json:"operational,omitempty"`
	// Metadata are free-form key/value pairs.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
	// Telemetry of the vMCP; the operator builds it from
	// spec.telemetryConfigRef.
	// +optional
	Telemetry *VMCPTelemetry `json:"telemetry,omitempty"`
	// Audit logs an audit event for every MCP request.
	// +optional
	Audit *VMCPAudit `json:"audit,omitempty"`
	// Optimizer replaces the full tool list with search tools backed by
	// embeddings.
	// +optional
	Optimizer *VMCPOptimizer `json:"optimizer,omitempty"`
	// CodeMode lets clients run scripts that call tools.
	// +optional
	CodeMode *VMCPCodeMode `json:"codeMode,omitempty"`
	// SessionStorage of the vMCP; the operator builds it from
	// spec.sessionStorage.
	// +optional
	SessionStorage *VMCPSessionStorage `json:"sessionStorage,omitempty"`
	// RateLimiting limits tools/call requests; it needs Redis session
	// storage.
	// +optional
	RateLimiting *RateLimitConfig `json:"rateLimiting,omitempty"`
	// PassthroughHeaders are incoming headers forwarded to every backend.
	// +listType=atomic
	// +optional
	PassthroughHeaders []string `json:"passthroughHeaders,omitempty"`
}

// VMCPStaticBackend is a backend named in the configuration.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPStaticBackend struct {
	// Name of the backend, which prefixes and filters refer to.
	// +required
	Name string `json:"name"`
	// URL of the backend's MCP endpoint.
	// +kubebuilder:validation:Pattern=`^https?://`
	// +required
	URL string `json:"url"`
	// Transport the backend speaks.
	// +kubebuilder:validation:Enum=sse;streamable-http
	// +required
	Transport string `json:"transport"`
	// Type is entry for an MCPServerEntry, empty otherwise.
	// +kubebuilder:validation:Enum=entry;""
	// +optional
	Type string `json:"type,omitempty"`
	// CABundlePath is a CA bundle file trusted for the backend.
	// +optional
	CABundlePath string `json:"caBundlePath,omitempty"`
	// Metadata are free-form key/value pairs of the backend.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// VMCPIncomingAuth is config.yaml's incoming authentication.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPIncomingAuth struct {
	// Type is anonymous or oidc.
	Type string `json:"type"`
	// OIDC validates the clients' tokens.
	OIDC *VMCPOIDC `json:"oidc,omitempty"`
	// Authz authorizes requests.
	Authz *VMCPAuthz `json:"authz,omitempty"`
}

// VMCPOIDC is the identity provider incoming tokens come from.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPOIDC struct {
	// Issuer URL.
	// +kubebuilder:validation:Pattern=`^https?://`
	Issuer string `json:"issuer"`
	// ClientID of the vMCP at the provider.
	ClientID string `json:"clientId"`
	// ClientSecretEnv names the variable holding the client secret.
	ClientSecretEnv string `json:"clientSecretEnv,omitempty"`
	// Audience incoming tokens must carry.
	Audience string `json:"audience"`
	// Resource is the protected-resource URL advertised to clients.
	Resource string `json:"resource,omitempty"`
	// JWKSURL of the provider's keys.
	// +optional
	JWKSURL string `json:"jwksUrl,omitempty"`
	// IntrospectionURL of the provider's token introspection.
	// +optional
	IntrospectionURL string `json:"introspectionUrl,omitempty"`
	// Scopes advertised to clients.
	Scopes []string `json:"scopes,omitempty"`
	// ProtectedResourceAllowPrivateIP allows the resource URL to resolve to
	// a private address.
	ProtectedResourceAllowPrivateIP bool `json:"protectedResourceAllowPrivateIp,omitempty"`
	// JWKSAllowPrivateIP allows the JWKS URL to resolve to a private
	// address.
	JWKSAllowPrivateIP bool `json:"jwksAllowPrivateIp,omitempty"`
	// InsecureAllowHTTP allows http:// URLs. For development only.
	InsecureAllowHTTP bool `json:"insecureAllowHttp,omitempty"`
	// CABundlePath is a CA bundle file trusted for the provider.
	// +optional
	CABundlePath string `json:"caBundlePath,omitempty"`
}

// VMCPAuthz is the authorization of incoming requests.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPAuthz struct {
	// Type of the authorizer (cedar).
	Type string `json:"type"`
	// Policies are Cedar policies.
	Policies []string `json:"policies,omitempty"`
	// EntitiesJSON are Cedar entities, as JSON.
	// +optional
	EntitiesJSON string `json:"entitiesJson,omitempty"`
	// PrimaryUpstreamProvider is the embedded authorization server's
	// upstream whose claims the policies read.
	// +optional
	PrimaryUpstreamProvider string `json:"primaryUpstreamProvider,omitempty"`
	// GroupClaimName is the claim listing the user's groups.
	// +optional
	GroupClaimName string `json:"groupClaimName,omitempty"`
	// RoleClaimName is the claim listing the user's roles.
	// +optional
	RoleClaimName string `json:"roleClaimName,omitempty"`
	// GroupEntityType is the Cedar entity type of groups.
	// +optional
	GroupEntityType string `json:"groupEntityType,omitempty"`
}

// VMCPOutgoingAuth is config.yaml's outgoing authentication.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPOutgoingAuth struct {
	// Source is inline or discovered.
	Source string `json:"source"`
	// Default strategy of backends without their own.
	Default *VMCPBackendAuthStrategy `json:"default,omitempty"`
	// Backends are the strategies per backend name.
	Backends map[string]VMCPBackendAuthStrategy `json:"backends,omitempty"`
}

// VMCPBackendAuthStrategy is how the vMCP authenticates to one backend: a
// type and the block of that type.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPBackendAuthStrategy struct {
	// Type of the strategy (unauthenticated, header_injection,
	// token_exchange, upstream_inject, aws_sts, obo, xaa).
	Type string `json:"type"`
	// HeaderInjection adds a header.
	HeaderInjection *VMCPHeaderInjection `json:"headerInjection,omitempty"`
	// TokenExchange exchanges the caller's token (RFC 8693).
	TokenExchange *VMCPTokenExchange `json:"tokenExchange,omitempty"`
	// UpstreamInject sends an upstream provider's token.
	UpstreamInject *VMCPUpstreamInject `json:"upstreamInject,omitempty"`
	// AwsSts signs requests with AWS STS credentials.
	AwsSts *VMCPAwsSts `json:"awsSts,omitempty"`
	// OBO is Entra ID's on-behalf-of exchange.
	OBO *VMCPOBO `json:"obo,omitempty"`
	// XAA is cross-app access.
	XAA *VMCPXAA `json:"xaa,omitempty"`
}

// VMCPHeaderInjection is a header and its value, literal or from a
// variable.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPHeaderInjection struct {
	// HeaderName is the header.
	HeaderName string `json:"headerName"`
	// HeaderValue is a literal value.
	HeaderValue string `json:"headerValue,omitempty"`
	// HeaderValueEnv names the variable holding the value.
	HeaderValueEnv string `json:"headerValueEnv,omitempty"`
}

// VMCPTokenExchange is an RFC 8693 token exchange.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPTokenExchange struct {
	// TokenURL of the token endpoint.
	TokenURL string `json:"tokenUrl"`
	// ClientID at the token endpoint.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret, literal.
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientSecretEnv names the variable holding the client secret.
	ClientSecretEnv string `json:"clientSecretEnv,omitempty"`
	// Audience of the exchanged token.
	Audience string `json:"audience,omitempty"`
	// Scopes requested.
	// +listType=atomic
	Scopes []string `json:"scopes,omitempty"`
	// SubjectTokenType of the caller's token.
	SubjectTokenType string `json:"subjectTokenType,omitempty"`
	// SubjectProviderName selects an upstream provider's token as subject.
	SubjectProviderName string `json:"subjectProviderName,omitempty"`
}

// VMCPUpstreamInject names the upstream provider whose token is sent.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPUpstreamInject struct {
	// ProviderName of the upstream provider.
	ProviderName string `json:"providerName"`
}

// VMCPAwsSts signs requests with credentials AWS STS issues for the
// caller's token.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPAwsSts struct {
	// Region of STS and of the service.
	Region string `json:"region"`
	// Service is the SigV4 service name.
	Service string `json:"service,omitempty"`
	// FallbackRoleArn is assumed when no mapping matches.
	FallbackRoleArn string `json:"fallbackRoleArn,omitempty"`
	// RoleMappings select a role by the caller's claims.
	// +listType=atomic
	RoleMappings []VMCPRoleMapping `json:"roleMappings,omitempty"`
	// RoleClaim is the claim mappings match on.
	RoleClaim string `json:"roleClaim,omitempty"`
	// SessionDuration of the credentials, in seconds.
	SessionDuration *int32 `json:"sessionDuration,omitempty"`
	// SessionNameClaim names the role session.
	SessionNameClaim string `json:"sessionNameClaim,omitempty"`
	// SubjectProviderName selects an upstream provider's token.
	SubjectProviderName string `json:"subjectProviderName,omitempty"`
}

// VMCPRoleMapping selects a role.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPRoleMapping struct {
	// Claim value that selects the role.
	Claim string `json:"claim,omitempty"`
	// Matcher is a CEL expression over the claims that selects it.
	Matcher string `json:"matcher,omitempty"`
	// RoleArn is the role.
	RoleArn string `json:"roleArn"`
	// Priority orders the mappings, lowest first.
	Priority *int `json:"priority,omitempty"`
}

// VMCPOBO is Entra ID's on-behalf-of exchange.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPOBO struct {
	// TokenURL of the token endpoint.
	// +required
	TokenURL string `json:"tokenUrl"`
	// ClientID of the exchanging application.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret, literal.
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientSecretEnv names the variable holding the client secret.
	ClientSecretEnv string `json:"clientSecretEnv,omitempty"`
	// Audience of the exchanged token.
	Audience string `json:"audience,omitempty"`
	// Scopes requested.
	// +listType=atomic
	Scopes []string `json:"scopes,omitempty"`
	// SubjectTokenProviderName selects an upstream provider's token.
	SubjectTokenProviderName string `json:"subjectTokenProviderName,omitempty"`
	// CacheSkewSeconds renews a cached token this long before expiry.
	CacheSkewSeconds *int32 `json:"cacheSkewSeconds,omitempty"`
}

// VMCPXAA is cross-app access.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPXAA struct {
	// IDPTokenURL is the identity provider's token endpoint.
	IDPTokenURL string `json:"idpTokenUrl"`
	// IDPClientID at the identity provider.
	IDPClientID string `json:"idpClientId,omitempty"`
	// IDPClientSecret, literal.
	IDPClientSecret string `json:"idpClientSecret,omitempty"`
	// IDPClientSecretEnv names the variable holding it.
	IDPClientSecretEnv string `json:"idpClientSecretEnv,omitempty"`
	// TargetTokenURL is the backend authorization server's token endpoint.
	TargetTokenURL string `json:"targetTokenUrl"`
	// InsecureTargetTokenURL allows an http:// target token URL.
	InsecureTargetTokenURL bool `json:"insecureTargetTokenUrl,omitempty"`
	// TargetClientID at the backend authorization server.
	TargetClientID string `json:"targetClientId,omitempty"`
	// TargetClientSecret, literal.
	TargetClientSecret string `json:"targetClientSecret,omitempty"`
	// TargetClientSecretEnv names the variable holding it.
	TargetClientSecretEnv string `json:"targetClientSecretEnv,omitempty"`
	// TargetAudience is the backend authorization server.
	TargetAudience string `json:"targetAudience"`
	// TargetResource is the backend resource.
	TargetResource string `json:"targetResource,omitempty"`
	// Scopes requested.
	// +listType=atomic
	Scopes []string `json:"scopes,omitempty"`
	// SubjectProviderName selects an upstream provider's ID token.
	SubjectProviderName string `json:"subjectProviderName,omitempty"`
	// SubjectTokenType of the subject token.
	SubjectTokenType string `json:"subjectTokenType,omitempty"`
}

// VMCPAggregation is how the backends' tools are merged into one list.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPAggregation struct {
	// ConflictResolution of tools with the same name: prefix, priority or
	// manual.
	// +kubebuilder:validation:Enum=prefix;priority;manual
	// +kubebuilder:default=prefix
	// +optional
	ConflictResolution string `json:"conflictResolution"`
	// ConflictResolutionConfig tunes the strategy.
	// +optional
	ConflictResolutionConfig *VMCPConflictResolution `json:"conflictResolutionConfig,omitempty"`
	// Tools filter and rename the tools of one backend each.
	// +optional
	Tools []VMCPWorkloadTools `json:"tools,omitempty"`
	// ExcludeAllTools hides every backend tool (composite tools remain).
	// +optional
	ExcludeAllTools bool `json:"excludeAllTools,omitempty"`
	// DefaultToolVisibility of tools no filter names: allow or deny.
	// +kubebuilder:validation:Enum=allow;deny
	// +optional
	DefaultToolVisibility string `json:"defaultToolVisibility,omitempty"`
}

// VMCPConflictResolution tunes conflict resolution.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPConflictResolution struct {
	// PrefixFormat of prefixed tool names; {workload} is the backend.
	// +kubebuilder:default="{workload}_"
	// +optional
	PrefixFormat string `json:"prefixFormat,omitempty"`
	// PriorityOrder of backends, first wins.
	// +optional
	PriorityOrder []string `json:"priorityOrder,omitempty"`
}

// VMCPWorkloadTools filters and renames the tools of one backend.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPWorkloadTools struct {
	// Workload is the backend's name.
	// +required
	Workload string `json:"workload"`
	// ToolConfigRef takes the filter and overrides from an MCPToolConfig.
	// +optional
	ToolConfigRef *ToolConfigReference `json:"toolConfigRef,omitempty"`
	// Filter lists the tools shown; all when empty.
	// +optional
	Filter []string `json:"filter,omitempty"`
	// Overrides rename or redescribe tools, by original name.
	// +optional
	Overrides map[string]VMCPToolOverride `json:"overrides,omitempty"`
	// ExcludeAll hides every tool of the backend.
	// +optional
	ExcludeAll bool `json:"excludeAll,omitempty"`
}

// VMCPToolOverride is what clients see of one tool instead.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPToolOverride struct {
	// Name clients see.
	// +optional
	Name string `json:"name,omitempty"`
	// Description clients see.
	// +optional
	Description string `json:"description,omitempty"`
	// Annotations replacing the tool's own.
	// +optional
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
}

// VMCPCompositeToolRef names a VirtualMCPCompositeToolDefinition.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPCompositeToolRef struct {
	// Name of the definition.
	// +required
	Name string `json:"name"`
}

// VMCPOperational are the vMCP's timeouts and failure handling.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPOperational struct {
	// LogLevel debug turns on debug logging.
	// +kubebuilder:validation:Enum=debug
	// +optional
	LogLevel string `json:"logLevel,omitempty"`
	// Timeouts of backend calls.
	// +optional
	Timeouts *VMCPTimeouts `json:"timeouts,omitempty"`
	// FailureHandling is health checking and circuit breaking.
	// +optional
	FailureHandling *VMCPFailureHandling `json:"failureHandling,omitempty"`
	// ListChanged forwards the backends' list-changed notifications.
	// +optional
	ListChanged *VMCPListChanged `json:"listChanged,omitempty"`
}

// VMCPListChanged is whether list-changed notifications are forwarded to
// clients.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPListChanged struct {
	// Enabled forwards them for every backend; true when unset.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// DisabledWorkloads are backends whose notifications are dropped.
	// +listType=set
	// +optional
	DisabledWorkloads []string `json:"disabledWorkloads,omitempty"`
}

// VMCPTimeouts are timeouts of backend calls.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPTimeouts struct {
	// Default timeout of a backend request.
	// +kubebuilder:default="30s"
	// +optional
	Default VMCPDuration `json:"default,omitempty"`
	// PerWorkload timeouts, by backend name.
	// +optional
	PerWorkload map[string]VMCPDuration `json:"perWorkload,omitempty"`
	// BackendInit bounds how long session initialisation waits for one
	// backend to connect and answer, even below that backend's request
	// timeout.
	// +optional
	BackendInit VMCPDuration `json:"backendInit,omitempty"`
}

// VMCPFailureHandling is health checking and circuit breaking of backends.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPFailureHandling struct {
	// HealthCheckInterval between health checks.
	// +kubebuilder:default="30s"
	// +optional
	HealthCheckInterval VMCPDuration `json:"healthCheckInterval,omitempty"`
	// UnhealthyThreshold is the failed checks that mark a backend
	// unhealthy.
	// +kubebuilder:default=3
	// +optional
	UnhealthyThreshold int `json:"unhealthyThreshold,omitempty"`
	// HealthCheckTimeout of one check.
	// +kubebuilder:default="10s"
	// +optional
	HealthCheckTimeout VMCPDuration `json:"healthCheckTimeout,omitempty"`
	// StatusReportingInterval between status reports.
	// +kubebuilder:default="30s"
	// +optional
	StatusReportingInterval VMCPDuration `json:"statusReportingInterval,omitempty"`
	// PartialFailureMode: fail, or best_effort to serve the healthy
	// backends.
	// +kubebuilder:validation:Enum=fail;best_effort
	// +kubebuilder:default=fail
	// +optional
	PartialFailureMode string `json:"partialFailureMode,omitempty"`
	// CircuitBreaker stops calling a failing backend for a while.
	// +optional
	CircuitBreaker *VMCPCircuitBreaker `json:"circuitBreaker,omitempty"`
}

// VMCPCircuitBreaker is a backend's circuit breaker.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPCircuitBreaker struct {
	// Enabled turns it on.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// FailureThreshold is the failures that open the circuit.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +optional
	FailureThreshold int `json:"failureThreshold,omitempty"`
	// Timeout before an open circuit is tried again, at least 1s.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:XValidation:rule="self == '' || duration(self) >= duration('1s')",message="timeout is at least 1s"
	// +optional
	Timeout VMCPDuration `json:"timeout,omitempty"`
}

// VMCPTelemetry is the vMCP's OpenTelemetry and Prometheus setup.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPTelemetry struct {
	// Endpoint of the OTLP collector.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// ServiceName reported.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// ServiceVersion reported.
	// +optional
	ServiceVersion string `json:"serviceVersion,omitempty"`
	// TracingEnabled exports traces.
	// +kubebuilder:default=false
	// +optional
	TracingEnabled bool `json:"tracingEnabled"`
	// MetricsEnabled exports metrics over OTLP.
	// +kubebuilder:default=false
	// +optional
	MetricsEnabled bool `json:"metricsEnabled"`
	// SamplingRate of traces, a decimal between 0 and 1.
	// +kubebuilder:default="0.05"
	// +optional
	SamplingRate string `json:"samplingRate,omitempty"`
	// Headers sent to the collector.
	// +optional
	Headers map[string]string `json:"headers,omitempty"`
	// Insecure talks to the collector without TLS.
	// +kubebuilder:default=false
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// EnablePrometheusMetricsPath serves /metrics.
	// +kubebuilder:default=false
	// +optional
	EnablePrometheusMetricsPath bool `json:"enablePrometheusMetricsPath,omitempty"`
	// PrometheusPort serves /metrics on a port of its own.
	// +optional
	PrometheusPort int `json:"prometheusPort,omitempty"`
	// MetricsOnTransportPort serves /metrics on the MCP port.
	// +optional
	MetricsOnTransportPort *bool `json:"metricsOnTransportPort,omitempty"`
	// EnvironmentVariables whose values become span attributes.
	// +optional
	EnvironmentVariables []string `json:"environmentVariables,omitempty"`
	// CustomAttributes added to every span and metric.
	// +optional
	CustomAttributes map[string]string `json:"customAttributes,omitempty"`
	// UseLegacyAttributes also emits the attribute names of earlier
	// releases.
	// +kubebuilder:default=true
	// +optional
	UseLegacyAttributes bool `json:"useLegacyAttributes"`
	// CACertPath is a CA bundle file trusted for the collector.
	// +optional
	CACertPath string `json:"caCertPath,omitempty"`
}

// VMCPAudit is the vMCP's audit log.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPAudit struct {
	// Enabled turns the audit log on.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Component named in the events; the operator sets the server's name
	// when unset.
	// +optional
	Component string `json:"component,omitempty"`
	// EventTypes logged; all when empty.
	// +optional
	EventTypes []string `json:"eventTypes,omitempty"`
	// ExcludeEventTypes not logged.
	// +optional
	ExcludeEventTypes []string `json:"excludeEventTypes,omitempty"`
	// IncludeRequestData logs request bodies.
	// +kubebuilder:default=false
	// +optional
	IncludeRequestData bool `json:"includeRequestData,omitempty"`
	// IncludeResponseData logs response bodies.
	// +kubebuilder:default=false
	// +optional
	IncludeResponseData bool `json:"includeResponseData,omitempty"`
	// DetectApplicationErrors marks responses carrying an MCP error.
	// +kubebuilder:default=true
	// +optional
	DetectApplicationErrors *bool `json:"detectApplicationErrors,omitempty"`
	// MaxDataSize of logged bodies, in bytes.
	// +kubebuilder:default=1024
	// +optional
	MaxDataSize int `json:"maxDataSize,omitempty"`
	// MaxDelegationDepth of token delegation chains logged.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=10
	// +optional
	MaxDelegationDepth *int `json:"maxDelegationDepth,omitempty"`
	// LogFile the events are written to; standard output when unset.
	// +optional
	LogFile string `json:"logFile,omitempty"`
}

// VMCPEmbeddingHeaderValue is the value of a header sent to the embedding
// service: no control characters but tab.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=8192
// +kubebuilder:validation:Pattern=`^[^\x00-\x08\x0A-\x1F\x7F]*$`
type VMCPEmbeddingHeaderValue string

// VMCPOptimizer replaces the full tool list with search over embeddings.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!has(self.embeddingHeaders) || (has(self.embeddingProvider) && self.embeddingProvider == 'openai')",message="embeddingHeaders need embeddingProvider openai"
// +kubebuilder:validation:XValidation:rule=`!has(self.embeddingHeaders) || self.embeddingHeaders.all(k, k.matches('^[!#$%&\\x27*+.^_\\x60|~0-9A-Za-z-]+$') && !(k.lowerAscii() in ['authorization', 'content-type']))`,message="embeddingHeaders keys are HTTP header names other than Authorization and Content-Type"
type VMCPOptimizer struct {
	// EmbeddingService is the URL of the embedding service.
	// +optional
	EmbeddingService string `json:"embeddingService,omitempty"`
	// EmbeddingServiceTimeout of a request to it.
	// +kubebuilder:default="30s"
	// +optional
	EmbeddingServiceTimeout VMCPDuration `json:"embeddingServiceTimeout,omitempty"`
	// EmbeddingProvider is tei (Text Embeddings Inference) or openai.
	// +kubebuilder:validation:Enum=tei;openai
	// +kubebuilder:default="tei"
	// +optional
	EmbeddingProvider string `json:"embeddingProvider,omitempty"`
	// EmbeddingModel requested from an openai provider.
	// +optional
	EmbeddingModel string `json:"embeddingModel,omitempty"`
	// EmbeddingHeaders sent to an openai provider.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	EmbeddingHeaders map[string]VMCPEmbeddingHeaderValue `json:"embeddingHeaders,omitempty"`
	// MaxToolsToReturn from a search.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MaxToolsToReturn int `json:"maxToolsToReturn,omitempty"`
	// HybridSearchSemanticRatio weighs semantic against keyword search, a
	// decimal between 0 and 1.
	// +kubebuilder:validation:Pattern=`^([0-9]*[.])?[0-9]+$`
	// +optional
	HybridSearchSemanticRatio string `json:"hybridSearchSemanticRatio,omitempty"`
	// SemanticDistanceThreshold above which a tool is not returned.
	// +kubebuilder:validation:Pattern=`^([0-9]*[.])?[0-9]+$`
	// +optional
	SemanticDistanceThreshold string `json:"semanticDistanceThreshold,omitempty"`
}

// VMCPCodeMode lets clients run scripts that call tools.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPCodeMode struct {
	// Enabled turns code mode on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// StepLimit of one script.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=100000
	// +optional
	StepLimit int64 `json:"stepLimit,omitempty"`
	// ParallelMaxConcurrency of tool calls of one script.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=10
	// +optional
	ParallelMaxConcurrency int `json:"parallelMaxConcurrency,omitempty"`
	// ToolCallTimeout of one tool call.
	// +kubebuilder:default="30s"
	// +optional
	ToolCallTimeout VMCPDuration `json:"toolCallTimeout,omitempty"`
}

// VMCPSessionStorage is config.yaml's session storage.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPSessionStorage struct {
	// Provider is memory or redis.
	// +kubebuilder:validation:Enum=memory;redis
	// +required
	Provider string `json:"provider"`
	// Address of Redis.
	// +optional
	Address string `json:"address,omitempty"`
	// DB number of Redis.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	DB int32 `json:"db,omitempty"`
	// KeyPrefix of the keys.
	// +optional
	KeyPrefix string `json:"keyPrefix,omitempty"`
	// TLS to Redis, by file path; the operator refuses it here (use
	// spec.sessionStorage.tls).
	// +optional
	TLS *VMCPSessionStorageTLS `json:"tls,omitempty"`
}

// VMCPSessionStorageTLS is TLS to Redis as config.yaml names it.
// +kubebuilder:pruning:PreserveUnknownFields
type VMCPSessionStorageTLS struct {
	// InsecureSkipVerify skips verifying Redis's certificate.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
	// CACertFile is a CA bundle file.
	// +optional
	CACertFile string `json:"caCertFile,omitempty"`
}
