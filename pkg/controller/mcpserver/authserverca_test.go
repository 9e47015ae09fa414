package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// authServerCAJSON is authServerJSON with a CA bundle for its upstream
// (ConfigMap idp-ca, key ca.crt) and a trusted issuer with one (ConfigMap
// issuer-ca, key bundle.pem).
const authServerCAJSON = `{"issuer":"https://auth.example.com","signingKeySecretRefs":[{"name":"keys","key":"current"}],` +
	`"hmacSecretRefs":[{"name":"hmac","key":"secret"}],"upstreamProviders":[{"name":"corp-idp","type":"oidc",` +
	`"oidcConfig":{"issuerUrl":"https://idp.example.com","clientId":"mcp","caBundleRef":{"configMapRef":{"name":"idp-ca"}}}}],` +
	`"trustedIssuers":[{"issuerUrl":"https://corp.example.com","expectedAudience":"https://mcp.example.com","allowedDelegateClients":["*"],"caBundleRef":{"configMapRef":{"name":"issuer-ca","key":"bundle.pem"}}}]}`

func caConfigMap(name, rv, key, pem string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, ResourceVersion: rv}, Data: map[string]string{key: pem}}
}

// caChecksum is the checksum ToolHive's operator annotates for an
// upstream bundle and a trusted issuer's.
func caChecksum(upstream, issuer string) string {
	sum := sha256.Sum256([]byte(upstream + "\x00" + "trustedIssuers\x00" + issuer + "\x00"))
	return hex.EncodeToString(sum[:])
}

// The CA bundles of an embedded authorization server, as ToolHive's
// operator deploys them: each ConfigMap key mounted as ca.crt in a
// directory of its own by position, the RunConfig naming the files, and
// the pod template carrying the checksum of their content. A converged
// server writes nothing; a new bundle rolls the pods (the Deployment
// only: the RunConfig does not change).
func TestAuthServerCABundles(t *testing.T) {
	idpCA, issuerCA := toolhivetest.CAPEM("idp"), toolhivetest.CAPEM("issuer")
	f := newFixture(t, newServer("fetch", withAuthServer), authServerConfig("as", authServerCAJSON), newOIDCConfig("auth", true, true),
		caConfigMap("idp-ca", "1", "ca.crt", idpCA), caConfigMap("issuer-ca", "1", "bundle.pem", issuerCA))
	f.converge("fetch")
	ctx := context.Background()
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(ctx, naming.RunConfigName("fetch"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		AS struct {
			Upstreams []struct {
				OIDC struct {
					CA string `json:"ca_file_path"`
				} `json:"oidc_config"`
			} `json:"upstreams"`
			Issuers []struct {
				CA string `json:"ca_file_path"`
			} `json:"trusted_issuers"`
		} `json:"embedded_auth_server_config"`
	}
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	if len(rc.AS.Upstreams) != 1 || rc.AS.Upstreams[0].OIDC.CA != "/etc/toolhive/authserver/upstream-ca/0/ca.crt" ||
		len(rc.AS.Issuers) != 1 || rc.AS.Issuers[0].CA != "/etc/toolhive/authserver/issuer-ca/0/ca.crt" {
		t.Errorf("RunConfig: %s", cm.Data[schema.Key])
	}
	dep, err := f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The API server's default mode, which ToolHive's operator leaves to it.
	for _, v := range []corev1.Volume{
		{Name: "authserver-upstream-ca-0", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "idp-ca"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}, DefaultMode: ptr.To[int32](0o644)}}},
		{Name: "authserver-issuer-ca-0", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "issuer-ca"}, Items: []corev1.KeyToPath{{Key: "bundle.pem", Path: "ca.crt"}}, DefaultMode: ptr.To[int32](0o644)}}},
	} {
		if !containsVolume(dep.Spec.Template.Spec.Volumes, v) {
			t.Errorf("volumes %+v lack %+v", dep.Spec.Template.Spec.Volumes, v)
		}
	}
	for _, m := range []corev1.VolumeMount{
		{Name: "authserver-upstream-ca-0", MountPath: "/etc/toolhive/authserver/upstream-ca/0/ca.crt", SubPath: "ca.crt", ReadOnly: true},
		{Name: "authserver-issuer-ca-0", MountPath: "/etc/toolhive/authserver/issuer-ca/0/ca.crt", SubPath: "ca.crt", ReadOnly: true},
	} {
		if !containsMount(dep.Spec.Template.Spec.Containers[0].VolumeMounts, m) {
			t.Errorf("mounts %+v lack %+v", dep.Spec.Template.Spec.Containers[0].VolumeMounts, m)
		}
	}
	const annotation = "toolhive.stacklok.dev/authserver-ca-checksum"
	if got := dep.Spec.Template.Annotations[annotation]; got != caChecksum(idpCA, issuerCA) {
		t.Errorf("checksum %q, want %q", got, caChecksum(idpCA, issuerCA))
	}
	got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionAuthServerRefValidated) {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}

	f.refresh()
	if acts, err := f.sync("fetch"); err != nil || len(acts) != 0 {
		t.Fatalf("converged: %v %s", err, wt.Describe(acts))
	}
	newCA := toolhivetest.CAPEM("issuer-2")
	if _, err := f.kube.CoreV1().ConfigMaps(testNS).Update(ctx, caConfigMap("issuer-ca", "2", "bundle.pem", newCA), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	assertActions(t, acts, "patch deployments")
	dep, _ = f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	if got := dep.Spec.Template.Annotations[annotation]; got != caChecksum(idpCA, newCA) {
		t.Errorf("checksum after the change %q, want %q", got, caChecksum(idpCA, newCA))
	}
}

