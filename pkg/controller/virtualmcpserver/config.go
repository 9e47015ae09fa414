package virtualmcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// configRefs are the configs a VirtualMCPServer's config.yaml is built
// from, resolved from the listers; nil or empty for references it does
// not make.
type configRefs struct {
	Authz     *thv1.MCPAuthzConfig
	Telemetry *thv1.MCPTelemetryConfig
	// Tools are the MCPToolConfigs of spec.config.aggregation.tools, by name.
	Tools map[string]*thv1.MCPToolConfig
	// ExtAuth are the MCPExternalAuthConfigs of spec.outgoingAuth, by name.
	ExtAuth map[string]*thv1.MCPExternalAuthConfig
	// CompositeTools are the VirtualMCPCompositeToolDefinitions of
	// spec.config.compositeToolRefs, by name.
	CompositeTools map[string]*thv1.VirtualMCPCompositeToolDefinition
	// MemberAuth are the MCPExternalAuthConfigs the group's members name
	// in their own externalAuthConfigRef, by name; a missing one is
	// absent (its backend is left out, see resolveBackendAuth).
	MemberAuth map[string]*thv1.MCPExternalAuthConfig
}

// configWiring is what the vMCP pod needs beside config.yaml for it: the
// variables that carry secrets from secretKeyRefs (config.yaml names only
// the variables) and entries' headers, the entries' and telemetry CA
// bundle volumes, the embedded authorization server's Secret volumes and
// its configuration; and how outgoing auth was resolved against the
// members.
type configWiring struct {
	Env     []corev1.EnvVar
	Volumes []corev1.Volume
	Mounts  []corev1.VolumeMount
	Auth    *backendAuth
	// AuthServerConfig is authserver-config.yaml, "" for none.
	AuthServerConfig string
}

// The names of config.yaml's sections, as ToolHive's vmcp config spells them.
const (
	keyName               = "name"
	keyGroupRef           = "groupRef"
	keyBackends           = "backends"
	keySessionStorage     = "sessionStorage"
	keyIncomingAuth       = "incomingAuth"
	keyOutgoingAuth       = "outgoingAuth"
	keyAggregation        = "aggregation"
	keyOperational        = "operational"
	keyTelemetry          = "telemetry"
	keyAudit              = "audit"
	keyPassthroughHeaders = "passthroughHeaders"
	keyCompositeTools     = "compositeTools"
	keyCompositeToolRefs  = "compositeToolRefs"
)

// Values of config.yaml, as ToolHive's vmcp reads them.
const (
	conflictPrefix        = "prefix"
	defaultPrefixFormat   = "{workload}_"
	authzCedar            = "cedar"
	strategyUnauth        = "unauthenticated"
	strategyHeaderInject  = "header_injection"
	strategyTokenExchange = "token_exchange"
	strategyAwsSts        = "aws_sts"
	strategyUpstream      = "upstream_inject"
	// Prefixes of the variables that carry an MCPExternalAuthConfig's
	// secret into the vmcp container, followed by the config's name in
	// upper case with every other character '_', as ToolHive's operator
	// names them.
	envTokenExchangeSecretPrefix = "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_"
	envHeaderInjectionPrefix     = "TOOLHIVE_HEADER_INJECTION_VALUE_"
)

// Operational defaults vmcp fills in for what spec.config.operational
// leaves unset (ToolHive's DefaultOperationalConfig at the pinned release).
const (
	defaultTimeout                 = 30 * time.Second
	defaultHealthCheckInterval     = 30 * time.Second
	defaultUnhealthyThreshold      = 3
	defaultStatusReportingInterval = 30 * time.Second
	defaultPartialFailureMode      = "fail"
	defaultBreakerThreshold        = 5
	defaultBreakerTimeout          = 60 * time.Second
	// defaultHealthCheckTimeout, and the defaults of schemaDefaults, are
	// those of ToolHive's CRD schema for spec.config, which its API server
	// applies before its operator reads the spec; hivekeeper's schema
	// keeps spec.config raw, so the builder applies them.
	defaultHealthCheckTimeout = 10 * time.Second
)

