package vmcp

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

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

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
	// SessionEnv is the session storage Redis password's variable.
	SessionEnv []corev1.EnvVar
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
func renderConfig(v *thv1.VirtualMCPServer, oidc wiring.OIDCWiring, members []member, refs Input) (string, configWiring, error) {
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
	optimizerEmbeddingService(cfg, v, refs.EmbeddingService)
	if err := compositeTools(cfg, refs.CompositeTools); err != nil {
		return "", w, err
	}
	defaultSteps(cfg[keyCompositeTools])
	delete(cfg, keyTelemetry)
	tw, err := wiring.Telemetry(refs.Telemetry, v.Spec.TelemetryConfigRef, v.Name, v.Namespace)
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
	// Session storage is always the spec's (or the default Redis), never
	// spec.config's: ToolHive's converter recomputes it too. Its CA
	// bundle is the last volume, as ToolHive's operator mounts it.
	session := wiring.SessionStorage(v.Spec.SessionStorage, refs.DefaultRedis, wiring.FallbackUnlessRedis)
	delete(cfg, keySessionStorage)
	if st := sessionStorage(session.Redis); st != nil {
		cfg[keySessionStorage] = st
	}
	w.SessionEnv = session.Env
	w.Volumes, w.Mounts = append(w.Volumes, session.Volumes...), append(w.Mounts, session.Mounts...)
	backends := make([]schema.VMCPBackend, 0, len(w.Auth.Served))
	for _, m := range w.Auth.Served {
		backends = append(backends, m.VMCPBackend)
	}
	cfg[keyBackends] = backends
	out, err := schema.MarshalVMCPConfig(cfg)
	if err != nil {
		return "", w, invalidConfig("%v", err)
	}
	return out, w, nil
}

// invalidConfig is the error of a spec.config hivekeeper cannot build from.
func invalidConfig(format string, a ...any) error {
	return &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidConfig,
		Message: "spec.config: " + fmt.Sprintf(format, a...)}
}

// invalidSpec is the error of another field of the spec.
func invalidSpec(format string, a ...any) error {
	return &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: fmt.Sprintf(format, a...)}
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

