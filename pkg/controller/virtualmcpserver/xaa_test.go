package virtualmcpserver

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// xaa makes an MCPExternalAuthConfig of type xaa with both client
// secrets from the Secret of its name.
func xaa(secret string) func(*thv1.MCPExternalAuthConfigSpec) {
	return func(s *thv1.MCPExternalAuthConfigSpec) {
		s.Type = thv1.ExternalAuthTypeXAA
		s.XAA = &thv1.XAASpec{IDPTokenURL: "https://idp.example.com/token", IDPClientID: "gateway",
			IDPClientSecretRef: &thv1.SecretKeyRef{Name: secret, Key: "idp"}, TargetTokenURL: "https://partner.example.com/token",
			TargetClientID: "partner-client", TargetClientSecretRef: &thv1.SecretKeyRef{Name: secret, Key: "target"},
			TargetAudience: "https://partner.example.com", Scopes: []string{"read"}}
	}
}

func xaaRef(name string) thv1.BackendAuth {
	return thv1.BackendAuth{Type: thv1.BackendAuthTypeExternalAuthConfigRef, ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: name}}
}

// xaaStrategy is the strategy config.yaml holds for xaa(secret) of the
// config named cfg, as ToolHive's operator writes it in inline mode.
func xaaStrategy(cfg, subject string) string {
	s := `{"type":"xaa","xaa":{"idpClientId":"gateway","idpClientSecretEnv":"TOOLHIVE_XAA_IDP_CLIENT_SECRET_` + cfg +
		`","idpTokenUrl":"https://idp.example.com/token","scopes":["read"]`
	if subject != "" {
		s += `,"subjectProviderName":"` + subject + `"`
	}
	return s + `,"targetAudience":"https://partner.example.com","targetClientId":"partner-client","targetClientSecretEnv":"TOOLHIVE_XAA_TARGET_CLIENT_SECRET_` +
		cfg + `","targetTokenUrl":"https://partner.example.com/token"}}`
}

func envNames(env []corev1.EnvVar) []string {
	var out []string
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && strings.HasPrefix(e.Name, "TOOLHIVE_XAA_") {
			out = append(out, e.Name+"="+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
		}
	}
	return out
}

// An xaa strategy is built in all three places, as ToolHive's operator
// builds it in inline mode: the default, a backend of
// spec.outgoingAuth.backends and a member's own config. Each names the
// variables of its config's two client secrets, which the vmcp container
// gets from secretKeyRefs in ToolHive's order (members', backends',
// default's); every condition is True.
func TestXAAStrategiesInline(t *testing.T) {
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		d := xaaRef("xaa-default")
		v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Default: &d, Backends: map[string]thv1.BackendAuth{"over": xaaRef("xaa-backend")}}
	}, inline), toolhivetest.NewGroup(testNS, testGroup),
		newExtAuth("xaa-default", xaa("s-default")), newExtAuth("xaa-backend", xaa("s-backend")), newExtAuth("xaa-own", xaa("s-own")),
		newMember("own", testGroup, withAuthRef("xaa-own")), newMember("over", testGroup), newMember("plain", testGroup))
	f.converge("agg")
	out := configOf(t, f)["outgoingAuth"].(map[string]any)
	want := `{"backends":{"over":` + xaaStrategy("XAA_BACKEND", "") + `,"own":` + xaaStrategy("XAA_OWN", "") + `},"default":` +
		xaaStrategy("XAA_DEFAULT", "") + `,"source":"inline"}`
	if got := mustJSONString(t, out); got != want {
		t.Errorf("outgoingAuth\n%s\nwant\n%s", got, want)
	}
	if got := backendNames(configOf(t, f)); !slices.Equal(got, []string{"over", "own", "plain"}) {
		t.Errorf("backends %v", got)
	}
	_, c := vmcpContainer(t, f)
	wantEnv := []string{
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XAA_OWN=s-own/idp", "TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XAA_OWN=s-own/target",
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XAA_BACKEND=s-backend/idp", "TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XAA_BACKEND=s-backend/target",
		"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XAA_DEFAULT=s-default/idp", "TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XAA_DEFAULT=s-default/target",
	}
	if got := envNames(c.Env); !slices.Equal(got, wantEnv) {
		t.Errorf("secret variables\n%v\nwant\n%v", got, wantEnv)
	}
	conds := f.get("agg").Status.Conditions
	for _, typ := range []string{"DefaultAuthConfig", "DiscoveredAuthConfig-own", "BackendAuthConfig-over"} {
		if !meta.IsStatusConditionTrue(conds, typ) {
			t.Errorf("condition %s not True: %+v", typ, conds)
		}
	}
	if c := meta.FindStatusCondition(conds, thv1.ConditionReady); c == nil || c.Reason == thv1.ReasonInvalidSpec {
		t.Errorf("not deployed: %+v", c)
	}
}