// schemaDefaults are the defaults ToolHive's CRD schema gives fields of
// objects spec.config sets: section -> field -> value. (Step defaults are
// in defaultSteps.)
var schemaDefaults = map[string]map[string]any{
	"codeMode":  {"stepLimit": 100000, "parallelMaxConcurrency": 10, "toolCallTimeout": "30s"},
	"optimizer": {"embeddingServiceTimeout": "30s"},
}

// renderConfig builds config.yaml as ToolHive's operator builds it for the
// same spec, section by section:
//
//   - spec.config is the start; sections hivekeeper does not read
//     (optimizer, metadata, compositeTools, ...) are passed as written;
//   - name and groupRef are the server's; passthroughHeaders are
//     spec.passthroughHeaders when set;
//   - incomingAuth is rebuilt from spec.incomingAuth: type, the resolved
//     OIDC block, and authorization (inline Cedar policies or a cedarv1
//     MCPAuthzConfig) — spec.config.incomingAuth is not read;
//   - outgoingAuth is rebuilt from spec.outgoingAuth and the members' own
//     externalAuthConfigRefs (resolveBackendAuth: MCPExternalAuthConfigs
//     converted, their secrets named by variable, a backend whose
//     strategy cannot be built left out); spec.config.outgoingAuth is
//     not read;
//   - aggregation keeps its known fields, defaults conflict resolution to
//     prefix "{workload}_", and merges each tool's MCPToolConfig into its
//     filter and overrides;
//   - compositeTools are the inline ones followed by the referenced
//     VirtualMCPCompositeToolDefinitions' (compositeToolRefs stays as
//     written, as ToolHive's converter leaves it);
//   - operational gets vmcp's defaults for what it leaves unset;
//   - telemetry is the MCPTelemetryConfig's (spec.config.telemetry is not
//     read); an audit block gets the server's name as its component.
//
// Where hivekeeper differs on purpose: outgoingAuth.source is always
// inline and the served backends are listed (see backendsOf), because hivekeeper
// lists the group's members itself and the vMCP pod has no access to the
// Kubernetes API to discover them. Map keys are sorted, so equal inputs
// give equal bytes and the checksum does not churn.
func renderConfig(v *thv1.VirtualMCPServer, oidc workload.OIDCWiring, members []member, refs configRefs) (string, configWiring, error) {
	var w configWiring
	cfg, err := decodeConfig(v)
	if err != nil {
		return "", w, err
	}
	as, asConfig, err := authServer(v, oidc)
	if err != nil {
		return "", w, err
	}
	if len(v.Spec.PassthroughHeaders) > 0 {
		cfg[keyPassthroughHeaders] = v.Spec.PassthroughHeaders
	}
	cfg[keyName] = v.Name
	cfg[keyGroupRef] = v.Spec.GroupRef.Name
	if cfg[keyIncomingAuth], err = incomingAuth(v, oidc, refs.Authz); err != nil {
		return "", w, err
	}
	if w.Auth, err = resolveBackendAuth(v, members, refs.ExtAuth, refs.MemberAuth); err != nil {
		return "", w, err
	}
	cfg[keyOutgoingAuth] = w.Auth.Section
	var headerEnv []corev1.EnvVar
	if headerEnv, w.Volumes, w.Mounts, err = entryWiring(w.Auth.Served); err != nil {
		return "", w, err
	}
	w.Env = slices.Concat(w.Auth.Env, headerEnv)
	applyAuthServer(cfg, as)
	if cfg[keyAggregation], err = aggregation(cfg[keyAggregation], refs.Tools); err != nil {
		return "", w, err
	}
	if cfg[keyOperational], err = operational(cfg[keyOperational]); err != nil {
		return "", w, err
	}
	for section, defaults := range schemaDefaults {
		if m, ok := cfg[section].(map[string]any); ok {
			for k, def := range defaults {
				if _, set := m[k]; !set {
					m[k] = def
				}
			}
		}
	}
	if err := compositeTools(cfg, refs.CompositeTools); err != nil {
		return "", w, err
	}
	defaultSteps(cfg[keyCompositeTools])
	delete(cfg, keyTelemetry)
	tw, err := workload.Telemetry(refs.Telemetry, v.Spec.TelemetryConfigRef, v.Name, v.Namespace)
	if err != nil {
		return "", w, err
	}
	if tw.RunConfig != nil {
		cfg[keyTelemetry] = tw.RunConfig
		w.Env = append(w.Env, tw.Env...)
		w.Volumes, w.Mounts = append(w.Volumes, tw.Volumes...), append(w.Mounts, tw.Mounts...)
	}
	w.Env = append(w.Env, as.Env...)
	w.Volumes, w.Mounts = append(w.Volumes, as.Volumes...), append(w.Mounts, as.Mounts...)
	w.AuthServerConfig = asConfig
	if a, ok := cfg[keyAudit].(map[string]any); ok {
		if c, _ := a["component"].(string); c == "" {
			a["component"] = v.Name
		}
	}
	if st := sessionStorage(v.Spec.SessionStorage); st != nil {
		cfg[keySessionStorage] = st
	}
	backends := make([]backend, 0, len(w.Auth.Served))
	for _, m := range w.Auth.Served {
		backends = append(backends, m.backend)
	}
	cfg[keyBackends] = backends
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", w, invalidConfig("%v", err)
	}
	return string(out), w, nil
}

