package vmcp

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// configWiring is what the vMCP pod needs beside config.yaml for it, in
// ToolHive's order of the container's environment: the variables of
// outgoing auth secrets (config.yaml names only the variables), those of
// the entries' headers, telemetry's and the embedded authorization
// server's; the entries' and telemetry CA bundle volumes and the
// authorization server's Secret volumes; and how outgoing auth was
// resolved against the members.
type configWiring struct {
	AuthEnv      []corev1.EnvVar
	HeaderEnv    []corev1.EnvVar
	TelemetryEnv []corev1.EnvVar
	AuthServer   wiring.AuthServerWiring
	// EntryVolumes/EntryMounts are the entries' CA bundles, TelemetryVolumes
	// and TelemetryMounts the collector's.
	EntryVolumes     []corev1.Volume
	EntryMounts      []corev1.VolumeMount
	TelemetryVolumes []corev1.Volume
	TelemetryMounts  []corev1.VolumeMount
	Auth             *backendAuth
	// Session is session storage: its Redis, password variable and CA
	// bundle volume.
	Session wiring.SessionStorageWiring
	// AuthServerConfig is authserver-config.yaml, "" for none.
	AuthServerConfig string
}

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
	strategyXAA           = "xaa"
	// Prefixes of the variables that carry an MCPExternalAuthConfig's
	// secret into the vmcp container, followed by the config's name in
	// upper case with every other character '_', as ToolHive's operator
	// names them.
	envTokenExchangeSecretPrefix = "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_"
	envHeaderInjectionPrefix     = "TOOLHIVE_HEADER_INJECTION_VALUE_"
	envXAAIDPSecretPrefix        = "TOOLHIVE_XAA_IDP_CLIENT_SECRET_"
	envXAATargetSecretPrefix     = "TOOLHIVE_XAA_TARGET_CLIENT_SECRET_"
)

// Operational defaults vmcp's configuration fills in for what
// spec.config.operational leaves unset (ToolHive's
// DefaultOperationalConfig, merged into what is set), and the CRD schema's
// for fields of objects the spec sets, which ToolHive's API server
// applies before its operator reads the spec (hivekeeper's CRD declares
// the same; the builder applies them too, so a spec read without an API
// server builds the same bytes).
const (
	defaultTimeout                 = "30s"
	defaultHealthCheckInterval     = "30s"
	defaultUnhealthyThreshold      = 3
	defaultStatusReportingInterval = "30s"
	defaultPartialFailureMode      = "fail"
	defaultBreakerThreshold        = 5
	defaultBreakerTimeout          = "60s"
	defaultHealthCheckTimeout      = "10s"
	defaultCodeModeStepLimit       = 100000
	defaultCodeModeConcurrency     = 10
	defaultCodeModeToolTimeout     = "30s"
	defaultEmbeddingTimeout        = "30s"
)

// outgoingAuthSource is spec.outgoingAuth.source with ToolHive's default,
// discovered.
func outgoingAuthSource(v *thv1.VirtualMCPServer) string {
	if o := v.Spec.OutgoingAuth; o != nil && o.Source != "" {
		return o.Source
	}
	return thv1.OutgoingAuthSourceDiscovered
}

// Discovers reports whether vmcp finds the group's members itself
// (outgoingAuth.source discovered, ToolHive's default) rather than
// reading them from config.yaml (inline).
func Discovers(v *thv1.VirtualMCPServer) bool {
	return outgoingAuthSource(v) == thv1.OutgoingAuthSourceDiscovered
}

