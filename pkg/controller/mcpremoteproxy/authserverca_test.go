package mcpremoteproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// A remote proxy's embedded authorization server (through the legacy
// externalAuthConfigRef) mounts its OAuth2 upstream's CA bundle and
// carries its checksum as an MCPServer's does; a bundle that lacks its key
// fails the proxy on ExternalAuthConfigValidated, nothing written.
func TestAuthServerUpstreamCABundle(t *testing.T) {
	const raw = `{"issuer":"https://auth.example.com","upstreamProviders":[{"name":"gh","type":"oauth2","oauth2Config":{` +
		`"authorizationEndpoint":"https://gh/authorize","tokenEndpoint":"https://gh/token","clientId":"c","userInfo":{"endpointUrl":"https://gh/user"},` +
		`"caBundleRef":{"configMapRef":{"name":"gh-ca","key":"gh.pem"}}}}]}`
	viaExtAuth := func(p *thv1.MCPRemoteProxy) {
		withAuthServer(p)
		p.Spec.AuthServerRef, p.Spec.ExternalAuthConfigRef = nil, &thv1.ExternalAuthConfigReference{Name: "as"}
	}
	pem := toolhivetest.CAPEM("gh")
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "gh-ca", ResourceVersion: "1"}, Data: map[string]string{"gh.pem": pem}}
	f := newFixture(t, newProxy("remote", viaExtAuth), newOIDCConfig("auth", true, true), embeddedConfig(raw), ca)
	f.converge("remote")
	ctx := context.Background()
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, naming.RunConfigName("remote"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if got := rc.EmbeddedAuthServerConfig.Upstreams[0].OAuth2Config.CAFilePath; got != "/etc/toolhive/authserver/upstream-ca/0/ca.crt" {
		t.Errorf("ca_file_path %q", got)
	}
	dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "remote", metav1.GetOptions{})
	pod := dep.Spec.Template.Spec
	if v := pod.Volumes[len(pod.Volumes)-1]; v.Name != "authserver-upstream-ca-0" || v.ConfigMap == nil || v.ConfigMap.Name != "gh-ca" ||
		len(v.ConfigMap.Items) != 1 || v.ConfigMap.Items[0] != (corev1.KeyToPath{Key: "gh.pem", Path: "ca.crt"}) {
		t.Errorf("volumes: %+v", pod.Volumes)
	}
	sum := sha256.Sum256([]byte(pem + "\x00"))
	if got := dep.Spec.Template.Annotations["toolhive.stacklok.dev/authserver-ca-checksum"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum %q", got)
	}
	if acts, err := f.sync("remote"); err != nil || len(acts) != 0 {
		t.Fatalf("steady state: %v %s", err, workloadtest.Describe(acts))
	}

	ca.Data = map[string]string{"other": pem}
	ca.ResourceVersion = "2"
	if _, err := f.Kube.CoreV1().ConfigMaps(testNS).Update(ctx, ca, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	workloadtest.AssertActions(t, acts, "patch mcpremoteproxies/status")
	const msg = `upstreamProviders[0] ("gh") caBundleRef: CA bundle ConfigMap "gh-ca" does not contain key "gh.pem" in data or binaryData`
	got := f.get("remote")
	c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionExternalAuthConfigValidated)
	// Ready's reason is NotReady, as ToolHive's operator writes it.
	if ready := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady); ready == nil || ready.Reason != thv1.ReasonNotReady {
		t.Errorf("Ready %+v", ready)
	}
	if got.Status.Phase != thv1.MCPRemoteProxyPhaseFailed || got.Status.Message != "Failed to build configuration: "+msg ||
		c == nil || c.Reason != thv1.ReasonInvalidCABundle || c.Message != "invalid CA bundle: "+msg {
		t.Errorf("status %s %q %+v", got.Status.Phase, got.Status.Message, c)
	}
}