// invalidConfig is the error of a spec.config hivekeeper cannot build from.
func invalidConfig(format string, a ...any) error {
	return &workload.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidConfig,
		Message: "spec.config: " + fmt.Sprintf(format, a...)}
}

// invalidSpec is the error of another field of the spec.
func invalidSpec(format string, a ...any) error {
	return &workload.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: fmt.Sprintf(format, a...)}
}

// decodeConfig decodes spec.config as an object; numbers stay as written
// (a float64 would round large integers).
func decodeConfig(v *thv1.VirtualMCPServer) (map[string]any, error) {
	if v.Spec.Config == nil {
		return map[string]any{}, nil
	}
	raw, err := json.Marshal(v.Spec.Config)
	if err != nil {
		return nil, invalidConfig("%v", err)
	}
	cfg, err := decodeObject(raw)
	if err != nil {
		return nil, invalidConfig("not a JSON object: %v", err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	return cfg, nil
}

// decodeObject decodes a JSON object with its numbers kept as written (a
// float64 would round large integers).
func decodeObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out map[string]any
	return out, dec.Decode(&out)
}

// recode decodes a section of the decoded spec.config into a typed value;
// absent is the zero value.
func recode(section any, into any, path string) error {
	if section == nil {
		return nil
	}
	raw, err := json.Marshal(section)
	if err == nil {
		err = json.Unmarshal(raw, into)
	}
	if err != nil {
		return invalidConfig("%s: %v", path, err)
	}
	return nil
}

// oidcConfig is the incomingAuth.oidc block of config.yaml, in the keys of
// ToolHive's vmcp config at the pinned release. The client secret itself
// is never here; ClientSecretEnv names the environment variable that
// carries it from its Secret.
type oidcConfig struct {
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

// authzConfig is the incomingAuth.authz block: Cedar policies, as vmcp's
// incoming authorization (Cedar only) reads them.
type authzConfig struct {
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

// incomingAuthConfig is config.yaml's incomingAuth.
type incomingAuthConfig struct {
	Type  string       `json:"type"`
	OIDC  *oidcConfig  `json:"oidc,omitempty"`
	Authz *authzConfig `json:"authz,omitempty"`
}

// incomingAuth builds incomingAuth from spec.incomingAuth. Authorization
// goes through workload.AuthzRunConfig, the MCPServer's path: inline
// policies are parsed before anything is written, type configMap is
// refused, and a referenced MCPAuthzConfig must be cedarv1 (vmcp's
// incoming authorization is Cedar only, and ToolHive's operator refuses
// any other type too).
func incomingAuth(v *thv1.VirtualMCPServer, oidc workload.OIDCWiring, ref *thv1.MCPAuthzConfig) (*incomingAuthConfig, error) {
	in := v.Spec.IncomingAuth
	out := &incomingAuthConfig{Type: in.Type}
	if r := oidc.Resolved; r != nil {
		out.OIDC = &oidcConfig{
			Issuer: r.Issuer, ClientID: r.ClientID, Audience: r.Audience, Resource: r.ResourceURL,
			JWKSURL: r.JWKSURL, IntrospectionURL: r.IntrospectionURL, Scopes: r.Scopes,
			ProtectedResourceAllowPrivateIP: r.ProtectedResourceAllowPrivateIP, JWKSAllowPrivateIP: r.JWKSAllowPrivateIP,
			InsecureAllowHTTP: r.InsecureAllowHTTP, CABundlePath: r.CABundlePath,
		}
		if r.HasClientSecret {
			out.OIDC.ClientSecretEnv = envOIDCClientSecret
		}
	}
	if in.AuthzConfig != nil && in.AuthzConfigRef != nil {
		return nil, invalidSpec("spec.incomingAuth: authzConfig and authzConfigRef are mutually exclusive")
	}
	if ref != nil && ref.Spec.Type != thv1.AuthzTypeCedar {
		return nil, invalidSpec("spec.incomingAuth.authzConfigRef: MCPAuthzConfig %s is of type %s; a VirtualMCPServer authorizes with %s only",
			ref.Name, ref.Spec.Type, thv1.AuthzTypeCedar)
	}
	raw, err := workload.AuthzRunConfig(in.AuthzConfig, ref)
	if err != nil {
		var inv *workload.InvalidSpecError
		if errors.As(err, &inv) {
			inv.Message = strings.Replace(inv.Message, "spec.authzConfig", "spec.incomingAuth.authzConfig", 1)
			return nil, inv
		}
		return nil, invalidSpec("spec.incomingAuth.authzConfigRef: %v", err)
	}
	if raw == nil {
		return out, nil
	}
	var decoded struct {
		Cedar *struct {
			Policies        []string `json:"policies"`
			EntitiesJSON    string   `json:"entities_json"`
			GroupClaimName  string   `json:"group_claim_name"`
			RoleClaimName   string   `json:"role_claim_name"`
			GroupEntityType string   `json:"group_entity_type"`
		} `json:"cedar"`
	}
	if err := json.Unmarshal(raw, &decoded); err != nil || decoded.Cedar == nil {
		return nil, invalidSpec("spec.incomingAuth: the authorization config is not a Cedar config: %v", err)
	}
	c := decoded.Cedar
	out.Authz = &authzConfig{Type: authzCedar, Policies: c.Policies, EntitiesJSON: c.EntitiesJSON,
		GroupClaimName: c.GroupClaimName, RoleClaimName: c.RoleClaimName, GroupEntityType: c.GroupEntityType}
	return out, nil
}

// backendStrategy is one strategy of outgoingAuth, in vmcp's keys.
type backendStrategy struct {
	Type            string                 `json:"type"`
	HeaderInjection *headerInjectionConfig `json:"headerInjection,omitempty"`
	TokenExchange   *tokenExchangeConfig   `json:"tokenExchange,omitempty"`
	// AwsSts is the MCPExternalAuthConfig's awsSts block as it is: vmcp's
	// aws_sts strategy has the same keys.
	AwsSts         *thv1.AWSStsConfig    `json:"awsSts,omitempty"`
	UpstreamInject *upstreamInjectConfig `json:"upstreamInject,omitempty"`
}

// upstreamInjectConfig names the upstream provider of the vMCP's embedded
// authorization server whose token the backend is sent.
type upstreamInjectConfig struct {
	ProviderName string `json:"providerName"`
}

type headerInjectionConfig struct {
	HeaderName     string `json:"headerName"`
	HeaderValueEnv string `json:"headerValueEnv,omitempty"`
}

type tokenExchangeConfig struct {
	TokenURL            string   `json:"tokenUrl"`
	ClientID            string   `json:"clientId,omitempty"`
	ClientSecretEnv     string   `json:"clientSecretEnv,omitempty"`
	Audience            string   `json:"audience,omitempty"`
	Scopes              []string `json:"scopes,omitempty"`
	SubjectTokenType    string   `json:"subjectTokenType,omitempty"`
	SubjectProviderName string   `json:"subjectProviderName,omitempty"`
}

// subjectTokenTypes are the short forms of subject token types ToolHive's
// converter expands to URNs; anything else is passed as written.
var subjectTokenTypes = map[string]string{
	"access_token": "urn:ietf:params:oauth:token-type:access_token",
	"id_token":     "urn:ietf:params:oauth:token-type:id_token",
	"jwt":          "urn:ietf:params:oauth:token-type:jwt",
}

// envNameInvalid matches what an env variable name built from a config
// name may not contain.
var envNameInvalid = regexp.MustCompile(`[^A-Z0-9_]`)

// externalAuthEnv is the variable that carries a secret of the
// MCPExternalAuthConfig name: prefix + the name in upper case, '-' and
// every other character '_'.
func externalAuthEnv(prefix, name string) string {
	return prefix + envNameInvalid.ReplaceAllString(strings.ToUpper(name), "_")
}

// strategyOf converts an MCPExternalAuthConfig into a backend strategy as
// ToolHive's converter does, adding the variable of its secret to env.
// Types vmcp cannot use from a ConfigMap-only config, or hivekeeper does
// not build, are refused.
func strategyOf(path string, cfg *thv1.MCPExternalAuthConfig, env map[string]corev1.EnvVar) (*backendStrategy, error) {
	s := &cfg.Spec
	switch s.Type {
	case thv1.ExternalAuthTypeUnauthenticated:
		return &backendStrategy{Type: strategyUnauth}, nil
	case thv1.ExternalAuthTypeHeaderInjection:
		if s.HeaderInjection == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type headerInjection without spec.headerInjection", path, cfg.Name)
		}
		hi := &headerInjectionConfig{HeaderName: s.HeaderInjection.HeaderName}
		if r := s.HeaderInjection.ValueSecretRef; r != nil {
			hi.HeaderValueEnv = externalAuthEnv(envHeaderInjectionPrefix, cfg.Name)
			env[hi.HeaderValueEnv] = workload.SecretEnv(hi.HeaderValueEnv, r.Name, r.Key)
		}
		return &backendStrategy{Type: strategyHeaderInject, HeaderInjection: hi}, nil
	case thv1.ExternalAuthTypeTokenExchange:
		te := s.TokenExchange
		if te == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type tokenExchange without spec.tokenExchange", path, cfg.Name)
		}
		subject := te.SubjectTokenType
		if urn, ok := subjectTokenTypes[subject]; ok {
			subject = urn
		}
		tc := &tokenExchangeConfig{TokenURL: te.TokenURL, ClientID: te.ClientID, Audience: te.Audience, Scopes: te.Scopes,
			SubjectTokenType: subject, SubjectProviderName: te.SubjectProviderName}
		if r := te.ClientSecretRef; r != nil {
			tc.ClientSecretEnv = externalAuthEnv(envTokenExchangeSecretPrefix, cfg.Name)
			env[tc.ClientSecretEnv] = workload.SecretEnv(tc.ClientSecretEnv, r.Name, r.Key)
		}
		return &backendStrategy{Type: strategyTokenExchange, TokenExchange: tc}, nil
	case thv1.ExternalAuthTypeAWSSts:
		if s.AWSSts == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type awsSts without spec.awsSts", path, cfg.Name)
		}
		return &backendStrategy{Type: strategyAwsSts, AwsSts: s.AWSSts.DeepCopy()}, nil
	case thv1.ExternalAuthTypeUpstreamInject:
		var ui upstreamInjectConfig
		if s.UpstreamInject != nil {
			ui.ProviderName = s.UpstreamInject.ProviderName
		}
		if ui.ProviderName == "" {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type upstreamInject without spec.upstreamInject.providerName", path, cfg.Name)
		}
		return &backendStrategy{Type: strategyUpstream, UpstreamInject: &ui}, nil
	default:
		return nil, invalidSpec("%s: MCPExternalAuthConfig %s is of type %s, which hivekeeper does not apply to vMCP backends "+
			"(it applies unauthenticated, headerInjection, tokenExchange, awsSts and upstreamInject)", path, cfg.Name, s.Type)
	}
}

