// Package schema holds the types of the files ToolHive's runtime reads,
// in ToolHive's encoding: the RunConfig the proxy runner reads from its
// mounted ConfigMap (and the embedded authorization server's
// configuration inside it), and the content checksum that rolls the
// proxy pods when that ConfigMap changes. Marshal owns the bytes:
// everything here is a pure function of its inputs.
package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SchemaVersion is the RunConfig schema version the proxy runner expects.
const SchemaVersion = "v0.1.0"

// Key is the ConfigMap data key that holds the RunConfig.
const Key = "runconfig.json"

// ChecksumAnnotation is the ConfigMap annotation that carries Checksum.
const ChecksumAnnotation = "toolhive.stacklok.dev/content-checksum"

// RunConfig is the subset of ToolHive's runner.RunConfig (at the release
// pinned in hack/versions.env) that hivekeeper renders, in ToolHive's
// encoding: its fields in the order of ToolHive's struct, and a key
// omitted exactly where ToolHive's tag omits it (schema_version, image,
// name, transport, host, port and permission_profile are always written,
// empty or not). Marshal's bytes are then the bytes ToolHive's operator
// writes for the same content. The conformance suite decodes every
// RunConfig strictly with ToolHive's own type, so a key the runner does
// not know fails a test.
type RunConfig struct {
	SchemaVersion       string `json:"schema_version"`
	MCPServerGeneration int64  `json:"mcpserver_generation,omitempty"`
	// Image is "" for a remote proxy, and written all the same.
	Image     string `json:"image"`
	RemoteURL string `json:"remote_url,omitempty"`
	// RemoteAuthConfig is how a remote proxy authenticates to its remote
	// server, from an MCPExternalAuthConfig of type bearerToken.
	RemoteAuthConfig *RemoteAuthConfig `json:"remote_auth_config,omitempty"`
	CmdArgs          []string          `json:"cmd_args,omitempty"`
	Name             string            `json:"name"`
	ContainerName    string            `json:"container_name,omitempty"`
	BaseName         string            `json:"base_name,omitempty"`
	Transport        string            `json:"transport"`
	Host             string            `json:"host"`
	Port             int32             `json:"port"`
	TargetPort       int32             `json:"target_port,omitempty"`
	// PermissionProfile is written for every workload, null when unset:
	// ToolHive's builder sets its default, the network profile, where the
	// spec names none. Its Kubernetes runtime applies none of it.
	PermissionProfile *PermissionProfile `json:"permission_profile"`
	// EnvVars are spec.env plus the transport variables ToolHive's builder
	// sets (SetTransportEnv).
	EnvVars map[string]string `json:"env_vars,omitempty"`
	// Volumes are "<host>:<container>[:ro]" mounts; PermissionProfile
	// repeats them as its read and write mounts.
	Volumes []string `json:"volumes,omitempty"`
	// ContainerLabels are the labels the runner puts on the workload it
	// deploys (StatefulSet, pods, Services) and reads back: it takes the
	// transport from toolhive-transport, and skips its start-up initialize
	// probe only when that says stdio. Set them with SetContainerLabels.
	ContainerLabels map[string]string `json:"container_labels,omitempty"`
	OIDCConfig      *OIDCConfig       `json:"oidc_config,omitempty"`
	// TokenExchangeConfig makes the proxy exchange the caller's token
	// (RFC 8693) before it forwards a request, from an
	// MCPExternalAuthConfig of type tokenExchange.
	TokenExchangeConfig *TokenExchangeConfig `json:"token_exchange_config,omitempty"`
	// AWSStsConfig makes the proxy exchange the caller's token for AWS
	// credentials and sign requests with them, from an
	// MCPExternalAuthConfig of type awsSts.
	AWSStsConfig *AWSStsConfig `json:"aws_sts_config,omitempty"`
	// AuthzConfig is the runner's authorization config (its format version,
	// the authorizer type and that authorizer's options), from the
	// workload's inline Cedar policies or its MCPAuthzConfig, as the bytes
	// ToolHive's operator marshals it to.
	AuthzConfig json.RawMessage `json:"authz_config,omitempty"`
	// AuditConfig, when present, installs the runner's audit middleware.
	AuditConfig *AuditConfig `json:"audit_config,omitempty"`
	// TelemetryConfig is what the runner exports and serves, from a
	// referenced MCPTelemetryConfig.
	TelemetryConfig *TelemetryConfig `json:"telemetry_config,omitempty"`
	// RateLimitConfig is ToolHive's CRD type embedded as is (camelCase
	// keys); RateLimitNamespace scopes its Redis keys.
	RateLimitConfig    *RateLimitConfig `json:"rate_limit_config,omitempty"`
	RateLimitNamespace string           `json:"rate_limit_namespace,omitempty"`
	TrustProxyHeaders  bool             `json:"trust_proxy_headers,omitempty"`
	// MaxRequestBodySize caps request bodies; zero is the runner's default.
	MaxRequestBodySize int64 `json:"max_request_body_size,omitempty"`
	// ProxyReadTimeout bounds how long the proxy reads one request, a Go
	// duration as time.Duration prints it ("1m0s"); empty is the
	// runner's default (30s).
	ProxyReadTimeout string `json:"proxy_read_timeout,omitempty"`
	ProxyMode        string `json:"proxy_mode,omitempty"`
	// ThvCABundle and JWKSAuthTokenFile repeat the OIDC CA bundle and JWKS
	// token paths at the top level, where ToolHive's operator also writes
	// them.
	ThvCABundle       string `json:"thv_ca_bundle,omitempty"`
	JWKSAuthTokenFile string `json:"jwks_auth_token_file,omitempty"`
	// ToolsFilter and ToolsOverride come from a referenced MCPToolConfig:
	// the runner's tool middleware hides tools not in the filter and
	// presents overridden names and descriptions.
	ToolsFilter   []string                `json:"tools_filter,omitempty"`
	ToolsOverride map[string]ToolOverride `json:"tools_override,omitempty"`
	// MiddlewareConfigs is the runner's middleware chain, derived from the
	// fields above by PopulateMiddlewareConfigs, as ToolHive's operator
	// writes it.
	MiddlewareConfigs []MiddlewareConfig `json:"middleware_configs,omitempty"`
	// ValidatingWebhooks and MutatingWebhooks are the webhooks the runner
	// calls on every MCP request (mutating first), from a referenced
	// MCPWebhookConfig.
	ValidatingWebhooks []WebhookConfig `json:"validating_webhooks,omitempty"`
	MutatingWebhooks   []WebhookConfig `json:"mutating_webhooks,omitempty"`
	EndpointPrefix     string          `json:"endpoint_prefix,omitempty"`
	HeaderForward      *HeaderForward  `json:"header_forward,omitempty"`
	// EmbeddedAuthServerConfig runs an OAuth authorization server in the
	// proxy, from an MCPExternalAuthConfig of type embeddedAuthServer.
	EmbeddedAuthServerConfig *EmbeddedAuthServerConfig `json:"embedded_auth_server_config,omitempty"`
	ScalingConfig            *ScalingConfig            `json:"scaling_config,omitempty"`
}