// renderConfig builds config.yaml as ToolHive's operator (its converter,
// then its controller's outgoing auth) builds it for the same spec,
// section by section:
//
//   - spec.config is the start: sections nothing replaces (backends,
//     compositeToolRefs, metadata, optimizer, codeMode, rateLimiting) are
//     passed as written;
//   - name and groupRef are the server's; passthroughHeaders are
//     spec.passthroughHeaders when set;
//   - incomingAuth is rebuilt from spec.incomingAuth: type, the resolved
//     OIDC block, and authorization (inline Cedar policies or a cedarv1
//     MCPAuthzConfig);
//   - outgoingAuth is built from spec.outgoingAuth; in inline mode also
//     from the members' own externalAuthConfigRefs, with the backends
//     served listed (resolveBackendAuth); in discovered mode vmcp reads
//     the members and their configs itself;
//   - aggregation keeps its known fields, defaults conflict resolution to
//     prefix "{workload}_", and merges each tool's MCPToolConfig into its
//     filter and overrides;
//   - compositeTools are the inline ones followed by the referenced
//     VirtualMCPCompositeToolDefinitions';
//   - operational gets vmcp's defaults for what it leaves unset;
//   - telemetry is the MCPTelemetryConfig's and sessionStorage
//     spec.sessionStorage's (spec.config's are not read); an audit block
//     gets the server's name as its component.
func renderConfig(v *thv1.VirtualMCPServer, oidc wiring.OIDCWiring, members []member, refs Input) (string, configWiring, error) {
	var w configWiring
	spec := thv1.VirtualMCPConfig{}
	if v.Spec.Config != nil {
		spec = *v.Spec.Config.DeepCopy()
	}
	cfg := &schema.VMCPConfig{
		Name: v.Name, Group: v.Spec.GroupRef.Name, Backends: spec.Backends,
		CompositeToolRefs: spec.CompositeToolRefs, Metadata: spec.Metadata,
		Audit: spec.Audit, PassthroughHeaders: spec.PassthroughHeaders,
	}
	if len(v.Spec.PassthroughHeaders) > 0 {
		cfg.PassthroughHeaders = v.Spec.PassthroughHeaders
	}
	var err error
	if w.AuthServer, w.AuthServerConfig, err = authServer(v, oidc, refs.Release); err != nil {
		return "", w, err
	}
	if cfg.IncomingAuth, err = incomingAuth(v, oidc, refs.Authz, refs.AuthzFile); err != nil {
		return "", w, err
	}
	if w.Auth, err = resolveBackendAuth(v, members, refs.ExtAuth, refs.MemberAuth, w.AuthServer.FirstUpstreamName(), w.AuthServer.Upstreams()); err != nil {
		return "", w, err
	}
	cfg.OutgoingAuth = w.Auth.Section
	if !Discovers(v) {
		cfg.Backends = staticBackends(v, w.Auth.Served)
	}
	w.AuthEnv = w.Auth.Env
	if w.HeaderEnv, w.EntryVolumes, w.EntryMounts, err = entryWiring(members); err != nil {
		return "", w, err
	}
	if cfg.Aggregation, err = aggregation(spec.Aggregation, refs.Tools); err != nil {
		return "", w, err
	}
	if cfg.CompositeTools, err = compositeTools(spec, refs.CompositeTools); err != nil {
		return "", w, err
	}
	cfg.Operational = operational(spec.Operational)
	cfg.Optimizer, cfg.CodeMode = optimizer(spec.Optimizer), codeMode(spec.CodeMode)
	optimizerEmbeddingService(cfg, v, refs.EmbeddingService)
	if cfg.RateLimiting, err = rateLimiting(spec.RateLimiting); err != nil {
		return "", w, err
	}
	tw, err := wiring.Telemetry(refs.Telemetry, v.Spec.TelemetryConfigRef, v.Name, v.Namespace)
	if err != nil {
		return "", w, err
	}
	cfg.Telemetry = tw.RunConfig
	w.TelemetryEnv, w.TelemetryVolumes, w.TelemetryMounts = tw.Env, tw.Volumes, tw.Mounts
	if cfg.Audit != nil && cfg.Audit.Component == "" {
		cfg.Audit.Component = v.Name
	}
	// Session storage is always the spec's (or the default Redis), never
	// spec.config's: ToolHive's converter recomputes it too.
	w.Session = wiring.SessionStorage(v.Spec.SessionStorage, refs.DefaultRedis, wiring.FallbackUnlessRedis)
	cfg.SessionStorage = sessionStorage(w.Session.Redis)
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

// recode decodes the JSON of from into into.
func recode(from, into any, path string) error {
	raw, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(raw, into)
	}
	if err != nil {
		return invalidConfig("%s: %v", path, err)
	}
	return nil
}