// aggregationConfig is config.yaml's aggregation, with the fields ToolHive's
// converter carries over (others are dropped, as there).
type aggregationConfig struct {
	ConflictResolution       string                    `json:"conflictResolution"`
	ConflictResolutionConfig *conflictResolutionConfig `json:"conflictResolutionConfig,omitempty"`
	Tools                    []*workloadTools          `json:"tools,omitempty"`
	ExcludeAllTools          bool                      `json:"excludeAllTools,omitempty"`
	DefaultToolVisibility    string                    `json:"defaultToolVisibility,omitempty"`
}

type conflictResolutionConfig struct {
	PrefixFormat  string   `json:"prefixFormat,omitempty"`
	PriorityOrder []string `json:"priorityOrder,omitempty"`
}

// workloadTools are one workload's tool settings. ToolConfigRef is read
// and never written: the referenced MCPToolConfig is merged in.
type workloadTools struct {
	Workload      string                       `json:"workload"`
	ToolConfigRef *thv1.ToolConfigReference    `json:"toolConfigRef,omitempty"`
	Filter        []string                     `json:"filter,omitempty"`
	Overrides     map[string]thv1.ToolOverride `json:"overrides,omitempty"`
	ExcludeAll    bool                         `json:"excludeAll,omitempty"`
}