// WebhookConfig is ToolHive's webhook.Config. Timeout is a
// time.Duration, written as ToolHive writes it: nanoseconds, and always
// present, because the runner reads an absent timeout as its 10s default
// but 0 as "unset" (also 10s when it calls). HMACSecretRef and the TLS
// paths name files of Secret volumes mounted into the proxy container,
// never secret values.
type WebhookConfig struct {
	Name          string            `json:"name"`
	URL           string            `json:"url"`
	Timeout       int64             `json:"timeout"`
	FailurePolicy string            `json:"failure_policy"`
	TLSConfig     *WebhookTLSConfig `json:"tls_config,omitempty"`
	HMACSecretRef string            `json:"hmac_secret_ref,omitempty"`
}

// WebhookTLSConfig is ToolHive's webhook.TLSConfig.
type WebhookTLSConfig struct {
	CABundlePath       string `json:"ca_bundle_path,omitempty"`
	ClientCertPath     string `json:"client_cert_path,omitempty"`
	ClientKeyPath      string `json:"client_key_path,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

// RemoteAuthConfig is the part of ToolHive's remote.Config hivekeeper
// writes. BearerToken is never a token: it is ToolHive's secret
// parameter "<secret>,target=bearer_token", which the runner resolves
// through its secrets provider (TOOLHIVE_SECRET_<secret> with the
// environment provider, a secretKeyRef variable of the proxy container).
// use_pkce and the two cache expiries have no omitempty that applies in
// ToolHive's type, so they are written with their zero values
// (false, and time.Time's zero instant).
type RemoteAuthConfig struct {
	UsePKCE            bool      `json:"use_pkce"`
	BearerToken        string    `json:"bearer_token,omitempty"`
	CachedTokenExpiry  unsetTime `json:"cached_token_expiry"`
	CachedSecretExpiry unsetTime `json:"cached_secret_expiry"`
}

// unsetTime is a time ToolHive's types hold as a time.Time that is never
// set here: it encodes as time.Time's zero instant.
type unsetTime struct{}

// MarshalJSON writes time.Time's zero instant.
func (unsetTime) MarshalJSON() ([]byte, error) { return []byte(`"0001-01-01T00:00:00Z"`), nil }

// TokenExchangeConfig is ToolHive's tokenexchange.Config. The client
// secret is never here (client_secret is always written, empty): the
// runner reads it from TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET, a
// secretKeyRef variable of the proxy container.
type TokenExchangeConfig struct {
	TokenURL                string   `json:"token_url"`
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret"`
	Audience                string   `json:"audience"`
	Scopes                  []string `json:"scopes,omitempty"`
	SubjectTokenType        string   `json:"subject_token_type,omitempty"`
	HeaderStrategy          string   `json:"header_strategy,omitempty"`
	ExternalTokenHeaderName string   `json:"external_token_header_name,omitempty"`
}