// A CA bundle that cannot be used fails the server, nothing written, as
// ToolHive's operator reports it: an invalid one (a missing key, content
// that is not certificates, an optional reference) on the condition of
// the reference the server came through with reason InvalidCABundle; a
// missing ConfigMap as Failed until it appears.
func TestAuthServerCABundleProblems(t *testing.T) {
	issuerCA := toolhivetest.CAPEM("issuer")
	const notFound = `upstreamProviders[0] ("corp-idp") caBundleRef: failed to get CA bundle ConfigMap "idp-ca" in namespace "team-a": configmaps "idp-ca" not found`
	for _, tc := range []struct {
		name       string
		cfg        string
		extAuth    bool
		cms        []runtime.Object
		cond       string
		msg        string
		readyEvent string
	}{
		{"missing ConfigMap", authServerCAJSON, false, []runtime.Object{caConfigMap("issuer-ca", "1", "bundle.pem", issuerCA)}, "", notFound,
			"Warning CABundleNotFound " + notFound},
		{"missing key", authServerCAJSON, false, []runtime.Object{caConfigMap("idp-ca", "1", "ca.crt", toolhivetest.CAPEM("idp")),
			caConfigMap("issuer-ca", "1", "ca.crt", issuerCA)}, thv1.ConditionAuthServerRefValidated,
			`trustedIssuers[0] ("https://corp.example.com") caBundleRef: CA bundle ConfigMap "issuer-ca" does not contain key "bundle.pem" in data or binaryData`, ""},
		{"not PEM, through externalAuthConfigRef", authServerCAJSON, true, []runtime.Object{caConfigMap("idp-ca", "1", "ca.crt", "not a certificate"),
			caConfigMap("issuer-ca", "1", "bundle.pem", issuerCA)}, thv1.ConditionExternalAuthConfigValidated,
			`upstreamProviders[0] ("corp-idp") caBundleRef: CA bundle ConfigMap "idp-ca" key "ca.crt" is invalid: contains non-PEM certificate data`, ""},
		{"optional", strings.Replace(authServerCAJSON, `"name":"idp-ca"`, `"name":"idp-ca","optional":true`, 1), false, nil,
			thv1.ConditionAuthServerRefValidated, `upstreamProviders[0] ("corp-idp") caBundleRef: caBundleRef.configMapRef.optional must be false or omitted`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mut := withAuthServer
			if tc.extAuth {
				mut = func(s *thv1.MCPServer) {
					withAuthServer(s)
					s.Spec.AuthServerRef, s.Spec.ExternalAuthConfigRef = nil, &thv1.ExternalAuthConfigReference{Name: "as"}
				}
			}
			objs := append([]runtime.Object{newServer("fetch", mut), authServerConfig("as", tc.cfg), newOIDCConfig("auth", true, true)}, tc.cms...)
			f := newFixture(t, objs...)
			acts, err := f.sync("fetch")
			if err != nil {
				t.Fatal(err)
			}
			assertActions(t, acts, "patch mcpservers/status")
			got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
			ready := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady)
			wantReady := tc.msg
			if tc.cond != "" {
				wantReady = "Failed to build configuration: " + tc.msg
				c := meta.FindStatusCondition(got.Status.Conditions, tc.cond)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonInvalidCABundle || c.Message != "invalid CA bundle: "+tc.msg {
					t.Errorf("%s: %+v", tc.cond, c)
				}
				tc.readyEvent = "Warning " + thv1.ReasonInvalidCABundle + " invalid CA bundle: " + tc.msg
			}
			if got.Status.Phase != thv1.MCPServerPhaseFailed || ready == nil || ready.Status != metav1.ConditionFalse || ready.Message != wantReady ||
				ready.Reason != thv1.ReasonNotReady {
				t.Errorf("status %s %+v, want Failed with %q", got.Status.Phase, ready, wantReady)
			}
			if evs := f.Events(); len(evs) != 1 || evs[0] != tc.readyEvent {
				t.Errorf("events %q, want %q", evs, tc.readyEvent)
			}
			f.refresh()
			if acts, err := f.sync("fetch"); err != nil || len(acts) != 0 {
				t.Fatalf("second sync: %v %s", err, wt.Describe(acts))
			}
		})
	}
}