// aggregation builds the aggregation section from spec.config's. A
// workload's MCPToolConfig fills its filter when it has none, and adds
// the overrides of tools it does not override itself.
func aggregation(section any, tools map[string]*thv1.MCPToolConfig) (*aggregationConfig, error) {
	var a aggregationConfig
	if err := recode(section, &a, "aggregation"); err != nil {
		return nil, err
	}
	if a.ConflictResolution == "" {
		a.ConflictResolution = conflictPrefix
	}
	if c := a.ConflictResolutionConfig; c != nil {
		a.ConflictResolutionConfig = &conflictResolutionConfig{PrefixFormat: c.PrefixFormat, PriorityOrder: c.PriorityOrder}
		if c.PrefixFormat == "" {
			// ToolHive's schema default, whatever the strategy.
			a.ConflictResolutionConfig.PrefixFormat = defaultPrefixFormat
		}
	} else if a.ConflictResolution == conflictPrefix {
		a.ConflictResolutionConfig = &conflictResolutionConfig{PrefixFormat: defaultPrefixFormat}
	} else {
		a.ConflictResolutionConfig = &conflictResolutionConfig{}
	}
	for i, t := range a.Tools {
		if t == nil {
			return nil, invalidConfig("aggregation.tools[%d]: null", i)
		}
		ref := t.ToolConfigRef
		t.ToolConfigRef = nil
		if ref == nil {
			continue
		}
		tc := tools[ref.Name]
		if tc == nil {
			return nil, invalidConfig("aggregation.tools[%d].toolConfigRef: MCPToolConfig %q not resolved", i, ref.Name)
		}
		if len(t.Filter) == 0 && len(tc.Spec.ToolsFilter) > 0 {
			t.Filter = slices.Clone(tc.Spec.ToolsFilter)
		}
		for name, o := range tc.Spec.ToolsOverride {
			if _, ok := t.Overrides[name]; ok {
				continue
			}
			if t.Overrides == nil {
				t.Overrides = map[string]thv1.ToolOverride{}
			}
			t.Overrides[name] = *o.DeepCopy()
		}
	}
	return &a, nil
}