// TelemetryConfig is ToolHive's telemetry.Config, with its camelCase keys.
// TracingEnabled, MetricsEnabled and UseLegacyAttributes are always
// written, as ToolHive writes them. Headers are the plain ones only: a
// sensitive header's value reaches the proxy as an env variable from its
// Secret, never through the ConfigMap.
type TelemetryConfig struct {
	Endpoint                    string            `json:"endpoint,omitempty"`
	ServiceName                 string            `json:"serviceName,omitempty"`
	TracingEnabled              bool              `json:"tracingEnabled"`
	MetricsEnabled              bool              `json:"metricsEnabled"`
	SamplingRate                string            `json:"samplingRate,omitempty"`
	Headers                     map[string]string `json:"headers,omitempty"`
	Insecure                    bool              `json:"insecure,omitempty"`
	EnablePrometheusMetricsPath bool              `json:"enablePrometheusMetricsPath,omitempty"`
	MetricsOnTransportPort      *bool             `json:"metricsOnTransportPort,omitempty"`
	CustomAttributes            map[string]string `json:"customAttributes,omitempty"`
	UseLegacyAttributes         bool              `json:"useLegacyAttributes"`
	CACertPath                  string            `json:"caCertPath,omitempty"`
}

// HeaderForward is ToolHive's runner.HeaderForwardConfig: headers a
// remote proxy adds to every request to the remote server.
// AddHeadersFromSecret maps a header to the name of a secret in the
// runner's secrets provider, never to a value: with the environment
// provider the runner reads it from TOOLHIVE_SECRET_<name>, which the
// proxy container gets from a secretKeyRef.
type HeaderForward struct {
	AddPlaintextHeaders  map[string]string `json:"add_plaintext_headers,omitempty"`
	AddHeadersFromSecret map[string]string `json:"add_headers_from_secret,omitempty"`
}

// PermissionProfile is toolhive-core's permissions.Profile.
type PermissionProfile struct {
	Name    string              `json:"name,omitempty"`
	Read    []string            `json:"read,omitempty"`
	Write   []string            `json:"write,omitempty"`
	Network *NetworkPermissions `json:"network,omitempty"`
}

// NetworkPermissions is toolhive-core's permissions.NetworkPermissions.
type NetworkPermissions struct {
	Outbound *OutboundNetworkPermissions `json:"outbound,omitempty"`
	Inbound  *InboundNetworkPermissions  `json:"inbound,omitempty"`
}

// OutboundNetworkPermissions is toolhive-core's
// permissions.OutboundNetworkPermissions.
type OutboundNetworkPermissions struct {
	InsecureAllowAll bool     `json:"insecure_allow_all,omitempty"`
	AllowHost        []string `json:"allow_host,omitempty"`
	AllowPort        []int    `json:"allow_port,omitempty"`
}

