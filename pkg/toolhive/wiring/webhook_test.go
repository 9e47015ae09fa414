package wiring

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

func webhookConfig(validating, mutating []thv1.WebhookSpec) *thv1.MCPWebhookConfig {
	return &thv1.MCPWebhookConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "hooks", Generation: 1, ResourceVersion: "7"},
		Spec:       thv1.MCPWebhookConfigSpec{Validating: validating, Mutating: mutating},
	}
}

// What ToolHive's operator refuses (ValidateMCPWebhookConfigSpec) and what
// it would let through to a runner that cannot use it are validation
// errors of the config, one per problem, naming the field.
func TestValidateWebhookConfig(t *testing.T) {
	hook := func(edit func(*thv1.WebhookSpec)) []thv1.WebhookSpec {
		w := thv1.WebhookSpec{Name: "policy", URL: "https://policy.example.com/validate"}
		if edit != nil {
			edit(&w)
		}
		return []thv1.WebhookSpec{w}
	}
	for _, tc := range []struct {
		name                 string
		validating, mutating []thv1.WebhookSpec
		want                 []string // substrings, one per error
	}{
		{"one https webhook", hook(nil), nil, nil},
		{"full", hook(func(w *thv1.WebhookSpec) {
			w.Timeout, w.FailurePolicy, w.HMACSecretRef = ptr.To("30s"), "ignore", secretRef("hmac", "key")
			w.TLSConfig = &thv1.WebhookTLSConfig{CASecretRef: secretRef("tls", "ca.crt"),
				ClientCertSecretRef: secretRef("tls", "tls.crt"), ClientKeySecretRef: secretRef("tls", "tls.key")}
		}), hook(func(w *thv1.WebhookSpec) { w.Timeout = ptr.To("0s") }), nil},
		{"http with insecureSkipVerify", hook(func(w *thv1.WebhookSpec) {
			w.URL, w.TLSConfig = "http://127.0.0.1:9000/hook", &thv1.WebhookTLSConfig{InsecureSkipVerify: true}
		}), nil, nil},
		{"none", nil, nil, []string{"spec: at least one validating or mutating webhook"}},
		{"http without insecureSkipVerify", hook(func(w *thv1.WebhookSpec) { w.URL = "http://policy.example.com" }), nil,
			[]string{`spec.validating[0].url: "http://policy.example.com" must use https unless tlsConfig.insecureSkipVerify is true`}},
		{"relative URL", nil, hook(func(w *thv1.WebhookSpec) { w.URL = "policy/validate" }),
			[]string{`spec.mutating[0].url: "policy/validate" is not a valid URL`}},
		{"other scheme", hook(func(w *thv1.WebhookSpec) {
			w.URL, w.TLSConfig = "ftp://policy.example.com", &thv1.WebhookTLSConfig{InsecureSkipVerify: true}
		}), nil, []string{`is not an http(s) URL with a host`}},
		{"no host", hook(func(w *thv1.WebhookSpec) { w.URL = "https:///validate" }), nil, []string{`is not an http(s) URL with a host`}},
		{"failure policy", hook(func(w *thv1.WebhookSpec) { w.FailurePolicy = "retry" }), nil, []string{`failurePolicy: "retry" is not fail or ignore`}},
		{"timeouts", append(hook(func(w *thv1.WebhookSpec) { w.Timeout = ptr.To("500ms") }),
			thv1.WebhookSpec{Name: "b", URL: "https://b.example.com", Timeout: ptr.To("31s")},
			thv1.WebhookSpec{Name: "c", URL: "https://c.example.com", Timeout: ptr.To("1 day")}), nil,
			[]string{"spec.validating[0].timeout: 500ms is not between 1s and 30s", "spec.validating[1].timeout: 31s is not between",
				`spec.validating[2].timeout: "1 day" is not a duration`}},
		{"client certificate without key", hook(func(w *thv1.WebhookSpec) {
			w.TLSConfig = &thv1.WebhookTLSConfig{ClientCertSecretRef: secretRef("tls", "tls.crt")}
		}), nil, []string{"spec.validating[0].tlsConfig: clientCertSecretRef and clientKeySecretRef must be set together"}},
		{"duplicate names in one list", append(hook(nil), hook(nil)...), hook(nil),
			[]string{`spec.validating[1].name: "policy" is used by an earlier webhook`}},
		{"secret without key", hook(func(w *thv1.WebhookSpec) { w.HMACSecretRef = secretRef("hmac", "") }), nil,
			[]string{"spec.validating[0].hmacSecretRef: name and key are required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateWebhookConfig(webhookConfig(tc.validating, tc.mutating))
			if len(errs) != len(tc.want) {
				t.Fatalf("errors = %q, want %d", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

// The RunConfig's webhooks are what ToolHive's operator writes for the
// same config (the differential test compares them with its output);
// every Secret key is a Secret volume of one file, mounted by subPath
// where the RunConfig says.
func TestWebhookWiring(t *testing.T) {
	hmac := secretRef("webhook-hmac", "key")
	cfg := webhookConfig([]thv1.WebhookSpec{{
		Name: "policy-check", URL: "https://policy.example.com/validate", Timeout: ptr.To("5s"), FailurePolicy: "ignore", HMACSecretRef: hmac,
		TLSConfig: &thv1.WebhookTLSConfig{CASecretRef: secretRef("webhook-tls", "ca.crt"),
			ClientCertSecretRef: secretRef("webhook-tls", "tls.crt"), ClientKeySecretRef: secretRef("webhook-tls", "tls.key")},
	}, {
		Name: "audit", URL: "http://audit.webhooks.svc:8080", TLSConfig: &thv1.WebhookTLSConfig{InsecureSkipVerify: true},
	}}, []thv1.WebhookSpec{{Name: "redact", URL: "https://redact.example.com", HMACSecretRef: hmac}})
	w, err := Webhooks(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The identifier's hash part is FNV-1a of dump.ForHash("secret/key").
	dir := func(kind, name, purpose, ref string) string {
		return WebhookMountRoot + "/webhook_" + kind + "_" + name + "_" + purpose + "_" + toolhiveHash(ref)
	}
	wantValidating := []schema.WebhookConfig{{
		Name: "policy-check", URL: "https://policy.example.com/validate", Timeout: 5e9, FailurePolicy: "ignore",
		HMACSecretRef: dir("validating", "policy_check", "hmac", "webhook-hmac/key") + "/hmac",
		TLSConfig: &schema.WebhookTLSConfig{
			CABundlePath:   dir("validating", "policy_check", "tls_ca", "webhook-tls/ca.crt") + "/ca.crt",
			ClientCertPath: dir("validating", "policy_check", "tls_client_cert", "webhook-tls/tls.crt") + "/tls.crt",
			ClientKeyPath:  dir("validating", "policy_check", "tls_client_key", "webhook-tls/tls.key") + "/tls.key",
		},
	}, {
		Name: "audit", URL: "http://audit.webhooks.svc:8080", FailurePolicy: "fail", TLSConfig: &schema.WebhookTLSConfig{InsecureSkipVerify: true},
	}}
	wantMutating := []schema.WebhookConfig{{Name: "redact", URL: "https://redact.example.com", FailurePolicy: "fail",
		HMACSecretRef: dir("mutating", "redact", "hmac", "webhook-hmac/key") + "/hmac"}}
	if !reflect.DeepEqual(w.Validating, wantValidating) || !reflect.DeepEqual(w.Mutating, wantMutating) {
		t.Errorf("webhooks\n got %+v\n     %+v\nwant %+v\n     %+v", w.Validating, w.Mutating, wantValidating, wantMutating)
	}
	if toolhiveHash("webhook-hmac/key") != "d349c346" {
		t.Errorf("hash of a Secret reference = %s; the paths would not be ToolHive's", toolhiveHash("webhook-hmac/key"))
	}

	// An unset timeout is written as 0, never left out: the runner reads an
	// absent one as 10s, ToolHive's operator writes 0.
	rc := &schema.RunConfig{}
	w.ApplyTo(rc)
	raw, _ := json.Marshal(rc)
	if !strings.Contains(string(raw), `{"name":"audit","url":"http://audit.webhooks.svc:8080","timeout":0,"failure_policy":"fail","tls_config":{"insecure_skip_verify":true}}`) {
		t.Errorf("RunConfig: %s", raw)
	}
	if strings.Contains(string(raw), "webhook-tls") || strings.Contains(string(raw), "webhook-hmac") {
		t.Errorf("a Secret's name reached the RunConfig: %s", raw)
	}

	// Five mounts, sorted by identifier: one per (webhook, purpose,
	// Secret key); each a Secret volume with the one key as the file.
	if len(w.Volumes) != 5 || len(w.Mounts) != 5 {
		t.Fatalf("volumes %+v mounts %+v", w.Volumes, w.Mounts)
	}
	files := map[string]string{}
	for i, v := range w.Volumes {
		m := w.Mounts[i]
		if v.Secret == nil || len(v.Secret.Items) != 1 || v.Name != m.Name || !strings.HasPrefix(v.Name, WebhookVolumePrefix) ||
			m.SubPath != v.Secret.Items[0].Path || !m.ReadOnly || !strings.HasSuffix(m.MountPath, "/"+m.SubPath) {
			t.Errorf("volume %+v mount %+v", v, m)
		}
		files[m.MountPath] = v.Secret.SecretName + "/" + v.Secret.Items[0].Key
	}
	want := map[string]string{
		wantValidating[0].HMACSecretRef: "webhook-hmac/key", wantMutating[0].HMACSecretRef: "webhook-hmac/key",
		wantValidating[0].TLSConfig.CABundlePath: "webhook-tls/ca.crt", wantValidating[0].TLSConfig.ClientCertPath: "webhook-tls/tls.crt",
		wantValidating[0].TLSConfig.ClientKeyPath: "webhook-tls/tls.key",
	}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("mounted files %v, want %v", files, want)
	}
	if w.Mounts[0].MountPath > w.Mounts[1].MountPath {
		t.Errorf("mounts are not in identifier order: %+v", w.Mounts)
	}

	if w, err := Webhooks(nil); err != nil || !reflect.DeepEqual(w, WebhookWiring{}) {
		t.Errorf("no config: %+v %v", w, err)
	}
}

// A stored config that fails validation deploys nothing: the builder
// refuses it with the workload's webhook condition.
func TestWebhooksRefusesAnInvalidConfig(t *testing.T) {
	_, err := Webhooks(webhookConfig([]thv1.WebhookSpec{{Name: "p", URL: "http://p.example.com"}}, nil))
	var invalid *InvalidSpecError
	if !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionWebhookConfigValidated || invalid.Reason != thv1.ReasonWebhookConfigInvalid ||
		!strings.Contains(invalid.Message, "MCPWebhookConfig hooks: spec.validating[0].url") {
		t.Fatalf("err = %v", err)
	}
}