// operationalConfig is config.yaml's operational section. Durations are
// Go durations, written as Go formats them ("1m0s"), as vmcp encodes them.
type operationalConfig struct {
	LogLevel        string           `json:"logLevel,omitempty"`
	Timeouts        *timeoutConfig   `json:"timeouts,omitempty"`
	FailureHandling *failureHandling `json:"failureHandling,omitempty"`
}

type timeoutConfig struct {
	Default     string            `json:"default,omitempty"`
	PerWorkload map[string]string `json:"perWorkload,omitempty"`
}

type failureHandling struct {
	HealthCheckInterval     string          `json:"healthCheckInterval,omitempty"`
	UnhealthyThreshold      int             `json:"unhealthyThreshold,omitempty"`
	HealthCheckTimeout      string          `json:"healthCheckTimeout,omitempty"`
	StatusReportingInterval string          `json:"statusReportingInterval,omitempty"`
	PartialFailureMode      string          `json:"partialFailureMode,omitempty"`
	CircuitBreaker          *circuitBreaker `json:"circuitBreaker,omitempty"`
}

type circuitBreaker struct {
	Enabled          bool   `json:"enabled,omitempty"`
	FailureThreshold int    `json:"failureThreshold,omitempty"`
	Timeout          string `json:"timeout,omitempty"`
}