// A CA bundle ConfigMap re-syncs the servers whose authorization server
// names it, through either reference, when it appears, changes or goes;
// an unrelated ConfigMap, a resync or a child's write re-syncs nothing.
func TestAuthServerCAHandler(t *testing.T) {
	viaExtAuth := func(s *thv1.MCPServer) {
		withAuthServer(s)
		s.Spec.AuthServerRef, s.Spec.ExternalAuthConfigRef = nil, &thv1.ExternalAuthConfigReference{Name: "as"}
	}
	f := newFixture(t, newServer("fetch", withAuthServer), newServer("legacy", viaExtAuth), newServer("plain"),
		authServerConfig("as", authServerCAJSON))
	wt.Drain(f.c.Queue)
	h := f.c.AuthServerCAHandler()
	cm := caConfigMap("issuer-ca", "1", "bundle.pem", "x")
	trimmed, _ := framework.TrimForeign(cm)
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "issuer-ca", ResourceVersion: "3",
		Labels: map[string]string{naming.LabelToolhive: "true"}}}
	h.OnAdd(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "other"}}, false)
	h.OnUpdate(trimmed, trimmed)
	h.OnAdd(child, false)
	if n := len(wt.Drain(f.c.Queue)); n != 0 {
		t.Errorf("an unrelated ConfigMap, a resync or a child enqueued %d", n)
	}
	for _, ev := range []func(){
		func() { h.OnAdd(trimmed, false) },
		func() { newer := cm.DeepCopy(); newer.ResourceVersion = "2"; h.OnUpdate(cm, newer) },
		func() { h.OnDelete(cm) },
	} {
		ev()
		if got := wt.Drain(f.c.Queue); !reflect.DeepEqual(got, []string{testNS + "/fetch", testNS + "/legacy"}) {
			t.Errorf("enqueued %v", got)
		}
	}
}
