package schema

import (
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// VMCPBackend is one aggregated member in config.yaml (vmcp's
// StaticBackendConfig).
type VMCPBackend struct {
	// Name is the member's name.
	Name string `json:"name"`
	// URL is the MCP endpoint of its proxy Service, or an entry's remote
	// URL.
	URL string `json:"url"`
	// Transport is what its proxy exposes (streamable-http or sse), or
	// what an entry's remote server speaks.
	Transport string `json:"transport"`
	// Type is "entry" for an MCPServerEntry, empty otherwise.
	Type string `json:"type,omitempty"`
	// CABundlePath is where an entry's CA bundle is mounted.
	CABundlePath string `json:"caBundlePath,omitempty"`
}

// VMCPOIDCConfig is the incomingAuth.oidc block of config.yaml, in the keys of
// ToolHive's vmcp config at the pinned release. The client secret itself
// is never here; ClientSecretEnv names the environment variable that
// carries it from its Secret.
type VMCPOIDCConfig struct {
	Issuer                          string   `json:"issuer"`
	ClientID                        string   `json:"clientId"`
	ClientSecretEnv                 string   `json:"clientSecretEnv,omitempty"`
	Audience                        string   `json:"audience"`
	Resource                        string   `json:"resource,omitempty"`
	JWKSURL                         string   `json:"jwksUrl,omitempty"`
	IntrospectionURL                string   `json:"introspectionUrl,omitempty"`
	Scopes                          []string `json:"scopes,omitempty"`
	ProtectedResourceAllowPrivateIP bool     `json:"protectedResourceAllowPrivateIp,omitempty"`
	JWKSAllowPrivateIP              bool     `json:"jwksAllowPrivateIp,omitempty"`
	InsecureAllowHTTP               bool     `json:"insecureAllowHttp,omitempty"`
	CABundlePath                    string   `json:"caBundlePath,omitempty"`
}

// VMCPAuthzConfig is the incomingAuth.authz block: Cedar policies, as vmcp's
// incoming authorization (Cedar only) reads them.
type VMCPAuthzConfig struct {
	Type            string   `json:"type"`
	Policies        []string `json:"policies,omitempty"`
	EntitiesJSON    string   `json:"entitiesJson,omitempty"`
	GroupClaimName  string   `json:"groupClaimName,omitempty"`
	RoleClaimName   string   `json:"roleClaimName,omitempty"`
	GroupEntityType string   `json:"groupEntityType,omitempty"`
	// PrimaryUpstreamProvider is the embedded authorization server's
	// upstream whose claims Cedar reads (see applyAuthServer).
	PrimaryUpstreamProvider string `json:"primaryUpstreamProvider,omitempty"`
}

// VMCPIncomingAuth is config.yaml's incomingAuth.
type VMCPIncomingAuth struct {
	Type  string           `json:"type"`
	OIDC  *VMCPOIDCConfig  `json:"oidc,omitempty"`
	Authz *VMCPAuthzConfig `json:"authz,omitempty"`
}

// VMCPBackendStrategy is one strategy of outgoingAuth, in vmcp's keys.
type VMCPBackendStrategy struct {
	Type            string               `json:"type"`
	HeaderInjection *VMCPHeaderInjection `json:"headerInjection,omitempty"`
	TokenExchange   *VMCPTokenExchange   `json:"tokenExchange,omitempty"`
	// AwsSts is the MCPExternalAuthConfig's awsSts block as it is: vmcp's
	// aws_sts strategy has the same keys.
	AwsSts         *thv1.AWSStsConfig  `json:"awsSts,omitempty"`
	UpstreamInject *VMCPUpstreamInject `json:"upstreamInject,omitempty"`
}

// VMCPUpstreamInject names the upstream provider of the vMCP's embedded
// authorization server whose token the backend is sent.
type VMCPUpstreamInject struct {
	ProviderName string `json:"providerName"`
}

type VMCPHeaderInjection struct {
	HeaderName     string `json:"headerName"`
	HeaderValueEnv string `json:"headerValueEnv,omitempty"`
}

type VMCPTokenExchange struct {
	TokenURL            string   `json:"tokenUrl"`
	ClientID            string   `json:"clientId,omitempty"`
	ClientSecretEnv     string   `json:"clientSecretEnv,omitempty"`
	Audience            string   `json:"audience,omitempty"`
	Scopes              []string `json:"scopes,omitempty"`
	SubjectTokenType    string   `json:"subjectTokenType,omitempty"`
	SubjectProviderName string   `json:"subjectProviderName,omitempty"`
}

// VMCPAggregation is config.yaml's aggregation, with the fields ToolHive's
// converter carries over (others are dropped, as there).
type VMCPAggregation struct {
	ConflictResolution       string                  `json:"conflictResolution"`
	ConflictResolutionConfig *VMCPConflictResolution `json:"conflictResolutionConfig,omitempty"`
	Tools                    []*VMCPWorkloadTools    `json:"tools,omitempty"`
	ExcludeAllTools          bool                    `json:"excludeAllTools,omitempty"`
	DefaultToolVisibility    string                  `json:"defaultToolVisibility,omitempty"`
}

type VMCPConflictResolution struct {
	PrefixFormat  string   `json:"prefixFormat,omitempty"`
	PriorityOrder []string `json:"priorityOrder,omitempty"`
}

// VMCPWorkloadTools are one workload's tool settings. ToolConfigRef is read
// and never written: the referenced MCPToolConfig is merged in.
type VMCPWorkloadTools struct {
	Workload      string                       `json:"workload"`
	ToolConfigRef *thv1.ToolConfigReference    `json:"toolConfigRef,omitempty"`
	Filter        []string                     `json:"filter,omitempty"`
	Overrides     map[string]thv1.ToolOverride `json:"overrides,omitempty"`
	ExcludeAll    bool                         `json:"excludeAll,omitempty"`
}

// VMCPOperational is config.yaml's operational section. Durations are
// Go durations, written as Go formats them ("1m0s"), as vmcp encodes them.
type VMCPOperational struct {
	LogLevel        string               `json:"logLevel,omitempty"`
	Timeouts        *VMCPTimeouts        `json:"timeouts,omitempty"`
	FailureHandling *VMCPFailureHandling `json:"failureHandling,omitempty"`
}

type VMCPTimeouts struct {
	Default     string            `json:"default,omitempty"`
	PerWorkload map[string]string `json:"perWorkload,omitempty"`
}

type VMCPFailureHandling struct {
	HealthCheckInterval     string              `json:"healthCheckInterval,omitempty"`
	UnhealthyThreshold      int                 `json:"unhealthyThreshold,omitempty"`
	HealthCheckTimeout      string              `json:"healthCheckTimeout,omitempty"`
	StatusReportingInterval string              `json:"statusReportingInterval,omitempty"`
	PartialFailureMode      string              `json:"partialFailureMode,omitempty"`
	CircuitBreaker          *VMCPCircuitBreaker `json:"circuitBreaker,omitempty"`
}

type VMCPCircuitBreaker struct {
	Enabled          bool   `json:"enabled,omitempty"`
	FailureThreshold int    `json:"failureThreshold,omitempty"`
	Timeout          string `json:"timeout,omitempty"`
}

// MarshalVMCPConfig is config.yaml as vmcp reads it. Its keys are sorted
// at every level, so equal configurations give equal bytes and the pod's
// checksum annotation does not churn.
func MarshalVMCPConfig(cfg map[string]any) (string, error) {
	out, err := yaml.Marshal(cfg)
	return string(out), err
}

// MarshalAuthServerConfig is authserver-config.yaml, the embedded
// authorization server's configuration vmcp reads beside config.yaml: the
// YAML of the same block the proxy runner reads from its RunConfig.
func MarshalAuthServerConfig(c *EmbeddedAuthServerConfig) (string, error) {
	if c.RegistrationRateLimit != nil {
		cc := *c
		r := *c.RegistrationRateLimit
		r.yamlFloat = true
		cc.RegistrationRateLimit = &r
		c = &cc
	}
	out, err := yaml.Marshal(c)
	return string(out), err
}