// operational builds the operational section: spec.config's values, each
// duration normalised, and vmcp's defaults for every unset one.
func operational(section any) (*operationalConfig, error) {
	var o operationalConfig
	if err := recode(section, &o, "operational"); err != nil {
		return nil, err
	}
	var bad error
	dur := func(path string, s *string, def time.Duration) {
		if *s == "" {
			if def != 0 {
				*s = def.String()
			}
			return
		}
		d, err := time.ParseDuration(*s)
		if err != nil && bad == nil {
			bad = invalidConfig("operational.%s: %q is not a duration (such as 30s or 1m30s)", path, *s)
		}
		*s = d.String()
	}
	if o.Timeouts == nil {
		o.Timeouts = &timeoutConfig{}
	}
	dur("timeouts.default", &o.Timeouts.Default, defaultTimeout)
	for k, v := range o.Timeouts.PerWorkload {
		dur("timeouts.perWorkload."+k, &v, 0)
		o.Timeouts.PerWorkload[k] = v
	}
	// The schema default of healthCheckTimeout applies to a failureHandling
	// the spec sets; vmcp's own defaults leave it unset.
	var healthCheckTimeout time.Duration
	if o.FailureHandling == nil {
		o.FailureHandling = &failureHandling{}
	} else {
		healthCheckTimeout = defaultHealthCheckTimeout
	}
	f := o.FailureHandling
	dur("failureHandling.healthCheckInterval", &f.HealthCheckInterval, defaultHealthCheckInterval)
	dur("failureHandling.healthCheckTimeout", &f.HealthCheckTimeout, healthCheckTimeout)
	dur("failureHandling.statusReportingInterval", &f.StatusReportingInterval, defaultStatusReportingInterval)
	if f.UnhealthyThreshold == 0 {
		f.UnhealthyThreshold = defaultUnhealthyThreshold
	}
	if f.PartialFailureMode == "" {
		f.PartialFailureMode = defaultPartialFailureMode
	}
	if f.CircuitBreaker == nil {
		f.CircuitBreaker = &circuitBreaker{}
	}
	if f.CircuitBreaker.FailureThreshold == 0 {
		f.CircuitBreaker.FailureThreshold = defaultBreakerThreshold
	}
	dur("failureHandling.circuitBreaker.timeout", &f.CircuitBreaker.Timeout, defaultBreakerTimeout)
	return &o, bad
}

