package wiring

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// The CA bundles of an OAuth2 upstream and of the second trusted issuer
// are written as ToolHive's operator writes them: ConfigMap volumes by
// position after the server's other files (upstreams first), each key
// mounted as one ca.crt file, and ca_file_path naming it.
func TestAuthServerCABundleWiring(t *testing.T) {
	cfg := embeddedConfig(t, `{"issuer":"https://auth.example.com","upstreamProviders":[{"name":"corp","type":"oauth2","oauth2Config":{`+
		`"authorizationEndpoint":"https://idp/authorize","tokenEndpoint":"https://idp/token","clientId":"c",`+
		`"userInfo":{"endpointUrl":"https://idp/userinfo"},"caBundleRef":{"configMapRef":{"name":"idp-ca"}}}}],`+
		`"trustedIssuers":[{"issuerUrl":"https://a","expectedAudience":"x","allowedDelegateClients":["*"]},{"issuerUrl":"https://b","expectedAudience":"x","allowedDelegateClients":["*"],"caBundleRef":{"configMapRef":{"name":"b-ca","key":"b.pem"}}}]}`)
	oidc := &ResolvedOIDC{Audience: "https://m", ResourceURL: "https://m"}
	w, err := EmbeddedAuthServer(thv1.KindMCPServer, testOwner, cfg, nil, oidc, 8080, release.Newest())
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Config.Upstreams[0].OAuth2Config.CAFilePath; got != "/etc/toolhive/authserver/upstream-ca/0/ca.crt" {
		t.Errorf("upstream ca_file_path %q", got)
	}
	if a, b := w.Config.TrustedIssuers[0].CAFilePath, w.Config.TrustedIssuers[1].CAFilePath; a != "" || b != "/etc/toolhive/authserver/issuer-ca/1/ca.crt" {
		t.Errorf("trusted issuers' ca_file_path %q %q", a, b)
	}
	wantVols := []corev1.Volume{
		{Name: "authserver-upstream-ca-0", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "idp-ca"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}},
		{Name: "authserver-issuer-ca-1", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "b-ca"}, Items: []corev1.KeyToPath{{Key: "b.pem", Path: "ca.crt"}}}}},
	}
	wantMounts := []corev1.VolumeMount{
		{Name: "authserver-upstream-ca-0", MountPath: "/etc/toolhive/authserver/upstream-ca/0/ca.crt", SubPath: "ca.crt", ReadOnly: true},
		{Name: "authserver-issuer-ca-1", MountPath: "/etc/toolhive/authserver/issuer-ca/1/ca.crt", SubPath: "ca.crt", ReadOnly: true},
	}
	if !reflect.DeepEqual(w.Volumes, wantVols) || !reflect.DeepEqual(w.Mounts, wantMounts) {
		vols, _ := json.Marshal(w.Volumes)
		mounts, _ := json.Marshal(w.Mounts)
		t.Errorf("volumes %s\nmounts %s", vols, mounts)
	}
}

// The checksum is ToolHive's: the upstreams' bundles, then a marker and
// the trusted issuers', each followed by a NUL; none without bundles.
func TestAuthServerCAChecksum(t *testing.T) {
	cfg := &thv1.EmbeddedAuthServerConfig{
		UpstreamProviders: []thv1.UpstreamProviderConfig{{Name: "u", OIDCConfig: &thv1.OIDCUpstreamConfig{
			CABundleRef: &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "u"}}}}},
		TrustedIssuers: []thv1.TrustedIssuerConfig{{IssuerURL: "https://i", CABundleRef: &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "i"}}}},
	}
	bundles := AuthServerCABundles(cfg)
	if len(bundles) != 2 || bundles[0].Field != `upstreamProviders[0] ("u") caBundleRef` || bundles[1].Field != `trustedIssuers[0] ("https://i") caBundleRef` {
		t.Fatalf("bundles %+v", bundles)
	}
	sum := sha256.Sum256([]byte("U\x00trustedIssuers\x00I\x00"))
	if got := AuthServerCAChecksum(bundles, [][]byte{[]byte("U"), []byte("I")}); got != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum %s", got)
	}
	upstreamOnly := sha256.Sum256([]byte("U\x00"))
	if got := AuthServerCAChecksum(bundles[:1], [][]byte{[]byte("U")}); got != hex.EncodeToString(upstreamOnly[:]) {
		t.Errorf("upstream only: %s", got)
	}
	if got := AuthServerCAChecksum(nil, nil); got != "" {
		t.Errorf("none: %q", got)
	}
}

// Content that is not PEM certificates is refused with ToolHive's words.
func TestCheckPEMCertificates(t *testing.T) {
	ca := toolhivetest.CAPEM("ca")
	for in, want := range map[string]string{
		ca + ca: "",
		"  \n":  "certificate data is empty",
		"junk":  "contains non-PEM certificate data",
		"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n": `contains PEM block of type "PRIVATE KEY", expected CERTIFICATE`,
	} {
		err := CheckPEMCertificates([]byte(in))
		if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
