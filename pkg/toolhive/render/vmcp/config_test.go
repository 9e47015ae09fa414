package vmcp

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// resolvedRefs are refObjects as the controller resolves them: the
// references of an Input.
func resolvedRefs() Input {
	objs := refObjects()
	return Input{
		Tools: map[string]*thv1.MCPToolConfig{"tools": objs[0].(*thv1.MCPToolConfig)}, Authz: objs[1].(*thv1.MCPAuthzConfig),
		Telemetry: objs[2].(*thv1.MCPTelemetryConfig),
		ExtAuth: map[string]*thv1.MCPExternalAuthConfig{"exchange": objs[3].(*thv1.MCPExternalAuthConfig),
			"header": objs[4].(*thv1.MCPExternalAuthConfig)},
	}
}

// TestRenderConfigFromRefs checks every section built from a reference,
// as ToolHive's converter builds it for the same spec.
func TestRenderConfigFromRefs(t *testing.T) {
	v := newVMCP("agg", withRefs)
	out, w, err := renderConfig(v, wiring.OIDCWiring{}, nil, resolvedRefs())
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"passthroughHeaders":                                  []any{"X-Api-Key"},
		"incomingAuth.authz":                                  map[string]any{"type": "cedar", "entitiesJson": "[]", "policies": []any{"permit(principal, action, resource);"}, "roleClaimName": "roles"},
		"outgoingAuth.source":                                 "discovered",
		"outgoingAuth.default.type":                           "token_exchange",
		"outgoingAuth.default.tokenExchange.clientSecretEnv":  "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_EXCHANGE",
		"outgoingAuth.default.tokenExchange.subjectTokenType": "urn:ietf:params:oauth:token-type:id_token",
		"outgoingAuth.backends.alpha": map[string]any{"type": "header_injection",
			"headerInjection": map[string]any{"headerName": "X-Key", "headerValueEnv": "TOOLHIVE_HEADER_INJECTION_VALUE_HEADER"}},
		"outgoingAuth.backends.zeta": map[string]any{"type": "unauthenticated"},
		// The tool config fills what the workload leaves unset; its own
		// filter and overrides win.
		"aggregation.tools": []any{
			map[string]any{"workload": "alpha", "filter": []any{"fetch"},
				"overrides": map[string]any{"fetch": map[string]any{"name": "get_page"}, "search": map[string]any{"description": "from the config"}}},
			map[string]any{"workload": "zeta", "filter": []any{"own"},
				"overrides": map[string]any{"fetch": map[string]any{"name": "get_page"}, "search": map[string]any{"name": "mine"}}},
		},
		"aggregation.conflictResolution":                     "prefix",
		"operational.timeouts.default":                       "1m30s",
		"audit.component":                                    "agg",
		"telemetry.serviceName":                              "agg",
		"telemetry.caCertPath":                               "/config/certs/otel/otel-ca/ca.crt",
		"operational.failureHandling.circuitBreaker.timeout": "1m0s",
	}
	for path, w := range want {
		cur := any(cfg)
		for _, k := range strings.Split(path, ".") {
			cur, _ = cur.(map[string]any)[k]
		}
		if !jsonEq(cur, w) {
			t.Errorf("%s = %v, want %v\n%s", path, cur, w, out)
		}
	}
	if strings.Contains(out, "toolConfigRef") {
		t.Errorf("a toolConfigRef reached config.yaml:\n%s", out)
	}
	var env []string
	for _, e := range slices.Concat(w.AuthEnv, w.TelemetryEnv) {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env = append(env, e.Name+"="+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
		}
	}
	wantEnv := []string{"TOOLHIVE_HEADER_INJECTION_VALUE_HEADER=pat/token", "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_EXCHANGE=idp/secret",
		"TOOLHIVE_OTEL_HEADER_AUTHORIZATION=otel-auth/token", "TOOLHIVE_OTEL_HEADER_X_API_KEY=otel-auth/key"}
	if !slices.Equal(env, wantEnv) {
		t.Errorf("secret env %v, want %v", env, wantEnv)
	}
	if len(w.TelemetryVolumes) != 1 || w.TelemetryVolumes[0].ConfigMap == nil || w.TelemetryVolumes[0].ConfigMap.Name != "otel-ca" {
		t.Errorf("telemetry CA volume %+v", w.TelemetryVolumes)
	}
}

