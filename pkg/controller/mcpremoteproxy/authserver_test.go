package mcpremoteproxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
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

// The production settings hivekeeper once refused (Redis storage, a
// delegate client, a SPIFFE file bundle) are deployed: AuthServerRefValidated
// is True, the RunConfig carries the Redis key prefix of this proxy, the pod
// the Redis and delegate variables and the bundle's ConfigMap volume, and a
// second sync writes nothing.
func TestAuthServerRefProductionSettings(t *testing.T) {
	f := &fixture{Fixture: workloadtest.New(t, newProxy("remote", withAuthServer), newOIDCConfig("auth", true, true),
		embeddedConfig(`{"issuer":"https://auth.example.com","signingKeySecretRefs":[{"name":"keys","key":"k"}],
		"storage":{"type":"redis","redis":{"addr":"redis:6379","aclUserConfig":{"passwordSecretRef":{"name":"redis","key":"pw"}}}},
		"delegateClients":[{"clientId":"agent","clientSecretRef":{"name":"dc","key":"s"},"scopes":["openid"],"audiences":["https://remote.example.com"]}],
		"spiffeTrustDomains":[{"name":"td","trustDomain":"example.org","methods":["spiffe_jwt"],"bundleSource":{"type":"file","file":{"configMapName":"bundle","configMapKey":"b.json"}}}],
		"upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp.example.com","clientId":"c"}}]}`))}
	// SPIFFE file bundles are deployed from ToolHive v0.66.0 on.
	c, err := New(f.Deps(framework.Config{RunnerImage: "runner:test", Release: release.Releases[len(release.Releases)-1]}))
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.Refresh()
	f.converge("remote")
	got := f.get("remote")
	if !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionAuthServerRefValidated) {
		t.Fatalf("status: %+v", got.Status)
	}
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName("remote"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if as := rc.EmbeddedAuthServerConfig; as == nil || as.Storage == nil || as.Storage.RedisConfig.KeyPrefix != "thv:auth:{"+testNS+":remote}:" ||
		len(as.DelegateClients) != 1 || len(as.SPIFFETrustDomains) != 1 {
		t.Errorf("embedded_auth_server_config: %+v", as)
	}
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), "remote", metav1.GetOptions{})
	pod := dep.Spec.Template.Spec
	var env []string
	for _, e := range pod.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env = append(env, e.Name+"="+e.ValueFrom.SecretKeyRef.Name)
		}
	}
	if !strings.Contains(strings.Join(env, " "), "TOOLHIVE_DELEGATE_CLIENT_SECRET_0=dc TOOLHIVE_AUTH_SERVER_REDIS_PASSWORD=redis") {
		t.Errorf("secret env: %q", env)
	}
	var bundle bool
	for _, v := range pod.Volumes {
		bundle = bundle || (v.Name == "authserver-spiffe-bundle-0" && v.ConfigMap != nil && v.ConfigMap.Name == "bundle")
	}
	if !bundle {
		t.Errorf("volumes: %+v", pod.Volumes)
	}
	if acts, err := f.sync("remote"); err != nil || len(acts) != 0 {
		t.Fatalf("steady state: %v %d writes", err, len(acts))
	}
}
