package mcpremoteproxy

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
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

func embeddedConfig(raw string) *thv1.MCPExternalAuthConfig {
	return &thv1.MCPExternalAuthConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "as", ResourceVersion: "1"},
		Spec: thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer,
			EmbeddedAuthServer: toolhivetest.Decode[thv1.EmbeddedAuthServerConfig](raw)},
		Status: thv1.ConfigStatus{ConfigHash: "h1", Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid}}},
	}
}

func withAuthServer(p *thv1.MCPRemoteProxy) {
	p.Spec.AuthServerRef = &thv1.AuthServerRef{Kind: thv1.KindMCPExternalAuthConfig, Name: "as"}
	p.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "https://remote.example.com", ResourceURL: "https://remote.example.com"}
}

// A remote proxy runs the embedded authorization server as an MCPServer
// does: the RunConfig block, the Secret files and variable, the hash in
// status, and nothing written by a second sync.
func TestAuthServerRef(t *testing.T) {
	f := newFixture(t, newProxy("remote", withAuthServer), newOIDCConfig("auth", true, true),
		embeddedConfig(`{"issuer":"https://auth.example.com","signingKeySecretRefs":[{"name":"keys","key":"k"}],`+
			`"upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp.example.com","clientId":"c","clientSecretRef":{"name":"idp","key":"s"}}}]}`))
	f.converge("remote")
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("remote"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	as := rc.EmbeddedAuthServerConfig
	if as == nil || as.Issuer != "https://auth.example.com" || as.SigningKeyConfig.SigningKeyFile != "key-0.pem" ||
		as.Upstreams[0].OIDCConfig.ClientSecretEnvVar != "TOOLHIVE_UPSTREAM_CLIENT_SECRET_IDP" ||
		as.Upstreams[0].OIDCConfig.RedirectURI != "https://remote.example.com/oauth/callback" {
		t.Errorf("embedded_auth_server_config: %+v", as)
	}
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{})
	pod := dep.Spec.Template.Spec
	if v := pod.Volumes[len(pod.Volumes)-1]; v.Name != "authserver-signing-key-0" || v.Secret.SecretName != "keys" {
		t.Errorf("volumes: %+v", pod.Volumes)
	}
	var env bool
	for _, e := range pod.Containers[0].Env {
		env = env || (e.Name == "TOOLHIVE_UPSTREAM_CLIENT_SECRET_IDP" && e.ValueFrom.SecretKeyRef.Name == "idp")
	}
	if !env {
		t.Errorf("env: %+v", pod.Containers[0].Env)
	}
	got := f.get("remote")
	if got.Status.AuthServerConfigHash != "h1" || !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionAuthServerRefValidated) {
		t.Errorf("status: %+v", got.Status)
	}
	if acts, err := f.sync("remote"); err != nil || len(acts) != 0 {
		t.Fatalf("steady state: %v %d writes", err, len(acts))
	}
}

// Several upstreams are ToolHive's MultiUpstreamNotSupported: nothing is
// deployed, and a second sync writes nothing.
func TestAuthServerRefMultiUpstream(t *testing.T) {
	f := newFixture(t, newProxy("remote", withAuthServer), newOIDCConfig("auth", true, true),
		embeddedConfig(`{"issuer":"https://a","upstreamProviders":[{"name":"a","type":"oidc"},{"name":"b","type":"oidc"}]}`))
	f.converge("remote")
	c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionAuthServerRefValidated)
	if c == nil || c.Reason != thv1.ReasonAuthServerRefMultiUpstream || !strings.Contains(c.Message, "MCPRemoteProxy supports only one upstream") {
		t.Errorf("AuthServerRefValidated: %+v", c)
	}
	if _, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{}); err == nil {
		t.Errorf("a Deployment was created")
	}
	if acts, err := f.sync("remote"); err != nil || len(acts) != 0 {
		t.Fatalf("second sync: %v %d writes", err, len(acts))
	}
}
