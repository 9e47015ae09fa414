package virtualmcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/runconfig"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// validMeta is the metadata and status of a valid config named name, as
// its controller would have written them.
func validMeta(kind, name string) (metav1.TypeMeta, metav1.ObjectMeta, thv1.ConfigStatus) {
	return metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: kind},
		metav1.ObjectMeta{Name: name, Namespace: testNS, UID: k8stypes.UID(kind + "-" + name), Generation: 1, ResourceVersion: "1"},
		thv1.ConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(wt.Now),
		}}}
}

func newToolConfig(name string, filter ...string) *thv1.MCPToolConfig {
	tm, om, st := validMeta(thv1.KindMCPToolConfig, name)
	return &thv1.MCPToolConfig{TypeMeta: tm, ObjectMeta: om, Status: st, Spec: thv1.MCPToolConfigSpec{
		ToolsFilter:   filter,
		ToolsOverride: map[string]thv1.ToolOverride{"fetch": {Name: "get_page"}, "search": {Description: "from the config"}},
	}}
}

func newExtAuth(name string, mut func(*thv1.MCPExternalAuthConfigSpec)) *thv1.MCPExternalAuthConfig {
	tm, om, st := validMeta(thv1.KindMCPExternalAuthConfig, name)
	c := &thv1.MCPExternalAuthConfig{TypeMeta: tm, ObjectMeta: om, Status: st}
	mut(&c.Spec)
	return c
}

func headerInjection(s *thv1.MCPExternalAuthConfigSpec) {
	s.Type = thv1.ExternalAuthTypeHeaderInjection
	s.HeaderInjection = &thv1.HeaderInjectionConfig{HeaderName: "X-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "pat", Key: "token"}}
}

func tokenExchange(s *thv1.MCPExternalAuthConfigSpec) {
	s.Type = thv1.ExternalAuthTypeTokenExchange
	s.TokenExchange = &thv1.TokenExchangeConfig{TokenURL: "https://idp.example.com/token", ClientID: "vmcp", Audience: "api",
		ClientSecretRef: &thv1.SecretKeyRef{Name: "idp", Key: "secret"}, SubjectTokenType: "id_token"}
}

func newCedarAuthz(name, typ string) *thv1.MCPAuthzConfig {
	tm, om, st := validMeta(thv1.KindMCPAuthzConfig, name)
	return &thv1.MCPAuthzConfig{TypeMeta: tm, ObjectMeta: om, Status: st, Spec: thv1.MCPAuthzConfigSpec{
		Type: typ, Config: runtime.RawExtension{Raw: []byte(`{"policies":["permit(principal, action, resource);"],"entities_json":"[]","role_claim_name":"roles"}`)},
	}}
}

// withRefs makes the server reference one config of every kind its
// config.yaml is built from.
func withRefs(v *thv1.VirtualMCPServer) {
	v.Spec.IncomingAuth.AuthzConfigRef = &thv1.AuthzConfigReference{Name: "cedar"}
	v.Spec.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "otel"}
	v.Spec.PassthroughHeaders = []string{"X-Api-Key"}
	v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Source: thv1.OutgoingAuthSourceDiscovered,
		Default: &thv1.BackendAuth{Type: thv1.BackendAuthTypeExternalAuthConfigRef, ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "exchange"}},
		Backends: map[string]thv1.BackendAuth{
			"alpha": {Type: thv1.BackendAuthTypeExternalAuthConfigRef, ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "header"}},
			"zeta":  {Type: thv1.BackendAuthTypeDiscovered},
		}}
	v.Spec.Config = wt.Decode[thv1.VirtualMCPConfig](`{"aggregation":{"tools":[` +
		`{"workload":"alpha","toolConfigRef":{"name":"tools"}},` +
		`{"workload":"zeta","toolConfigRef":{"name":"tools"},"filter":["own"],"overrides":{"search":{"name":"mine"}}}]},` +
		`"operational":{"timeouts":{"default":"90s"}},"audit":{"enabled":true}}`)
}

// refObjects are the configs withRefs names.
func refObjects() []runtime.Object {
	return []runtime.Object{newToolConfig("tools", "fetch"), newCedarAuthz("cedar", thv1.AuthzTypeCedar),
		wt.NewTelemetryConfig(testNS, "otel", "otel", "otel-ca"),
		newExtAuth("exchange", tokenExchange), newExtAuth("header", headerInjection)}
}