// Composite tool step defaults of ToolHive's CRD schema.
const (
	defaultStepType    = "tool"
	defaultErrorAction = "abort"
)

// defaultSteps gives the steps of inline composite tools (and the step of
// a forEach) the defaults of ToolHive's schema: type tool, and action abort
// in onError, onDecline and onCancel when they are set without one. The
// tools are otherwise passed as written; vmcp validates them.
// compositeTools appends the referenced definitions to spec.config's
// inline compositeTools, in compositeToolRefs order, as ToolHive's
// converter merges them; a tool name used twice is refused, as there (vmcp
// could not tell the tools apart).
func compositeTools(cfg map[string]any, defs map[string]*thv1.VirtualMCPCompositeToolDefinition) error {
	var refs []struct {
		Name string `json:"name"`
	}
	if err := recode(cfg[keyCompositeToolRefs], &refs, keyCompositeToolRefs); err != nil {
		return err
	}
	inline, ok := cfg[keyCompositeTools].([]any)
	if !ok && cfg[keyCompositeTools] != nil {
		return invalidConfig("%s: not a list", keyCompositeTools)
	}
	tools := slices.Clone(inline)
	for _, ref := range refs {
		def := defs[ref.Name]
		if def == nil {
			// Resolution makes the server wait first; this is defence.
			return invalidConfig("%s: VirtualMCPCompositeToolDefinition %q not resolved", keyCompositeToolRefs, ref.Name)
		}
		tool, err := toMap(def.Spec)
		if err != nil {
			return invalidConfig("%s: VirtualMCPCompositeToolDefinition %q: %v", keyCompositeToolRefs, ref.Name, err)
		}
		tools = append(tools, tool)
	}
	seen := map[string]bool{}
	for i, t := range tools {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		if seen[name] {
			return invalidConfig("%s[%d]: duplicate composite tool name %q (inline and referenced tools share one namespace)", keyCompositeTools, i, name)
		}
		seen[name] = true
	}
	if len(tools) > 0 {
		cfg[keyCompositeTools] = tools
	}
	return nil
}

// toMap is v as the decoded JSON object spec.config's sections are.
func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeObject(raw)
}

func defaultSteps(tools any) {
	list, _ := tools.([]any)
	for _, t := range list {
		tool, _ := t.(map[string]any)
		steps, _ := tool["steps"].([]any)
		for _, s := range steps {
			defaultStep(s)
		}
	}
}

func defaultStep(s any) {
	step, ok := s.(map[string]any)
	if !ok {
		return
	}
	if t, _ := step["type"].(string); t == "" {
		step["type"] = defaultStepType
	}
	for _, k := range []string{"onError", "onDecline", "onCancel"} {
		if h, ok := step[k].(map[string]any); ok {
			if a, _ := h["action"].(string); a == "" {
				h["action"] = defaultErrorAction
			}
		}
	}
	if inner, ok := step["step"]; ok {
		defaultStep(inner)
	}
}

// sessionStorage is config.yaml's sessionStorage for spec.sessionStorage,
// as ToolHive's converter writes it: the Redis connection without the
// password (which vmcp reads from THV_SESSION_REDIS_PASSWORD), nil for
// memory or none.
func sessionStorage(st *thv1.SessionStorageConfig) map[string]any {
	r := workload.SessionRedis(st)
	if r == nil {
		return nil
	}
	out := map[string]any{"provider": thv1.SessionStorageProviderRedis, "address": r.Address}
	if r.DB != 0 {
		out["db"] = r.DB
	}
	if r.KeyPrefix != "" {
		out["keyPrefix"] = r.KeyPrefix
	}
	return out
}
