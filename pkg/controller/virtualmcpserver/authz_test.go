package virtualmcpserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

const permitAll = "permit(principal, action, resource);"

// vmcpAuthz is config.yaml's incomingAuth.authz of server name.
func vmcpAuthz(t *testing.T, f *fixture, name string) *thv1.VMCPAuthz {
	t.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), name+"-vmcp-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		IncomingAuth thv1.VMCPIncomingAuth `json:"incomingAuth"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data[naming.VMCPConfigKey]), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.IncomingAuth.Authz
}

// Authorization from a ConfigMap, as ToolHive's converter writes it: the
// Cedar file's policies, entities and claim settings, the spec's claim
// settings over the file's; Cedar reads the first upstream's claims. A
// ConfigMap that is missing, or holds another authorizer's file, is
// AuthConfigured=False with ToolHive's reason, one Warning event, and
// nothing written.
func TestAuthzFromConfigMap(t *testing.T) {
	withCM := func(v *thv1.VirtualMCPServer) {
		v.Spec.IncomingAuth.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap, RoleClaimName: "spec-roles",
			ConfigMap: &thv1.ConfigMapAuthzRef{Name: "policies"}}
	}
	cm := func(file string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "policies", ResourceVersion: "9"},
			Data: map[string]string{"authz.json": file}}
	}
	file := cm("version: \"1.0\"\ntype: cedarv1\ncedar:\n  policies: ['" + permitAll + "']\n  entities_json: '[]'\n" +
		"  group_claim_name: groups\n  role_claim_name: roles\n  primary_upstream_provider: ignored\n")
	f := newFixture(t, newVMCP("agg", withAuthServer(authServerJSON), withCM), file, newOIDCConfig("auth", ""),
		toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
	f.converge("agg")
	got := vmcpAuthz(t, f, "agg")
	want := thv1.VMCPAuthz{Type: "cedar", Policies: []string{permitAll}, EntitiesJSON: "[]", GroupClaimName: "groups", RoleClaimName: "spec-roles",
		PrimaryUpstreamProvider: "corp-idp"}
	if got == nil || got.Type != want.Type || len(got.Policies) != 1 || got.Policies[0] != permitAll || got.EntitiesJSON != want.EntitiesJSON ||
		got.GroupClaimName != want.GroupClaimName || got.RoleClaimName != want.RoleClaimName || got.PrimaryUpstreamProvider != want.PrimaryUpstreamProvider ||
		got.GroupEntityType != "" {
		t.Errorf("authz %+v\nwant %+v", got, want)
	}

	for _, tc := range []struct {
		name   string
		cm     *corev1.ConfigMap
		reason string
		msg    string
	}{
		{"missing", nil, thv1.ReasonAuthzConfigMapNotFound,
			`Authorization ConfigMap is invalid: failed to get Authz ConfigMap team-a/policies: ConfigMap "policies" not found`},
		{"httpv1", cm(`{"version":"1.0","type":"httpv1","pdp":{"http":{"url":"http://pdp"},"claim_mapping":"mpe"}}`), thv1.ReasonAuthzConfigMapInvalid,
			`Authorization ConfigMap is invalid: authz ConfigMap team-a/policies is not a Cedar config: cedar config is nil`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{newVMCP("agg", withCM), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup)}
			if tc.cm != nil {
				objs = append(objs, tc.cm)
			}
			f := newFixture(t, objs...)
			acts, err := f.sync("agg")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "patch virtualmcpservers/status")
			st := f.get("agg").Status
			if c := meta.FindStatusCondition(st.Conditions, thv1.ConditionAuthConfigured); c == nil || c.Status != metav1.ConditionFalse ||
				c.Reason != tc.reason || c.Message != tc.msg {
				t.Errorf("AuthConfigured %+v, want %s %q", c, tc.reason, tc.msg)
			}
			if st.Phase != thv1.VirtualMCPServerPhaseFailed {
				t.Errorf("phase %s", st.Phase)
			}
			if ev := f.Warnings(); len(ev) != 1 || ev[0] != "Warning "+tc.reason+" Authz ConfigMap validation failed: "+tc.msg[len("Authorization ConfigMap is invalid: "):] {
				t.Errorf("warnings %q", ev)
			}
		})
	}
}

