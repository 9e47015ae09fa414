package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

func extAuthConfig(name string, spec thv1.MCPExternalAuthConfigSpec) *thv1.MCPExternalAuthConfig {
	return &thv1.MCPExternalAuthConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, ResourceVersion: "1"},
		Spec:       spec,
		Status: thv1.ConfigStatus{ConfigHash: "h1", Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid}}},
	}
}

// A token exchange is the RunConfig's token_exchange_config as ToolHive's
// operator writes it, and its client secret a secretKeyRef variable that
// comes before the OIDC client secret's, where ToolHive puts it. The
// secret's value is never in the ConfigMap.
func TestExternalAuthTokenExchange(t *testing.T) {
	cfg := extAuthConfig("exchange", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeTokenExchange,
		TokenExchange: &thv1.TokenExchangeConfig{TokenURL: "https://idp.example.com/token", ClientID: "proxy",
			ClientSecretRef: &thv1.SecretKeyRef{Name: "idp-client", Key: "secret"}, Audience: "backend",
			Scopes: []string{"read"}, SubjectTokenType: "access_token"}})
	f := newFixture(t, newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "exchange"}
		s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp"}
	}), cfg, newOIDCConfig("auth", true, true))
	f.converge("fetch")
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		TE map[string]any `json:"token_exchange_config"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	want := `{"audience":"backend","client_id":"proxy","client_secret":"","header_strategy":"replace","scopes":["read"],` +
		`"subject_token_type":"urn:ietf:params:oauth:token-type:access_token","token_url":"https://idp.example.com/token"}`
	if got, _ := json.Marshal(rc.TE); string(got) != want {
		t.Errorf("token_exchange_config = %s\nwant %s", got, want)
	}
	if strings.Contains(cm.Data[schema.Key], "idp-client") {
		t.Errorf("the RunConfig names the client secret: %s", cm.Data[schema.Key])
	}
	dep, err := f.kube.AppsV1().Deployments(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := dep.Spec.Template.Spec.Containers[0].Env
	if len(env) < 2 || env[0].Name != wiring.EnvTokenExchangeClientSecret || env[0].ValueFrom == nil ||
		env[0].ValueFrom.SecretKeyRef.Name != "idp-client" || env[1].Name != wiring.EnvOIDCClientSecret {
		t.Errorf("env: %+v", env)
	}
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if got.Status.ExternalAuthConfigHash != "h1" || !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionExternalAuthConfigValidated) {
		t.Errorf("status %+v", got.Status)
	}
}

// A bearer token is for a remote server, which an MCPServer does not
// have: ToolHive's operator writes it and its runner cannot start; the
// server is not deployed, and Ready says why.
func TestExternalAuthBearerTokenRefused(t *testing.T) {
	cfg := extAuthConfig("bearer", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeBearerToken,
		BearerToken: &thv1.BearerTokenConfig{TokenSecretRef: &thv1.SecretKeyRef{Name: "t", Key: "token"}}})
	f := newFixture(t, newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "bearer"}
	}), cfg)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch mcpservers/status")
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); c == nil || c.Reason != thv1.ReasonNotReady ||
		!strings.Contains(c.Message, "type bearerToken") {
		t.Errorf("Ready: %+v", c)
	}
}

// AWS STS signs requests to a remote server, which an MCPServer does not
// have: ToolHive's runner refuses to start with it (and ToolHive's
// operator writes no RunConfig); the server is not deployed, and Ready
// says why.
func TestExternalAuthAWSStsRefused(t *testing.T) {
	cfg := extAuthConfig("aws", thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeAWSSts, AWSSts: &thv1.AWSStsConfig{
		Region: "eu-west-1", FallbackRoleArn: "arn:aws:iam::123456789012:role/mcp"}})
	f := newFixture(t, newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "aws"}
	}), cfg)
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch mcpservers/status")
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); c == nil || c.Reason != thv1.ReasonNotReady ||
		!strings.Contains(c.Message, "type awsSts") {
		t.Errorf("Ready: %+v", c)
	}
}