// incomingAuth builds incomingAuth from spec.incomingAuth. Authorization
// goes through wiring.AuthzRunConfig, the MCPServer's path: inline
// policies are parsed before anything is written, type configMap is
// refused, and a referenced MCPAuthzConfig must be cedarv1 (vmcp's
// incoming authorization is Cedar only, and ToolHive's operator refuses
// any other type too).
func incomingAuth(v *thv1.VirtualMCPServer, oidc wiring.OIDCWiring, ref *thv1.MCPAuthzConfig) (*schema.VMCPIncomingAuth, error) {
	in := v.Spec.IncomingAuth
	out := &schema.VMCPIncomingAuth{Type: in.Type}
	if r := oidc.Resolved; r != nil {
		out.OIDC = &schema.VMCPOIDCConfig{
			Issuer: r.Issuer, ClientID: r.ClientID, Audience: r.Audience, Resource: r.ResourceURL,
			JWKSURL: r.JWKSURL, IntrospectionURL: r.IntrospectionURL, Scopes: r.Scopes,
			ProtectedResourceAllowPrivateIP: r.ProtectedResourceAllowPrivateIP, JWKSAllowPrivateIP: r.JWKSAllowPrivateIP,
			InsecureAllowHTTP: r.InsecureAllowHTTP, CABundlePath: r.CABundlePath,
		}
		if r.HasClientSecret {
			out.OIDC.ClientSecretEnv = naming.EnvVMCPOIDCClientSecret
		}
	}
	if in.AuthzConfig != nil && in.AuthzConfigRef != nil {
		return nil, invalidSpec("spec.incomingAuth: authzConfig and authzConfigRef are mutually exclusive")
	}
	if ref != nil && ref.Spec.Type != thv1.AuthzTypeCedar {
		return nil, invalidSpec("spec.incomingAuth.authzConfigRef: MCPAuthzConfig %s is of type %s; a VirtualMCPServer authorizes with %s only",
			ref.Name, ref.Spec.Type, thv1.AuthzTypeCedar)
	}
	raw, err := wiring.AuthzRunConfig(in.AuthzConfig, ref)
	if err != nil {
		var inv *wiring.InvalidSpecError
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
	out.Authz = &schema.VMCPAuthzConfig{Type: authzCedar, Policies: c.Policies, EntitiesJSON: c.EntitiesJSON,
		GroupClaimName: c.GroupClaimName, RoleClaimName: c.RoleClaimName, GroupEntityType: c.GroupEntityType}
	return out, nil
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
func strategyOf(path string, cfg *thv1.MCPExternalAuthConfig, env map[string]corev1.EnvVar) (*schema.VMCPBackendStrategy, error) {
	s := &cfg.Spec
	switch s.Type {
	case thv1.ExternalAuthTypeUnauthenticated:
		return &schema.VMCPBackendStrategy{Type: strategyUnauth}, nil
	case thv1.ExternalAuthTypeHeaderInjection:
		if s.HeaderInjection == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type headerInjection without spec.headerInjection", path, cfg.Name)
		}
		hi := &schema.VMCPHeaderInjection{HeaderName: s.HeaderInjection.HeaderName}
		if r := s.HeaderInjection.ValueSecretRef; r != nil {
			hi.HeaderValueEnv = externalAuthEnv(envHeaderInjectionPrefix, cfg.Name)
			env[hi.HeaderValueEnv] = wiring.SecretEnv(hi.HeaderValueEnv, r.Name, r.Key)
		}
		return &schema.VMCPBackendStrategy{Type: strategyHeaderInject, HeaderInjection: hi}, nil
	case thv1.ExternalAuthTypeTokenExchange:
		te := s.TokenExchange
		if te == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type tokenExchange without spec.tokenExchange", path, cfg.Name)
		}
		subject := te.SubjectTokenType
		if urn, ok := subjectTokenTypes[subject]; ok {
			subject = urn
		}
		tc := &schema.VMCPTokenExchange{TokenURL: te.TokenURL, ClientID: te.ClientID, Audience: te.Audience, Scopes: te.Scopes,
			SubjectTokenType: subject, SubjectProviderName: te.SubjectProviderName}
		if r := te.ClientSecretRef; r != nil {
			tc.ClientSecretEnv = externalAuthEnv(envTokenExchangeSecretPrefix, cfg.Name)
			env[tc.ClientSecretEnv] = wiring.SecretEnv(tc.ClientSecretEnv, r.Name, r.Key)
		}
		return &schema.VMCPBackendStrategy{Type: strategyTokenExchange, TokenExchange: tc}, nil
	case thv1.ExternalAuthTypeAWSSts:
		if s.AWSSts == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type awsSts without spec.awsSts", path, cfg.Name)
		}
		return &schema.VMCPBackendStrategy{Type: strategyAwsSts, AwsSts: s.AWSSts.DeepCopy()}, nil
	case thv1.ExternalAuthTypeUpstreamInject:
		var ui schema.VMCPUpstreamInject
		if s.UpstreamInject != nil {
			ui.ProviderName = s.UpstreamInject.ProviderName
		}
		if ui.ProviderName == "" {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type upstreamInject without spec.upstreamInject.providerName", path, cfg.Name)
		}
		return &schema.VMCPBackendStrategy{Type: strategyUpstream, UpstreamInject: &ui}, nil
	default:
		return nil, invalidSpec("%s: MCPExternalAuthConfig %s is of type %s, which hivekeeper does not apply to vMCP backends "+
			"(it applies unauthenticated, headerInjection, tokenExchange, awsSts and upstreamInject)", path, cfg.Name, s.Type)
	}
}

// aggregation builds the aggregation section from spec.config's. A
// workload's MCPToolConfig fills its filter when it has none, and adds
// the overrides of tools it does not override itself.
func aggregation(section any, tools map[string]*thv1.MCPToolConfig) (*schema.VMCPAggregation, error) {
	var a schema.VMCPAggregation
	if err := recode(section, &a, "aggregation"); err != nil {
		return nil, err
	}
	if a.ConflictResolution == "" {
		a.ConflictResolution = conflictPrefix
	}
	if c := a.ConflictResolutionConfig; c != nil {
		a.ConflictResolutionConfig = &schema.VMCPConflictResolution{PrefixFormat: c.PrefixFormat, PriorityOrder: c.PriorityOrder}
		if c.PrefixFormat == "" {
			// ToolHive's schema default, whatever the strategy.
			a.ConflictResolutionConfig.PrefixFormat = defaultPrefixFormat
		}
	} else if a.ConflictResolution == conflictPrefix {
		a.ConflictResolutionConfig = &schema.VMCPConflictResolution{PrefixFormat: defaultPrefixFormat}
	} else {
		a.ConflictResolutionConfig = &schema.VMCPConflictResolution{}
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

// operational builds the operational section: spec.config's values, each
// duration normalised, and vmcp's defaults for every unset one.
func operational(section any) (*schema.VMCPOperational, error) {
	var o schema.VMCPOperational
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
		o.Timeouts = &schema.VMCPTimeouts{}
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
		o.FailureHandling = &schema.VMCPFailureHandling{}
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
		f.CircuitBreaker = &schema.VMCPCircuitBreaker{}
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

// sessionStorage is config.yaml's sessionStorage for the Redis session
// storage wires, as ToolHive's converter writes it: the connection
// without the password (which vmcp reads from THV_SESSION_REDIS_PASSWORD),
// and its TLS block when there is one ({} for the system roots); nil for
// memory or none.
func sessionStorage(r *schema.SessionRedisConfig) map[string]any {
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
	if r.TLS != nil {
		out["tls"] = r.TLS
	}
	return out
}
