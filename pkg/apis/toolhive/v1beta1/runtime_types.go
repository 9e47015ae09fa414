package v1beta1

// Types of the fields that tune what ToolHive's proxy runner does for a
// workload: host volumes and a permission profile, audit logging, the
// request-body limit, backend replicas, Redis session storage and rate
// limiting. Names, JSON keys, enums, defaults and validation are
// ToolHive's (cmd/thv-operator/api/v1beta1 and pkg/ratelimit/types at the
// pinned release); where hivekeeper's schema is stricter, the rule refuses
// a value ToolHive's operator would fail on when it builds the RunConfig.

// Permission profile reference types.
const (
	PermissionProfileTypeBuiltin   = "builtin"
	PermissionProfileTypeConfigMap = "configmap"
)

// Built-in permission profile names. "stdio" is ToolHive's alias of
// "none".
const (
	PermissionProfileNone    = "none"
	PermissionProfileNetwork = "network"
	PermissionProfileStdio   = "stdio"
)

// Session storage providers.
const (
	SessionStorageProviderMemory = "memory"
	SessionStorageProviderRedis  = "redis"
)

// Volume is a host path mounted into the MCP server container, as
// ToolHive's runner records it: "<hostPath>:<mountPath>[:ro]".
// +kubebuilder:pruning:PreserveUnknownFields
type Volume struct {
	// Name of the volume.
	// +required
	Name string `json:"name"`
	// HostPath is the path on the host. It may not contain ':' (the
	// runner's separator) or any of $ & ; | and the backquote, which
	// ToolHive's mount parser refuses.
	// +kubebuilder:validation:Pattern=`^[^:$&;|\x60]+$`
	// +required
	HostPath string `json:"hostPath"`
	// MountPath is the path in the container; the same characters are
	// refused, and a leading backslash (a Windows path).
	// +kubebuilder:validation:Pattern=`^[^:$&;|\x60\\][^:$&;|\x60]*$`
	// +required
	MountPath string `json:"mountPath"`
	// ReadOnly mounts the path read-only.
	// +kubebuilder:default=false
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
}

// PermissionProfileRef names the permission profile of the MCP server: a
// built-in one, or a JSON profile in a ConfigMap key.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="self.type != 'builtin' || self.name in ['none', 'network', 'stdio']",message="a builtin permission profile is none or network"
// +kubebuilder:validation:XValidation:rule="self.type != 'configmap' || (has(self.key) && self.key.matches('^[-._a-zA-Z0-9]+$'))",message="a configmap permission profile names its ConfigMap key in key"
type PermissionProfileRef struct {
	// Type of the reference.
	// +kubebuilder:validation:Enum=builtin;configmap
	// +kubebuilder:default=builtin
	// +required
	Type string `json:"type"`
	// Name of the built-in profile (none or network), or of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Key of the ConfigMap that holds the profile; configmap only.
	// +optional
	Key string `json:"key,omitempty"`
}

// AuditConfig turns on the runner's audit log of MCP requests.
// +kubebuilder:pruning:PreserveUnknownFields
type AuditConfig struct {
	// Enabled logs an audit event for every request, with ToolHive's
	// default audit configuration.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// SessionStorageConfig is where the proxy keeps MCP sessions, so that
// replicas share them. The Redis password reaches the proxy container as
// an environment variable from its Secret, never through the RunConfig.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="self.provider == 'redis' ? has(self.address) : true",message="address is required"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || self.provider == 'redis'",message="tls needs provider redis"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.tls.caCertSecretRef) || !has(self.tls.insecureSkipVerify) || !self.tls.insecureSkipVerify",message="tls.insecureSkipVerify skips verification, so a tls.caCertSecretRef would be unused: set one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.tls.caCertSecretRef) || (size(self.tls.caCertSecretRef.name) > 0 && size(self.tls.caCertSecretRef.key) > 0)",message="tls.caCertSecretRef needs a name and a key"
type SessionStorageConfig struct {
	// Provider of the session storage.
	// +kubebuilder:validation:Enum=memory;redis
	// +required
	Provider string `json:"provider"`
	// Address of the Redis server, host:port (redis only).
	// +kubebuilder:validation:MinLength=1
	// +optional
	Address string `json:"address,omitempty"`
	// DB is the Redis database number.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	DB int32 `json:"db,omitempty"`
	// KeyPrefix is prepended to every Redis key ToolHive uses.
	// +optional
	KeyPrefix string `json:"keyPrefix,omitempty"`
	// PasswordRef is the Secret key that holds the Redis password.
	// +optional
	PasswordRef *SecretKeyRef `json:"passwordRef,omitempty"`
	// TLS connects to Redis over TLS (redis only), verified with the CA
	// bundle of caCertSecretRef or the system's roots, or not verified.
	// +optional
	TLS *RedisTLSConfig `json:"tls,omitempty"`
}

// RateLimitConfig limits tools/call requests with token buckets kept in
// Redis (spec.sessionStorage). At least one of shared, perUser and tools
// is set.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="has(self.shared) || has(self.perUser) || (has(self.tools) && size(self.tools) > 0)",message="at least one of shared, perUser, or tools must be configured"
type RateLimitConfig struct {
	// Shared is one bucket for every caller of the server.
	// +optional
	Shared *RateLimitBucket `json:"shared,omitempty"`
	// PerUser is a bucket per authenticated user; it needs authentication.
	// +optional
	PerUser *RateLimitBucket `json:"perUser,omitempty"`
	// Tools are limits on calls of one tool, on top of the server's.
	// +listType=map
	// +listMapKey=name
	// +optional
	Tools []ToolRateLimitConfig `json:"tools,omitempty"`
}

// RateLimitBucket is a token bucket: maxTokens requests at once, refilled
// in full over refillPeriod.
// +kubebuilder:pruning:PreserveUnknownFields
type RateLimitBucket struct {
	// MaxTokens is the bucket's capacity, the burst size.
	// +kubebuilder:validation:Minimum=1
	// +required
	MaxTokens int32 `json:"maxTokens"`
	// A string rather than ToolHive's metav1.Duration: a malformed value
	// stored before this schema must be a condition on that one object,
	// not a decoding error that stops the informer for the whole kind.
	// The RunConfig carries it in ToolHive's encoding.

	// RefillPeriod is a Go duration ("1m0s", "30s") over which the bucket
	// refills from empty.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`
	// +required
	RefillPeriod string `json:"refillPeriod"`
}

// ToolRateLimitConfig limits the calls of one tool.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="has(self.shared) || has(self.perUser)",message="at least one of shared or perUser must be configured"
type ToolRateLimitConfig struct {
	// Name of the MCP tool.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Shared is one bucket for every caller of this tool.
	// +optional
	Shared *RateLimitBucket `json:"shared,omitempty"`
	// PerUser is a bucket per authenticated user for this tool.
	// +optional
	PerUser *RateLimitBucket `json:"perUser,omitempty"`
}