// resolvedRefs are refObjects as the controller resolves them.
func resolvedRefs() configRefs {
	objs := refObjects()
	return configRefs{
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
	out, w, err := renderConfig(v, workload.OIDCWiring{}, nil, resolvedRefs())
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
		"outgoingAuth.source":                                 "inline",
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
	for _, e := range w.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env = append(env, e.Name+"="+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
		}
	}
	wantEnv := []string{"TOOLHIVE_HEADER_INJECTION_VALUE_HEADER=pat/token", "TOOLHIVE_TOKEN_EXCHANGE_CLIENT_SECRET_EXCHANGE=idp/secret",
		"TOOLHIVE_OTEL_HEADER_AUTHORIZATION=otel-auth/token", "TOOLHIVE_OTEL_HEADER_X_API_KEY=otel-auth/key"}
	if !slices.Equal(env, wantEnv) {
		t.Errorf("secret env %v, want %v", env, wantEnv)
	}
	if len(w.Volumes) != 1 || w.Volumes[0].ConfigMap == nil || w.Volumes[0].ConfigMap.Name != "otel-ca" {
		t.Errorf("telemetry CA volume %+v", w.Volumes)
	}
}

// TestRenderConfigRefuses: what hivekeeper cannot build fails the whole
// config with a condition naming the field, never a partial config
// (per-backend outgoing auth aside, see backends_test.go).
func TestRenderConfigRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		mut  func(*thv1.VirtualMCPServer, *configRefs)
		want string
	}{
		"httpv1 authz config": {func(v *thv1.VirtualMCPServer, r *configRefs) {
			v.Spec.IncomingAuth.AuthzConfigRef = &thv1.AuthzConfigReference{Name: "pdp"}
			r.Authz = newCedarAuthz("pdp", thv1.AuthzTypeHTTP)
		}, "spec.incomingAuth.authzConfigRef: MCPAuthzConfig pdp is of type httpv1"},
		"configMap authz": {func(v *thv1.VirtualMCPServer, _ *configRefs) {
			v.Spec.IncomingAuth.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap}
		}, "spec.incomingAuth.authzConfig: type configMap is not supported"},
		"bad cedar": {func(v *thv1.VirtualMCPServer, _ *configRefs) {
			v.Spec.IncomingAuth.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline, Inline: &thv1.InlineCedar{Policies: []string{"permit("}}}
		}, "spec.incomingAuth.authzConfig.inline.policies[0]"},
		// A default hivekeeper cannot build would leave every backend
		// with less authentication than asked; a backend's own strategy
		// only drops that backend (TestBackendAuthDropsOnlyThatBackend).
		"bearer token default": {func(v *thv1.VirtualMCPServer, r *configRefs) {
			v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Default: &thv1.BackendAuth{Type: thv1.BackendAuthTypeExternalAuthConfigRef,
				ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: "bearer"}}}
			r.ExtAuth = map[string]*thv1.MCPExternalAuthConfig{"bearer": newExtAuth("bearer", func(s *thv1.MCPExternalAuthConfigSpec) {
				s.Type = thv1.ExternalAuthTypeBearerToken
			})}
		}, "spec.outgoingAuth.default: MCPExternalAuthConfig bearer is of type bearerToken"},
		"bad duration": {func(v *thv1.VirtualMCPServer, _ *configRefs) {
			v.Spec.Config = wt.Decode[thv1.VirtualMCPConfig](`{"operational":{"timeouts":{"default":"soon"}}}`)
		}, `spec.config: operational.timeouts.default: "soon" is not a duration`},
	} {
		t.Run(name, func(t *testing.T) {
			v := newVMCP("agg")
			var r configRefs
			c.mut(v, &r)
			_, _, err := renderConfig(v, workload.OIDCWiring{}, nil, r)
			var inv *workload.InvalidSpecError
			if !errors.As(err, &inv) || !strings.Contains(inv.Message, c.want) {
				t.Errorf("error %v, want an InvalidSpecError containing %q", err, c.want)
			}
		})
	}
}