// TestRenderConfigRefuses: what hivekeeper cannot build fails the whole
// config with a condition naming the field, never a partial config
// (per-backend outgoing auth aside, see backends_test.go).
func TestRenderConfigRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		mut  func(*thv1.VirtualMCPServer, *Input)
		want string
	}{
		"httpv1 authz config": {func(v *thv1.VirtualMCPServer, r *Input) {
			v.Spec.IncomingAuth.AuthzConfigRef = &thv1.AuthzConfigReference{Name: "pdp"}
			r.Authz = toolhivetest.NewCedarAuthzConfig(testNS, "pdp", thv1.AuthzTypeHTTP)
		}, "spec.incomingAuth.authzConfigRef: MCPAuthzConfig pdp is of type httpv1"},
		"configMap authz without its block": {func(v *thv1.VirtualMCPServer, _ *Input) {
			v.Spec.IncomingAuth.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap}
		}, "spec.incomingAuth.authzConfig: type configMap without its configMap block"},
		"configMap authz not read": {func(v *thv1.VirtualMCPServer, _ *Input) {
			v.Spec.IncomingAuth.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap, ConfigMap: &thv1.ConfigMapAuthzRef{Name: "policies"}}
		}, "spec.incomingAuth.authzConfig: ConfigMap policies has not been read"},
		"bad cedar": {func(v *thv1.VirtualMCPServer, _ *Input) {
			v.Spec.IncomingAuth.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline, Inline: &thv1.InlineCedar{Policies: []string{"permit("}}}
		}, "spec.incomingAuth.authzConfig.inline.policies[0]"},
		// A default hivekeeper cannot build would leave every backend
		// with less authentication than asked; a backend's own strategy
		// only drops that backend (TestBackendAuthDropsOnlyThatBackend).
		"bearer token default": {func(v *thv1.VirtualMCPServer, r *Input) {
			v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Default: &thv1.BackendAuth{Type: thv1.BackendAuthTypeExternalAuthConfigRef,
				ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "bearer"}}}
			r.ExtAuth = map[string]*thv1.MCPExternalAuthConfig{"bearer": newExtAuth("bearer", func(s *thv1.MCPExternalAuthConfigSpec) {
				s.Type = thv1.ExternalAuthTypeBearerToken
			})}
		}, "spec.outgoingAuth.default: MCPExternalAuthConfig bearer is of type bearerToken"},
		"bad duration": {func(v *thv1.VirtualMCPServer, _ *Input) {
			v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](`{"operational":{"timeouts":{"default":"soon"}}}`)
		}, `spec.config: Operational: Timeouts: Default: time: invalid duration "soon"`},
	} {
		t.Run(name, func(t *testing.T) {
			v := newVMCP("agg")
			var r Input
			c.mut(v, &r)
			_, _, err := renderConfig(v, wiring.OIDCWiring{}, nil, r)
			var inv *wiring.InvalidSpecError
			if !errors.As(err, &inv) || !strings.Contains(inv.Message, c.want) {
				t.Errorf("error %v, want an InvalidSpecError containing %q", err, c.want)
			}
		})
	}
}

func jsonEq(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}

