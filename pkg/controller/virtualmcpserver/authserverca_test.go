package virtualmcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// authServerCAJSON is authServerJSON with a CA bundle for its second
// upstream (ConfigMap gh-ca) and a trusted issuer with one (ConfigMap
// issuer-ca).
var authServerCAJSON = strings.Replace(strings.Replace(authServerJSON, `"clientId":"gh"`,
	`"clientId":"gh","caBundleRef":{"configMapRef":{"name":"gh-ca"}}`, 1), `"storage"`,
	`"trustedIssuers":[{"issuerUrl":"https://corp.example.com","expectedAudience":"https://mcp.example.com","allowedDelegateClients":["*"],"caBundleRef":{"configMapRef":{"name":"issuer-ca"}}}],"storage"`, 1)

func vmcpCAConfigMap(name, rv, pem string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, ResourceVersion: rv}, Data: map[string]string{"ca.crt": pem}}
}

// spec.authServerConfig's CA bundles, as ToolHive's operator deploys
// them on a vMCP: authserver-config.yaml names the mounted files (the
// upstream's by its position), the vmcp container mounts the ConfigMap
// keys, and the pod template carries the checksum of their content, which
// a new bundle changes.
func TestAuthServerConfigCABundles(t *testing.T) {
	ghCA, issuerCA := toolhivetest.CAPEM("gh"), toolhivetest.CAPEM("issuer")
	f := newFixture(t, newVMCP("agg", withAuthServer(authServerCAJSON)), newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup),
		newMember("a", testGroup), vmcpCAConfigMap("gh-ca", "1", ghCA), vmcpCAConfigMap("issuer-ca", "1", issuerCA))
	if _, err := f.sync("agg"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var as schema.EmbeddedAuthServerConfig
	if err := yaml.UnmarshalStrict([]byte(cm.Data[naming.VMCPAuthServerConfigKey]), &as); err != nil {
		t.Fatal(err)
	}
	if as.Upstreams[0].OIDCConfig.CAFilePath != "" || as.Upstreams[1].OIDCConfig.CAFilePath != "/etc/toolhive/authserver/upstream-ca/1/ca.crt" ||
		len(as.TrustedIssuers) != 1 || as.TrustedIssuers[0].CAFilePath != "/etc/toolhive/authserver/issuer-ca/0/ca.crt" {
		t.Errorf("authserver-config.yaml:\n%s", cm.Data[naming.VMCPAuthServerConfigKey])
	}
	dep, err := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mounts []corev1.VolumeMount
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		if strings.Contains(m.Name, "-ca-") {
			mounts = append(mounts, m)
		}
	}
	want := []corev1.VolumeMount{
		{Name: "authserver-upstream-ca-1", MountPath: "/etc/toolhive/authserver/upstream-ca/1/ca.crt", SubPath: "ca.crt", ReadOnly: true},
		{Name: "authserver-issuer-ca-0", MountPath: "/etc/toolhive/authserver/issuer-ca/0/ca.crt", SubPath: "ca.crt", ReadOnly: true},
	}
	if !reflect.DeepEqual(mounts, want) {
		t.Errorf("CA mounts %+v", mounts)
	}
	sum := func(issuer string) string {
		s := sha256.Sum256([]byte(ghCA + "\x00trustedIssuers\x00" + issuer + "\x00"))
		return hex.EncodeToString(s[:])
	}
	const annotation = "toolhive.stacklok.dev/authserver-ca-checksum"
	if got := dep.Spec.Template.Annotations[annotation]; got != sum(issuerCA) {
		t.Errorf("checksum %q, want %q", got, sum(issuerCA))
	}
	if !meta.IsStatusConditionTrue(f.get("agg").Status.Conditions, thv1.ConditionAuthServerConfigValidated) {
		t.Errorf("conditions %+v", f.get("agg").Status.Conditions)
	}

	newCA := toolhivetest.CAPEM("issuer-2")
	if _, err := f.Kube.CoreV1().ConfigMaps(testNS).Update(ctx, vmcpCAConfigMap("issuer-ca", "2", newCA), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.ApplyServerBehaviour()
	f.Refresh()
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch deployments")
	dep, _ = f.Kube.AppsV1().Deployments(testNS).Get(ctx, "agg", metav1.GetOptions{})
	if got := dep.Spec.Template.Annotations[annotation]; got != sum(newCA) {
		t.Errorf("checksum after the change %q, want %q", got, sum(newCA))
	}

	// The ConfigMap's events re-sync the server, by the reference index.
	wt.Drain(f.c.Queue)
	h := f.c.AuthServerCAHandler()
	h.OnAdd(vmcpCAConfigMap("other", "1", ""), false)
	if n := len(wt.Drain(f.c.Queue)); n != 0 {
		t.Errorf("an unrelated ConfigMap enqueued %d", n)
	}
	h.OnDelete(vmcpCAConfigMap("gh-ca", "1", ""))
	if got := wt.Drain(f.c.Queue); !reflect.DeepEqual(got, []string{testNS + "/agg"}) {
		t.Errorf("enqueued %v", got)
	}
}

// A CA bundle that cannot be used fails the vMCP with
// AuthServerConfigValidated=False and ToolHive's words, nothing written.
func TestAuthServerConfigCABundleInvalid(t *testing.T) {
	objs := []runtime.Object{newVMCP("agg", withAuthServer(authServerCAJSON)), newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup),
		newMember("a", testGroup), vmcpCAConfigMap("gh-ca", "1", toolhivetest.CAPEM("gh")),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "issuer-ca"}, Data: map[string]string{"other": "x"}}}
	f := newFixture(t, objs...)
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	const msg = `invalid CA bundle: trustedIssuers[0] ("https://corp.example.com") caBundleRef: CA bundle ConfigMap "issuer-ca" does not contain key "ca.crt" in data or binaryData`
	got := f.get("agg")
	c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionAuthServerConfigValidated)
	if got.Status.Phase != thv1.VirtualMCPServerPhaseFailed || got.Status.Message != msg || c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != thv1.ReasonAuthServerConfigInvalid || c.Message != msg {
		t.Errorf("status %s %q %+v", got.Status.Phase, got.Status.Message, c)
	}
	if evs := withoutGrantAdvisory(f.Events()); len(evs) != 1 || evs[0] != "Warning "+thv1.ReasonAuthServerConfigInvalid+" "+msg {
		t.Errorf("events %q", evs)
	}
}

// A missing CA bundle ConfigMap fails the vMCP until it is created, which
// re-syncs it.
func TestAuthServerConfigCABundleMissing(t *testing.T) {
	f := newFixture(t, newVMCP("agg", withAuthServer(authServerCAJSON)), newOIDCConfig("auth", ""), toolhivetest.NewGroup(testNS, testGroup),
		newMember("a", testGroup), vmcpCAConfigMap("issuer-ca", "1", toolhivetest.CAPEM("issuer")))
	acts, err := f.sync("agg")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch virtualmcpservers/status")
	const msg = `upstreamProviders[1] ("github") caBundleRef: failed to get CA bundle ConfigMap "gh-ca" in namespace "team-a": configmaps "gh-ca" not found`
	got := f.get("agg")
	if got.Status.Phase != thv1.VirtualMCPServerPhaseFailed || got.Status.Message != msg {
		t.Errorf("status %s %q", got.Status.Phase, got.Status.Message)
	}
	if evs := withoutGrantAdvisory(f.Events()); len(evs) != 1 || evs[0] != "Warning "+thv1.ReasonCABundleNotFound+" "+msg {
		t.Errorf("events %q", evs)
	}
}