// incomingAuth builds incomingAuth from spec.incomingAuth, as ToolHive's
// converter does. Authorization is Cedar only (vmcp's incoming
// authorization is, and ToolHive's operator refuses any other type too):
//
//   - inline policies, parsed before anything is written, with the
//     spec's claim settings;
//   - a file from a ConfigMap (type configMap, read by the controller):
//     its policies, entities and claim settings, the spec's claim
//     settings over them;
//   - a cedarv1 MCPAuthzConfig: its options as they are.
//
// Cedar reads its claims from the primary upstream (primaryUpstream).
func incomingAuth(v *thv1.VirtualMCPServer, oidc wiring.OIDCWiring, ref *thv1.MCPAuthzConfig, file *wiring.AuthzFile) (*thv1.VMCPIncomingAuth, error) {
	in := v.Spec.IncomingAuth
	out := &thv1.VMCPIncomingAuth{Type: in.Type}
	if r := oidc.Resolved; r != nil {
		out.OIDC = &thv1.VMCPOIDC{
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
	var authz *thv1.VMCPAuthz
	switch a := in.AuthzConfig; {
	case ref == nil && a == nil:
		return out, nil
	case ref == nil && wiring.AuthzFromConfigMap(a) != "":
		if file == nil {
			return nil, invalidSpec("spec.incomingAuth.authzConfig: ConfigMap %s has not been read", a.ConfigMap.Name)
		}
		c, err := file.CedarOptions()
		if err != nil {
			return nil, invalidSpec("spec.incomingAuth.authzConfig: authz ConfigMap %s/%s is not a Cedar config: %v", v.Namespace, a.ConfigMap.Name, err)
		}
		authz = &thv1.VMCPAuthz{Type: authzCedar, Policies: c.Policies, EntitiesJSON: c.EntitiesJSON,
			GroupClaimName: cmp.Or(a.GroupClaimName, c.GroupClaimName), RoleClaimName: cmp.Or(a.RoleClaimName, c.RoleClaimName),
			GroupEntityType: cmp.Or(a.GroupEntityType, c.GroupEntityType)}
	default:
		raw, err := wiring.AuthzRunConfig(a, ref, nil)
		if err != nil {
			var inv *wiring.InvalidSpecError
			if errors.As(err, &inv) {
				inv.Message = strings.Replace(inv.Message, "spec.authzConfig", "spec.incomingAuth.authzConfig", 1)
				return nil, inv
			}
			return nil, invalidSpec("spec.incomingAuth.authzConfigRef: %v", err)
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
		authz = &thv1.VMCPAuthz{Type: authzCedar, Policies: c.Policies, EntitiesJSON: c.EntitiesJSON,
			GroupClaimName: c.GroupClaimName, RoleClaimName: c.RoleClaimName, GroupEntityType: c.GroupEntityType}
	}
	var err error
	if authz.PrimaryUpstreamProvider, err = primaryUpstream(v); err != nil {
		return nil, err
	}
	out.Authz = authz
	return out, nil
}

// defaultUpstream is the name of an upstream that has none, as ToolHive
// resolves it.
const defaultUpstream = "default"

// primaryUpstream is the upstream whose claims Cedar reads, as ToolHive's
// converter resolves it: the one named explicitly (wiring.PrimaryUpstreamProvider),
// which must be one of spec.authServerConfig's upstreams (an unnamed
// upstream is "default"); else the first upstream; "" without an
// authorization server (Cedar then reads the claims of the token the
// client presented). An authorization server without upstreams is
// refused with spec.incomingAuth.authzConfig: its tokens carry no
// upstream claims for the policies to read.
func primaryUpstream(v *thv1.VirtualMCPServer) (string, error) {
	as := v.Spec.AuthServerConfig
	if as != nil && len(as.UpstreamProviders) == 0 && v.Spec.IncomingAuth.AuthzConfig != nil {
		return "", &wiring.InvalidSpecError{Condition: thv1.ConditionAuthServerConfigValidated, Reason: thv1.ReasonAuthzRequiresUpstream,
			Message: "spec.authServerConfig is set but has no upstream providers, and spec.incomingAuth.authzConfig references claims. " +
				"Grant-only token issuance does not create the provenance-bound upstream-token entries Cedar needs to select upstream-derived claims. " +
				"Configure spec.authServerConfig.upstreamProviders with at least one upstream IDP, or remove authServerConfig if clients will " +
				"present IdP tokens directly."}
	}
	if explicit, _ := wiring.PrimaryUpstreamProvider(v); explicit != "" {
		if as == nil {
			return "", &wiring.InvalidSpecError{Condition: thv1.ConditionAuthServerConfigValidated, Reason: thv1.ReasonAuthzPrimaryProviderRequiresAuthServer,
				Message: fmt.Sprintf("primaryUpstreamProvider=%q is set but spec.authServerConfig is not configured. "+
					"The field names an upstream IDP on the embedded auth server, which is required for it to take effect. "+
					"Remove primaryUpstreamProvider, or configure spec.authServerConfig with an upstream of that name.", explicit)}
		}
		for _, up := range as.UpstreamProviders {
			if cmp.Or(up.Name, defaultUpstream) == explicit {
				return explicit, nil
			}
		}
		return "", &wiring.InvalidSpecError{Condition: thv1.ConditionAuthServerConfigValidated, Reason: thv1.ReasonAuthzUpstreamUnknown,
			Message: fmt.Sprintf("primaryUpstreamProvider=%q does not match any upstream declared on spec.authServerConfig.upstreamProviders. "+
				"Set primaryUpstreamProvider to one of the configured upstream names, or leave it empty to default to the first upstream.", explicit)}
	}
	if as != nil && len(as.UpstreamProviders) > 0 {
		return cmp.Or(as.UpstreamProviders[0].Name, defaultUpstream), nil
	}
	return "", nil
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
// ToolHive's converter does. Types vmcp cannot use from a ConfigMap-only
// config, or hivekeeper does not build, are refused.
func strategyOf(path string, cfg *thv1.MCPExternalAuthConfig) (*thv1.VMCPBackendAuthStrategy, error) {
	s := &cfg.Spec
	switch s.Type {
	case thv1.ExternalAuthTypeUnauthenticated:
		return &thv1.VMCPBackendAuthStrategy{Type: strategyUnauth}, nil
	case thv1.ExternalAuthTypeHeaderInjection:
		if s.HeaderInjection == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type headerInjection without spec.headerInjection", path, cfg.Name)
		}
		hi := &thv1.VMCPHeaderInjection{HeaderName: s.HeaderInjection.HeaderName}
		if s.HeaderInjection.ValueSecretRef != nil {
			hi.HeaderValueEnv = externalAuthEnv(envHeaderInjectionPrefix, cfg.Name)
		}
		return &thv1.VMCPBackendAuthStrategy{Type: strategyHeaderInject, HeaderInjection: hi}, nil
	case thv1.ExternalAuthTypeTokenExchange:
		te := s.TokenExchange
		if te == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type tokenExchange without spec.tokenExchange", path, cfg.Name)
		}
		subject := te.SubjectTokenType
		if urn, ok := subjectTokenTypes[subject]; ok {
			subject = urn
		}
		tc := &thv1.VMCPTokenExchange{TokenURL: te.TokenURL, ClientID: te.ClientID, Audience: te.Audience, Scopes: te.Scopes,
			SubjectTokenType: subject, SubjectProviderName: te.SubjectProviderName}
		if te.ClientSecretRef != nil {
			tc.ClientSecretEnv = externalAuthEnv(envTokenExchangeSecretPrefix, cfg.Name)
		}
		return &thv1.VMCPBackendAuthStrategy{Type: strategyTokenExchange, TokenExchange: tc}, nil
	case thv1.ExternalAuthTypeAWSSts:
		src := s.AWSSts
		if src == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type awsSts without spec.awsSts", path, cfg.Name)
		}
		sts := &thv1.VMCPAwsSts{Region: src.Region, Service: src.Service, FallbackRoleArn: src.FallbackRoleArn,
			RoleClaim: src.RoleClaim, SessionDuration: src.SessionDuration, SessionNameClaim: src.SessionNameClaim,
			SubjectProviderName: src.SubjectProviderName, RoleMappings: []thv1.VMCPRoleMapping{}}
		for _, m := range src.RoleMappings {
			rm := thv1.VMCPRoleMapping{Claim: m.Claim, Matcher: m.Matcher, RoleArn: m.RoleArn}
			if m.Priority != nil {
				p := int(*m.Priority)
				rm.Priority = &p
			}
			sts.RoleMappings = append(sts.RoleMappings, rm)
		}
		return &thv1.VMCPBackendAuthStrategy{Type: strategyAwsSts, AwsSts: sts}, nil
	case thv1.ExternalAuthTypeUpstreamInject:
		var ui thv1.VMCPUpstreamInject
		if s.UpstreamInject != nil {
			ui.ProviderName = s.UpstreamInject.ProviderName
		}
		if ui.ProviderName == "" {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type upstreamInject without spec.upstreamInject.providerName", path, cfg.Name)
		}
		return &thv1.VMCPBackendAuthStrategy{Type: strategyUpstream, UpstreamInject: &ui}, nil
	case thv1.ExternalAuthTypeXAA:
		x := s.XAA
		if x == nil {
			return nil, invalidSpec("%s: MCPExternalAuthConfig %s: type xaa without spec.xaa", path, cfg.Name)
		}
		xc := &thv1.VMCPXAA{IDPTokenURL: x.IDPTokenURL, IDPClientID: x.IDPClientID, TargetTokenURL: x.TargetTokenURL,
			InsecureTargetTokenURL: x.InsecureTargetTokenURL, TargetClientID: x.TargetClientID, TargetAudience: x.TargetAudience,
			TargetResource: x.TargetResource, Scopes: x.Scopes, SubjectProviderName: x.SubjectProviderName,
			SubjectTokenType: x.SubjectTokenType}
		// The variables secretEnv mounts, named in both modes: ToolHive's
		// converter leaves them out of a discovered-mode config, whose
		// strategy vmcp then cannot authenticate a client with.
		if x.IDPClientSecretRef != nil {
			xc.IDPClientSecretEnv = externalAuthEnv(envXAAIDPSecretPrefix, cfg.Name)
		}
		if x.TargetClientSecretRef != nil {
			xc.TargetClientSecretEnv = externalAuthEnv(envXAATargetSecretPrefix, cfg.Name)
		}
		return &thv1.VMCPBackendAuthStrategy{Type: strategyXAA, XAA: xc}, nil
	default:
		return nil, invalidSpec("%s: MCPExternalAuthConfig %s is of type %s, which hivekeeper does not apply to vMCP backends "+
			"(it applies unauthenticated, headerInjection, tokenExchange, awsSts, upstreamInject and xaa)", path, cfg.Name, s.Type)
	}
}

// secretEnv are the variables that carry an MCPExternalAuthConfig's
// secret into the vmcp container, as ToolHive's operator mounts them
// (getExternalAuthConfigSecretEnvVars): token exchange's client secret,
// header injection's value, xaa's identity provider and target client
// secrets (in that order), none for the other types.
func secretEnv(cfg *thv1.MCPExternalAuthConfig) []corev1.EnvVar {
	s := &cfg.Spec
	switch {
	case s.Type == thv1.ExternalAuthTypeXAA && s.XAA != nil:
		var out []corev1.EnvVar
		if r := s.XAA.IDPClientSecretRef; r != nil {
			out = append(out, wiring.SecretEnv(externalAuthEnv(envXAAIDPSecretPrefix, cfg.Name), r.Name, r.Key))
		}
		if r := s.XAA.TargetClientSecretRef; r != nil {
			out = append(out, wiring.SecretEnv(externalAuthEnv(envXAATargetSecretPrefix, cfg.Name), r.Name, r.Key))
		}
		return out
	case s.Type == thv1.ExternalAuthTypeTokenExchange && s.TokenExchange != nil && s.TokenExchange.ClientSecretRef != nil:
		r := s.TokenExchange.ClientSecretRef
		return []corev1.EnvVar{wiring.SecretEnv(externalAuthEnv(envTokenExchangeSecretPrefix, cfg.Name), r.Name, r.Key)}
	case s.Type == thv1.ExternalAuthTypeHeaderInjection && s.HeaderInjection != nil && s.HeaderInjection.ValueSecretRef != nil:
		r := s.HeaderInjection.ValueSecretRef
		return []corev1.EnvVar{wiring.SecretEnv(externalAuthEnv(envHeaderInjectionPrefix, cfg.Name), r.Name, r.Key)}
	}
	return nil
}

// aggregation builds the aggregation section from spec.config's, as
// ToolHive's converter copies it field by field: conflict resolution
// defaults to prefix "{workload}_" (an empty config for the other
// strategies), and a workload's MCPToolConfig fills its filter when it
// has none and adds the overrides of tools it does not override itself.
func aggregation(src *thv1.VMCPAggregation, tools map[string]*thv1.MCPToolConfig) (*thv1.VMCPAggregation, error) {
	if src == nil {
		return &thv1.VMCPAggregation{ConflictResolution: conflictPrefix,
			ConflictResolutionConfig: &thv1.VMCPConflictResolution{PrefixFormat: defaultPrefixFormat}}, nil
	}
	a := &thv1.VMCPAggregation{ConflictResolution: src.ConflictResolution, ExcludeAllTools: src.ExcludeAllTools,
		DefaultToolVisibility: src.DefaultToolVisibility}
	if a.ConflictResolution == "" {
		a.ConflictResolution = conflictPrefix
	}
	switch c := src.ConflictResolutionConfig; {
	case c != nil:
		a.ConflictResolutionConfig = &thv1.VMCPConflictResolution{PrefixFormat: c.PrefixFormat, PriorityOrder: c.PriorityOrder}
		if c.PrefixFormat == "" {
			// The CRD schema's default, whatever the strategy.
			a.ConflictResolutionConfig.PrefixFormat = defaultPrefixFormat
		}
	case a.ConflictResolution == conflictPrefix:
		a.ConflictResolutionConfig = &thv1.VMCPConflictResolution{PrefixFormat: defaultPrefixFormat}
	default:
		a.ConflictResolutionConfig = &thv1.VMCPConflictResolution{}
	}
	for i, t := range src.Tools {
		wt := thv1.VMCPWorkloadTools{Workload: t.Workload, Filter: t.Filter, ExcludeAll: t.ExcludeAll}
		if len(t.Overrides) > 0 {
			wt.Overrides = make(map[string]thv1.VMCPToolOverride, len(t.Overrides))
			for name, o := range t.Overrides {
				wt.Overrides[name] = *o.DeepCopy()
			}
		}
		if ref := t.ToolConfigRef; ref != nil {
			tc := tools[ref.Name]
			if tc == nil {
				return nil, invalidConfig("aggregation.tools[%d].toolConfigRef: MCPToolConfig %q not resolved", i, ref.Name)
			}
			if len(wt.Filter) == 0 && len(tc.Spec.ToolsFilter) > 0 {
				wt.Filter = slices.Clone(tc.Spec.ToolsFilter)
			}
			for name, o := range tc.Spec.ToolsOverride {
				if _, ok := wt.Overrides[name]; ok {
					continue
				}
				if wt.Overrides == nil {
					wt.Overrides = map[string]thv1.VMCPToolOverride{}
				}
				wt.Overrides[name] = thv1.VMCPToolOverride{Name: o.Name, Description: o.Description, Annotations: toolAnnotations(o.Annotations)}
			}
		}
		a.Tools = append(a.Tools, wt)
	}
	return a, nil
}

// toolAnnotations are an MCPToolConfig's annotation overrides in
// config.yaml.
func toolAnnotations(a *thv1.ToolAnnotationsOverride) *thv1.ToolAnnotations {
	if a == nil {
		return nil
	}
	return &thv1.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
		IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
}

// operational is spec.config.operational with vmcp's defaults merged into
// what it leaves unset (ToolHive's EnsureOperationalDefaults), and the
// schema's health check timeout for a failureHandling the spec sets.
func operational(src *thv1.VMCPOperational) *thv1.VMCPOperational {
	o := &thv1.VMCPOperational{}
	if src != nil {
		o = src.DeepCopy()
		if f := o.FailureHandling; f != nil && f.HealthCheckTimeout == "" {
			f.HealthCheckTimeout = defaultHealthCheckTimeout
		}
	}
	if o.Timeouts == nil {
		o.Timeouts = &thv1.VMCPTimeouts{}
	}
	o.Timeouts.Default = defaultDuration(o.Timeouts.Default, defaultTimeout)
	if o.FailureHandling == nil {
		o.FailureHandling = &thv1.VMCPFailureHandling{}
	}
	f := o.FailureHandling
	f.HealthCheckInterval = defaultDuration(f.HealthCheckInterval, defaultHealthCheckInterval)
	f.StatusReportingInterval = defaultDuration(f.StatusReportingInterval, defaultStatusReportingInterval)
	if f.UnhealthyThreshold == 0 {
		f.UnhealthyThreshold = defaultUnhealthyThreshold
	}
	if f.PartialFailureMode == "" {
		f.PartialFailureMode = defaultPartialFailureMode
	}
	if f.CircuitBreaker == nil {
		f.CircuitBreaker = &thv1.VMCPCircuitBreaker{}
	}
	if f.CircuitBreaker.FailureThreshold == 0 {
		f.CircuitBreaker.FailureThreshold = defaultBreakerThreshold
	}
	f.CircuitBreaker.Timeout = defaultDuration(f.CircuitBreaker.Timeout, defaultBreakerTimeout)
	return o
}

// defaultDuration is d, or def when d is unset or zero (a zero duration
// is what the merge of defaults fills).
func defaultDuration(d thv1.VMCPDuration, def string) thv1.VMCPDuration {
	if v, err := schema.ParseDuration(string(d)); err == nil && v == 0 {
		return thv1.VMCPDuration(def)
	}
	return d
}

// optimizer is spec.config.optimizer with the schema's default timeout.
func optimizer(src *thv1.VMCPOptimizer) *thv1.VMCPOptimizer {
	if src == nil {
		return nil
	}
	o := src.DeepCopy()
	if o.EmbeddingServiceTimeout == "" {
		o.EmbeddingServiceTimeout = defaultEmbeddingTimeout
	}
	return o
}

// codeMode is spec.config.codeMode with the schema's defaults.
func codeMode(src *thv1.VMCPCodeMode) *thv1.VMCPCodeMode {
	if src == nil {
		return nil
	}
	c := src.DeepCopy()
	if c.StepLimit == 0 {
		c.StepLimit = defaultCodeModeStepLimit
	}
	if c.ParallelMaxConcurrency == 0 {
		c.ParallelMaxConcurrency = defaultCodeModeConcurrency
	}
	if c.ToolCallTimeout == "" {
		c.ToolCallTimeout = defaultCodeModeToolTimeout
	}
	return c
}

// rateLimiting is spec.config.rateLimiting in ToolHive's encoding.
func rateLimiting(src *thv1.RateLimitConfig) (*schema.VMCPRateLimiting, error) {
	if src == nil {
		return nil, nil
	}
	var out schema.VMCPRateLimiting
	bucket := func(b *thv1.RateLimitBucket, path string) (*schema.VMCPRateBucket, error) {
		if b == nil {
			return nil, nil
		}
		d, err := schema.ParseDuration(b.RefillPeriod)
		if err != nil {
			return nil, invalidConfig("rateLimiting.%s.refillPeriod: %v", path, err)
		}
		return &schema.VMCPRateBucket{MaxTokens: b.MaxTokens, RefillPeriod: schema.VMCPRefillDuration{Duration: d}}, nil
	}
	var err error
	if out.Shared, err = bucket(src.Shared, "shared"); err != nil {
		return nil, err
	}
	if out.PerUser, err = bucket(src.PerUser, "perUser"); err != nil {
		return nil, err
	}
	for i, t := range src.Tools {
		tl := schema.VMCPToolRateLimit{Name: t.Name}
		if tl.Shared, err = bucket(t.Shared, fmt.Sprintf("tools[%d].shared", i)); err != nil {
			return nil, err
		}
		if tl.PerUser, err = bucket(t.PerUser, fmt.Sprintf("tools[%d].perUser", i)); err != nil {
			return nil, err
		}
		out.Tools = append(out.Tools, tl)
	}
	return &out, nil
}

// Composite tool step defaults of ToolHive's CRD schema.
const (
	defaultStepType    = "tool"
	defaultErrorAction = "abort"
)

// compositeTools are spec.config's inline composite tools followed by the
// referenced definitions, in compositeToolRefs order, as ToolHive's
// converter merges them, each decoded as ToolHive's type decodes it
// (durations normalised, nested steps typed) with the step defaults of
// ToolHive's schema; a tool name used twice is refused, as there (vmcp
// could not tell the tools apart).
func compositeTools(spec thv1.VirtualMCPConfig, defs map[string]*thv1.VirtualMCPCompositeToolDefinition) ([]schema.VMCPCompositeTool, error) {
	sources := slices.Clone(spec.CompositeTools)
	for _, ref := range spec.CompositeToolRefs {
		def := defs[ref.Name]
		if def == nil {
			// Resolution makes the server wait first; this is defence.
			return nil, invalidConfig("compositeToolRefs: VirtualMCPCompositeToolDefinition %q not resolved", ref.Name)
		}
		sources = append(sources, def.Spec)
	}
	var out []schema.VMCPCompositeTool
	seen := map[string]bool{}
	for i, src := range sources {
		var tool schema.VMCPCompositeTool
		if err := recode(src, &tool, fmt.Sprintf("compositeTools[%d]", i)); err != nil {
			return nil, err
		}
		if seen[tool.Name] {
			return nil, invalidConfig("compositeTools[%d]: duplicate composite tool name %q (inline and referenced tools share one namespace)", i, tool.Name)
		}
		seen[tool.Name] = true
		for j := range tool.Steps {
			defaultStep(&tool.Steps[j])
		}
		out = append(out, tool)
	}
	return out, nil
}

// defaultStep gives a step (and the step of a forEach) the defaults of
// ToolHive's schema: type tool, and action abort in onError, onDecline
// and onCancel when they are set without one.
func defaultStep(s *schema.VMCPWorkflowStep) {
	if s.Type == "" {
		s.Type = defaultStepType
	}
	if s.OnError != nil && s.OnError.Action == "" {
		s.OnError.Action = defaultErrorAction
	}
	for _, r := range []*schema.VMCPElicitationResponse{s.OnDecline, s.OnCancel} {
		if r != nil && r.Action == "" {
			r.Action = defaultErrorAction
		}
	}
	if s.InnerStep != nil {
		defaultStep(s.InnerStep)
	}
}

// sessionStorage is config.yaml's sessionStorage for the Redis session
// storage wires, as ToolHive's converter writes it: the connection
// without the password (which vmcp reads from THV_SESSION_REDIS_PASSWORD),
// and its TLS block when there is one ({} for the system roots); nil for
// memory or none.
func sessionStorage(r *schema.SessionRedisConfig) *schema.VMCPSessionStorage {
	if r == nil {
		return nil
	}
	return &schema.VMCPSessionStorage{Provider: thv1.SessionStorageProviderRedis, Address: r.Address, DB: r.DB, KeyPrefix: r.KeyPrefix, TLS: r.TLS}
}