// AWS STS and upstream injection configs become vmcp's aws_sts and
// upstream_inject strategies, in ToolHive's keys and with no variable (no
// secret is involved); an upstreamInject without its provider is refused.
// With an embedded authorization server, an AWS STS strategy naming no
// subject provider gets the first upstream in inline mode, as ToolHive's
// operator does; in discovered mode vmcp names it.
func TestAWSStsAndUpstreamInjectStrategies(t *testing.T) {
	aws := newExtAuth("aws", func(s *thv1.MCPExternalAuthConfigSpec) {
		s.Type = thv1.ExternalAuthTypeAWSSts
		s.AWSSts = &thv1.AWSStsConfig{Region: "eu-west-1", Service: "aoss", FallbackRoleArn: "arn:aws:iam::123456789012:role/fallback",
			RoleMappings: []thv1.AWSRoleMapping{{Claim: "admins", RoleArn: "arn:aws:iam::123456789012:role/admin"}}}
	})
	got, err := strategyOf("p", aws)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"aws_sts","awsSts":{"region":"eu-west-1","service":"aoss","fallbackRoleArn":"arn:aws:iam::123456789012:role/fallback",` +
		`"roleMappings":[{"claim":"admins","roleArn":"arn:aws:iam::123456789012:role/admin"}]}}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("aws_sts strategy\n got %s\nwant %s", b, want)
	}
	upstream := newExtAuth("up", func(s *thv1.MCPExternalAuthConfigSpec) {
		s.Type = thv1.ExternalAuthTypeUpstreamInject
		s.UpstreamInject = &thv1.UpstreamInjectSpec{ProviderName: "partner"}
	})
	got, err = strategyOf("p", upstream)
	if b, _ := json.Marshal(got); err != nil || string(b) != `{"type":"upstream_inject","upstreamInject":{"providerName":"partner"}}` {
		t.Errorf("upstream_inject strategy %s, %v", b, err)
	}
	if env := slices.Concat(secretEnv(aws), secretEnv(upstream)); len(env) != 0 {
		t.Errorf("variables %v for strategies without secrets", env)
	}
	upstream.Spec.UpstreamInject = &thv1.UpstreamInjectSpec{}
	if _, err := strategyOf("p", upstream); err == nil || !strings.Contains(err.Error(), "providerName") {
		t.Errorf("upstreamInject without a provider: %v", err)
	}

	for source, want := range map[string]string{thv1.OutgoingAuthSourceInline: "corp-idp", thv1.OutgoingAuthSourceDiscovered: ""} {
		v := newVMCP("agg", func(v *thv1.VirtualMCPServer) {
			v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Source: source, Default: &thv1.BackendAuth{Type: thv1.BackendAuthTypeExternalAuthConfigRef,
				ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "aws"}}}
		})
		auth, err := resolveBackendAuth(v, nil, map[string]*thv1.MCPExternalAuthConfig{"aws": aws}, nil, "corp-idp", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := auth.Section.Default.AwsSts.SubjectProviderName; got != want {
			t.Errorf("%s: subject provider %q, want %q", source, got, want)
		}
	}
	if aws.Spec.AWSSts.SubjectProviderName != "" {
		t.Error("the cached MCPExternalAuthConfig was modified")
	}
}

// An xaa config becomes vmcp's xaa strategy field for field, naming the
// variables of the secrets it has (here only the identity provider's),
// which secretEnv mounts from their secretKeyRefs; one without its block
// is refused.
func TestXAAStrategy(t *testing.T) {
	x := newExtAuth("my-xaa.cfg", func(s *thv1.MCPExternalAuthConfigSpec) {
		s.Type = thv1.ExternalAuthTypeXAA
		s.XAA = &thv1.XAASpec{IDPTokenURL: "https://idp/t", IDPClientID: "gw", IDPClientSecretRef: &thv1.SecretKeyRef{Name: "s", Key: "idp"},
			TargetTokenURL: "http://target/t", InsecureTargetTokenURL: true, TargetClientID: "public", TargetAudience: "https://target",
			TargetResource: "https://target/mcp", Scopes: []string{"a"}, SubjectProviderName: "corp",
			SubjectTokenType: "urn:ietf:params:oauth:token-type:id_token"}
	})
	got, err := strategyOf("p", x)
	want := `{"type":"xaa","xaa":{"idpTokenUrl":"https://idp/t","idpClientId":"gw","idpClientSecretEnv":"TOOLHIVE_XAA_IDP_CLIENT_SECRET_MY_XAA_CFG",` +
		`"targetTokenUrl":"http://target/t","insecureTargetTokenUrl":true,"targetClientId":"public","targetAudience":"https://target",` +
		`"targetResource":"https://target/mcp","scopes":["a"],"subjectProviderName":"corp","subjectTokenType":"urn:ietf:params:oauth:token-type:id_token"}}`
	if b, _ := json.Marshal(got); err != nil || string(b) != want {
		t.Errorf("xaa strategy %v\n got %s\nwant %s", err, b, want)
	}
	env := secretEnv(x)
	if len(env) != 1 || env[0].Name != "TOOLHIVE_XAA_IDP_CLIENT_SECRET_MY_XAA_CFG" || env[0].ValueFrom.SecretKeyRef.Name != "s" ||
		env[0].ValueFrom.SecretKeyRef.Key != "idp" {
		t.Errorf("variables %+v", env)
	}
	x.Spec.XAA.TargetClientSecretRef = &thv1.SecretKeyRef{Name: "s", Key: "target"}
	if env := secretEnv(x); len(env) != 2 || env[1].Name != "TOOLHIVE_XAA_TARGET_CLIENT_SECRET_MY_XAA_CFG" {
		t.Errorf("variables %+v", env)
	}
	x.Spec.XAA = nil
	if _, err := strategyOf("p", x); err == nil || !strings.Contains(err.Error(), "type xaa without spec.xaa") {
		t.Errorf("xaa without its block: %v", err)
	}
}