// InboundNetworkPermissions is toolhive-core's
// permissions.InboundNetworkPermissions.
type InboundNetworkPermissions struct {
	AllowHost []string `json:"allow_host,omitempty"`
}

// ProfileNetwork is the name of the runner's built-in network profile.
const ProfileNetwork = "network"

// DefaultPermissionProfile is the profile ToolHive's builder writes when
// nothing names another: the built-in network profile, outbound traffic
// allowed. ToolHive's operator (from v0.63.0 on) never names another:
// spec.permissionProfile has no effect on Kubernetes.
func DefaultPermissionProfile() *PermissionProfile {
	return &PermissionProfile{Name: ProfileNetwork, Network: &NetworkPermissions{
		Outbound: &OutboundNetworkPermissions{InsecureAllowAll: true}, Inbound: &InboundNetworkPermissions{},
	}}
}

// AuditConfig is the part of ToolHive's audit.Config its operator sets:
// audit.DefaultConfig(), whose keys are camelCase.
type AuditConfig struct {
	DetectApplicationErrors *bool `json:"detectApplicationErrors,omitempty"`
	MaxDataSize             int   `json:"maxDataSize,omitempty"`
}

// DefaultAuditConfig is ToolHive's audit.DefaultConfig(): request and
// response bodies are not logged, captured data is capped at 1 KiB, and
// JSON-RPC errors in answers count as failures.
func DefaultAuditConfig() *AuditConfig {
	detect := true
	return &AuditConfig{MaxDataSize: 1024, DetectApplicationErrors: &detect}
}

// ScalingConfig is ToolHive's runner.ScalingConfig.
type ScalingConfig struct {
	// BackendReplicas of the runner's StatefulSet; nil leaves them alone,
	// 0 is a count.
	BackendReplicas *int32 `json:"backend_replicas,omitempty"`
	// SessionRedis holds no password: the runner reads it from
	// THV_SESSION_REDIS_PASSWORD.
	SessionRedis *SessionRedisConfig `json:"session_redis,omitempty"`
}

// SessionRedisConfig is ToolHive's runner.SessionRedisConfig.
type SessionRedisConfig struct {
	Address   string `json:"address,omitempty"`
	DB        int32  `json:"db,omitempty"`
	KeyPrefix string `json:"key_prefix,omitempty"`
	// TLS, when present, connects over TLS; empty ({}) verifies the
	// server with the system roots.
	TLS *RedisTLSConfig `json:"tls,omitempty"`
}

// RedisTLSConfig is ToolHive's redisconfig.TLSConfig, with its camelCase
// keys in the snake_case RunConfig as in the vMCP's config.yaml.
// CACertFile is the path of a mounted CA bundle, never its content.
type RedisTLSConfig struct {
	InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
	CACertFile         string `json:"caCertFile,omitempty"`
}

// RateLimitConfig is ToolHive's ratelimit RateLimitConfig, the CRD type
// the runner reads back.
type RateLimitConfig struct {
	Shared  *RateLimitBucket      `json:"shared,omitempty"`
	PerUser *RateLimitBucket      `json:"perUser,omitempty"`
	Tools   []ToolRateLimitConfig `json:"tools,omitempty"`
}

// RateLimitBucket is ToolHive's RateLimitBucket; RefillPeriod is encoded
// as metav1.Duration encodes it (time.Duration's String, "1m0s").
type RateLimitBucket struct {
	MaxTokens    int32  `json:"maxTokens"`
	RefillPeriod string `json:"refillPeriod"`
}

// ToolRateLimitConfig is ToolHive's ToolRateLimitConfig.
type ToolRateLimitConfig struct {
	Name    string           `json:"name"`
	Shared  *RateLimitBucket `json:"shared,omitempty"`
	PerUser *RateLimitBucket `json:"perUser,omitempty"`
}