// TestToolConfigChangeRollsOnce: a change of a referenced MCPToolConfig
// rewrites config.yaml and rolls the vMCP once (the checksum on the pod
// template); the next sync writes nothing.
func TestToolConfigChangeRollsOnce(t *testing.T) {
	objs := append(refObjects(), newVMCP("agg", withRefs), wt.NewGroup(testNS, testGroup),
		newMember("alpha", testGroup), newMember("zeta", testGroup))
	f := newFixture(t, objs...)
	f.converge("agg")
	ctx := context.Background()
	tc, err := f.Toolhive.ToolhiveV1beta1().MCPToolConfigs(testNS).Get(ctx, "tools", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tc = tc.DeepCopy()
	tc.Spec.ToolsFilter = []string{"fetch", "search"}
	tc.Status.ConfigHash = "hash-tools-2"
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPToolConfigs(testNS).Update(ctx, tc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch configmaps", "patch deployments")
	cm, _ := f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
	if !strings.Contains(cm.Data[workload.VMCPConfigKey], "- search") {
		t.Errorf("the new filter is not in config.yaml:\n%s", cm.Data[workload.VMCPConfigKey])
	}
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
	if dep.Spec.Template.Annotations[workload.AnnotationVMCPConfigChecksum] != cm.Annotations[runconfig.ChecksumAnnotation] {
		t.Errorf("the pod template's checksum does not follow the config")
	}
	f.Refresh()
	if acts, _ := f.sync("agg"); len(acts) != 0 {
		t.Errorf("second sync wrote: %s", wt.Describe(acts))
	}
}

// TestMissingReferenceWaits: a missing MCPExternalAuthConfig keeps the
// vMCP Pending with the reference's condition naming it; nothing is
// written but the status.
func TestMissingReferenceWaits(t *testing.T) {
	objs := append(refObjects()[:4], newVMCP("agg", withRefs), wt.NewGroup(testNS, testGroup), newMember("alpha", testGroup))
	f := newFixture(t, objs...)
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertNoActionOn(t, acts, "configmaps")
	wt.AssertNoActionOn(t, acts, "deployments")
	v := f.get("agg")
	c := findCondition(v.Status.Conditions, thv1.ConditionExternalAuthConfigValidated)
	if v.Status.Phase != thv1.VirtualMCPServerPhasePending || c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, `"header"`) {
		t.Errorf("status %+v", v.Status)
	}
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
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
// subject provider gets the first upstream, as ToolHive's operator does.
func TestAWSStsAndUpstreamInjectStrategies(t *testing.T) {
	env := map[string]corev1.EnvVar{}
	aws := newExtAuth("aws", func(s *thv1.MCPExternalAuthConfigSpec) {
		s.Type = thv1.ExternalAuthTypeAWSSts
		s.AWSSts = &thv1.AWSStsConfig{Region: "eu-west-1", Service: "aoss", FallbackRoleArn: "arn:aws:iam::123456789012:role/fallback",
			RoleMappings: []thv1.AWSRoleMapping{{Claim: "admins", RoleArn: "arn:aws:iam::123456789012:role/admin"}}}
	})
	got, err := strategyOf("p", aws, env)
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
	got, err = strategyOf("p", upstream, env)
	if b, _ := json.Marshal(got); err != nil || string(b) != `{"type":"upstream_inject","upstreamInject":{"providerName":"partner"}}` {
		t.Errorf("upstream_inject strategy %s, %v", b, err)
	}
	if len(env) != 0 {
		t.Errorf("variables %v for strategies without secrets", env)
	}
	upstream.Spec.UpstreamInject = &thv1.UpstreamInjectSpec{}
	if _, err := strategyOf("p", upstream, env); err == nil || !strings.Contains(err.Error(), "providerName") {
		t.Errorf("upstreamInject without a provider: %v", err)
	}

	s, err := strategyOf("p", aws, env)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{keyOutgoingAuth: map[string]any{"default": s}}
	applyAuthServer(cfg, workload.AuthServerWiring{Config: &runconfig.EmbeddedAuthServerConfig{Upstreams: []runconfig.UpstreamConfig{{Name: "corp-idp"}, {Name: "partner"}}}})
	if s.AwsSts.SubjectProviderName != "corp-idp" {
		t.Errorf("subject provider %q, want the first upstream", s.AwsSts.SubjectProviderName)
	}
	if aws.Spec.AWSSts.SubjectProviderName != "" {
		t.Error("the cached MCPExternalAuthConfig was modified")
	}
}