// The upstream whose claims Cedar reads, as ToolHive's operator resolves
// it: spec.authServerConfig.primaryUpstreamProvider, else the deprecated
// spec.incomingAuth.authzConfig.inline.primaryUpstreamProvider (with a
// Warning event), else the first upstream (with the advisory
// AuthzUpstreamSelectionWarning when there are several). A name that is
// no upstream, a name without an authorization server, and an
// authorization server without upstreams are refused on
// AuthServerConfigValidated, nothing written.
func TestPrimaryUpstreamProvider(t *testing.T) {
	inline := func(provider string) func(*thv1.VirtualMCPServer) {
		return func(v *thv1.VirtualMCPServer) {
			v.Spec.IncomingAuth.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline,
				Inline: &thv1.InlineCedar{Policies: []string{permitAll}, PrimaryUpstreamProvider: provider}}
		}
	}
	canonical := func(provider string) func(*thv1.VirtualMCPServer) {
		return func(v *thv1.VirtualMCPServer) { v.Spec.AuthServerConfig.PrimaryUpstreamProvider = provider }
	}
	const warning = `multiple upstreamProviders configured; Cedar policies will evaluate claims from the first upstream ("corp-idp"). ` +
		`If another upstream should be authoritative, set spec.incomingAuth.authzConfig.inline.primaryUpstreamProvider explicitly, or remove or reorder the list.`
	const deprecated = "Warning AuthzPrimaryUpstreamProviderDeprecated spec.incomingAuth.authzConfig.inline.primaryUpstreamProvider is deprecated; " +
		"move the value to spec.authServerConfig.primaryUpstreamProvider"
	for _, tc := range []struct {
		name    string
		mut     []func(*thv1.VirtualMCPServer)
		primary string
		warned  bool
		events  []string
	}{
		{"first of several", []func(*thv1.VirtualMCPServer){withAuthServer(authServerJSON), inline("")}, "corp-idp", true, nil},
		{"canonical", []func(*thv1.VirtualMCPServer){withAuthServer(authServerJSON), inline(""), canonical("github")}, "github", false, nil},
		{"deprecated", []func(*thv1.VirtualMCPServer){withAuthServer(authServerJSON), inline("github")}, "github", false, []string{deprecated}},
		{"canonical wins", []func(*thv1.VirtualMCPServer){withAuthServer(authServerJSON), inline("corp-idp"), canonical("github")}, "github", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newVMCP("agg", tc.mut...), newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
			if _, err := f.sync("agg"); err != nil {
				t.Fatal(err)
			}
			if got := vmcpAuthz(t, f, "agg"); got == nil || got.PrimaryUpstreamProvider != tc.primary {
				t.Errorf("authz %+v, want primary %q", got, tc.primary)
			}
			c := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionAuthzUpstreamSelectionWarning)
			if tc.warned != (c != nil) || (c != nil && (c.Status != metav1.ConditionTrue || c.Reason != thv1.ReasonAuthzUpstreamAutoSelected || c.Message != warning)) {
				t.Errorf("AuthzUpstreamSelectionWarning %+v, want %v", c, tc.warned)
			}
			events := f.Warnings()
			if len(events) != len(tc.events) || (len(events) > 0 && events[0] != tc.events[0]) {
				t.Errorf("events %q, want %q", events, tc.events)
			}
		})
	}

	for _, tc := range []struct {
		name, reason, msg string
		mut               []func(*thv1.VirtualMCPServer)
	}{
		{"unknown", thv1.ReasonAuthzUpstreamUnknown, `primaryUpstreamProvider="gitlab" does not match any upstream declared on spec.authServerConfig.upstreamProviders. ` +
			`Set primaryUpstreamProvider to one of the configured upstream names, or leave it empty to default to the first upstream.`,
			[]func(*thv1.VirtualMCPServer){withAuthServer(authServerJSON), inline(""), canonical("gitlab")}},
		{"without a server", thv1.ReasonAuthzPrimaryProviderRequiresAuthServer, `primaryUpstreamProvider="github" is set but spec.authServerConfig is not configured. ` +
			`The field names an upstream IDP on the embedded auth server, which is required for it to take effect. ` +
			`Remove primaryUpstreamProvider, or configure spec.authServerConfig with an upstream of that name.`,
			[]func(*thv1.VirtualMCPServer){inline("github")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newVMCP("agg", tc.mut...), newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup), newMember("a", testGroup))
			acts, err := f.sync("agg")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "patch virtualmcpservers/status")
			st := f.get("agg").Status
			if c := meta.FindStatusCondition(st.Conditions, thv1.ConditionAuthServerConfigValidated); c == nil || c.Status != metav1.ConditionFalse ||
				c.Reason != tc.reason || c.Message != tc.msg {
				t.Errorf("AuthServerConfigValidated %+v\nwant %s %q", c, tc.reason, tc.msg)
			}
			if st.Phase != thv1.VirtualMCPServerPhaseFailed {
				t.Errorf("phase %s", st.Phase)
			}
		})
	}
}