// ToolOverride is ToolHive's runner.ToolOverride: the name and description
// clients see instead of a tool's own.
type ToolOverride struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// OIDCConfig is ToolHive's auth.TokenValidatorConfig: how the proxy
// validates incoming tokens. That type has no JSON tags, so its keys are
// its Go field names, not snake_case, and every one is written, empty or
// not (Scopes as null when there are none). Secrets never appear here:
// ClientSecret is always empty, and the client secret reaches the proxy
// as TOOLHIVE_OIDC_CLIENT_SECRET from a secretKeyRef, which the runner
// reads when ClientSecret is empty.
type OIDCConfig struct {
	Issuer            string
	Audience          string
	JWKSURL           string
	ClientID          string
	ClientSecret      string
	CACertPath        string
	AuthTokenFile     string
	AllowPrivateIP    bool
	InsecureAllowHTTP bool
	IntrospectionURL  string
	ResourceURL       string
	Scopes            []string
}

// The runner's container labels: their keys and the value of LabelToolHive
// are ToolHive's, the rest come from the RunConfig's own fields.
const (
	LabelToolHive   = "toolhive"
	LabelName       = "toolhive-name"
	LabelBaseName   = "toolhive-basename"
	LabelTransport  = "toolhive-transport"
	LabelPort       = "toolhive-port"
	labelToolHiveOn = "true"
)

// SetContainerLabels derives ContainerLabels from the container name, base
// name, transport and proxy port, as ToolHive's operator writes them for
// the same workload. Call it once every other field is set.
func (rc *RunConfig) SetContainerLabels() {
	rc.ContainerLabels = map[string]string{
		LabelToolHive:  labelToolHiveOn,
		LabelName:      rc.ContainerName,
		LabelBaseName:  rc.BaseName,
		LabelTransport: rc.Transport,
		LabelPort:      strconv.Itoa(int(rc.Port)),
	}
}

// Transport variables ToolHive's builder adds to env_vars.
const (
	EnvMCPTransport = "MCP_TRANSPORT"
	EnvMCPPort      = "MCP_PORT"
	EnvFastMCPPort  = "FASTMCP_PORT"
)

// SetTransportEnv adds the variables ToolHive's builder sets for the
// transport to env_vars, over any of spec.env's: MCP_TRANSPORT always,
// and for sse and streamable-http with a target port, MCP_PORT and
// FASTMCP_PORT set to it. The runner sets the same on the MCP container it
// deploys; a remote proxy has no target port, so only MCP_TRANSPORT.
func (rc *RunConfig) SetTransportEnv() {
	if rc.EnvVars == nil {
		rc.EnvVars = map[string]string{}
	}
	rc.EnvVars[EnvMCPTransport] = rc.Transport
	if rc.TargetPort > 0 && (rc.Transport == "sse" || rc.Transport == "streamable-http") {
		port := strconv.Itoa(int(rc.TargetPort))
		rc.EnvVars[EnvMCPPort], rc.EnvVars[EnvFastMCPPort] = port, port
	}
}

// Marshal renders the RunConfig as ToolHive's operator does: JSON
// indented with two spaces, <, > and & escaped, map keys sorted, no
// final newline.
func Marshal(rc *RunConfig) (string, error) {
	out, err := json.MarshalIndent(rc, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding RunConfig: %w", err)
	}
	return string(out), nil
}

// ValidateEnvName rejects environment keys the runner cannot pass on: an
// "=" splits the pair, and CR or LF break the env file format.
func ValidateEnvName(name string) error {
	if name == "" {
		return fmt.Errorf("environment variable name is empty")
	}
	if strings.ContainsAny(name, "=\r\n") {
		return fmt.Errorf("environment variable name %q contains '=', CR or LF", name)
	}
	return nil
}

// Checksum is the hex SHA-256 over a ConfigMap's content, as ToolHive's
// operator computes it: each data key then its value, keys sorted, then
// the labels the same way, then the annotations but ChecksumAnnotation
// itself, with nothing between them. The same content gives ToolHive's
// checksum, so a pod template carrying it does not roll at a switch from
// one operator to the other. It is computed from the desired in-memory
// ConfigMap, never from a cache read, so it changes exactly when what
// hivekeeper writes changes.
func Checksum(data, labels, annotations map[string]string) string {
	h := sha256.New()
	write := func(m map[string]string, skip string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k != skip {
				h.Write([]byte(k))
				h.Write([]byte(m[k]))
			}
		}
	}
	write(data, "")
	write(labels, "")
	write(annotations, ChecksumAnnotation)
	return hex.EncodeToString(h.Sum(nil))
}