// In discovered mode the default and spec backends' xaa strategies also
// name their variables (ToolHive's converter leaves them out, and its
// vmcp then cannot authenticate the clients it was given secrets for);
// the variables are mounted, and the member's own, which vmcp reads
// itself, too.
func TestXAAStrategiesDiscovered(t *testing.T) {
	f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) {
		d := xaaRef("xaa-default")
		v.Spec.OutgoingAuth = &thv1.OutgoingAuth{Source: thv1.OutgoingAuthSourceDiscovered, Default: &d,
			Backends: map[string]thv1.BackendAuth{"over": xaaRef("xaa-backend")}}
	}), toolhivetest.NewGroup(testNS, testGroup),
		newExtAuth("xaa-default", xaa("s-default")), newExtAuth("xaa-backend", xaa("s-backend")), newExtAuth("xaa-own", xaa("s-own")),
		newMember("own", testGroup, withAuthRef("xaa-own")), newMember("over", testGroup))
	f.converge("agg")
	out := configOf(t, f)["outgoingAuth"].(map[string]any)
	want := `{"backends":{"over":` + xaaStrategy("XAA_BACKEND", "") + `},"default":` + xaaStrategy("XAA_DEFAULT", "") + `,"source":"discovered"}`
	if got := mustJSONString(t, out); got != want {
		t.Errorf("outgoingAuth\n%s\nwant\n%s", got, want)
	}
	_, c := vmcpContainer(t, f)
	if got := envNames(c.Env); len(got) != 6 || got[0] != "TOOLHIVE_XAA_IDP_CLIENT_SECRET_XAA_OWN=s-own/idp" {
		t.Errorf("secret variables %v", got)
	}
}

// With an embedded authorization server, an xaa strategy that names no
// subject provider exchanges the ID token of its only upstream; beside
// several upstreams it is ambiguous, as ToolHive's operator says, and its
// vmcp would not start: a member's is left out
// (DiscoveredAuthConfig-<name>=False, AmbiguousSubjectProvider), a default
// keeps the vMCP from being deployed.
func TestXAASubjectProvider(t *testing.T) {
	objs := func(mut func(*thv1.VirtualMCPServer)) *fixture {
		v := newVMCP("agg", withAuthServer(authServerJSON), inline, func(v *thv1.VirtualMCPServer) {
			v.Spec.OutgoingAuth.Backends = map[string]thv1.BackendAuth{"named": xaaRef("xaa-named")}
		}, mut)
		return newFixture(t, v, newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup),
			newExtAuth("xaa-own", xaa("s-own")), newExtAuth("xaa-named", func(s *thv1.MCPExternalAuthConfigSpec) {
				xaa("s-named")(s)
				s.XAA.SubjectProviderName = "github"
			}), newMember("own", testGroup, withAuthRef("xaa-own")), newMember("named", testGroup), newMember("plain", testGroup))
	}

	f := objs(func(v *thv1.VirtualMCPServer) {
		v.Spec.AuthServerConfig.UpstreamProviders = v.Spec.AuthServerConfig.UpstreamProviders[:1]
	})
	f.converge("agg")
	out := configOf(t, f)["outgoingAuth"].(map[string]any)["backends"].(map[string]any)
	if got, want := mustJSONString(t, out["own"]), xaaStrategy("XAA_OWN", "corp-idp"); got != want {
		t.Errorf("one upstream: own\n%s\nwant\n%s", got, want)
	}
	if got, want := mustJSONString(t, out["named"]), xaaStrategy("XAA_NAMED", "github"); got != want {
		t.Errorf("one upstream: named\n%s\nwant\n%s", got, want)
	}

	f = objs(func(*thv1.VirtualMCPServer) {})
	f.converge("agg")
	if got := backendNames(configOf(t, f)); !slices.Equal(got, []string{"named", "plain"}) {
		t.Errorf("two upstreams: backends %v, want named and plain", got)
	}
	conds := f.get("agg").Status.Conditions
	c := meta.FindStatusCondition(conds, "DiscoveredAuthConfig-own")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "AmbiguousSubjectProvider" {
		t.Errorf("DiscoveredAuthConfig-own: %+v", c)
	}
	if !meta.IsStatusConditionTrue(conds, "BackendAuthConfig-named") {
		t.Errorf("BackendAuthConfig-named not True: %+v", conds)
	}

	f = objs(func(v *thv1.VirtualMCPServer) {
		d := xaaRef("xaa-own")
		v.Spec.OutgoingAuth.Default = &d
	})
	if _, err := f.sync("agg"); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(f.get("agg").Status.Conditions, thv1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != thv1.ReasonInvalidSpec {
		t.Errorf("an ambiguous default: Ready %+v", ready)
	}
}
