package wiring

import (
	"strings"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// TestCheckHeaderForward pins what spec.headerForward may say.
func TestCheckHeaderForward(t *testing.T) {
	secret := func(names ...string) []thv1.HeaderFromSecret {
		var out []thv1.HeaderFromSecret
		for _, n := range names {
			out = append(out, thv1.HeaderFromSecret{HeaderName: n, ValueSecretRef: &thv1.SecretKeyRef{Name: "s", Key: "k"}})
		}
		return out
	}
	for _, c := range []struct {
		name     string
		hf       thv1.HeaderForwardConfig
		mentions string // "" when accepted
	}{
		{"empty", thv1.HeaderForwardConfig{}, ""},
		{"plain-and-secret", thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X-Tenant": "a", "Authorization": "Bearer x\tz"},
			AddHeadersFromSecret: secret("X-API-Key")}, ""},
		// The same spelling in both lists: the Secret's value wins, as in ToolHive.
		{"same-spelling-both", thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X-Key": "a"}, AddHeadersFromSecret: secret("X-Key")}, ""},
		{"restricted-plain", thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"x-forwarded-for": "1.2.3.4"}}, "X-Forwarded-For"},
		{"restricted-secret", thv1.HeaderForwardConfig{AddHeadersFromSecret: secret("Proxy-Authorization")}, "Proxy-Authorization"},
		{"not-a-token", thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X Tenant": "a"}}, "not a valid HTTP header name"},
		{"not-a-token-secret", thv1.HeaderForwardConfig{AddHeadersFromSecret: secret("X-Key:")}, "not a valid HTTP header name"},
		{"value-newline", thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"X-Tenant": "a\r\nHost: evil"}}, "control characters"},
		{"two-spellings-plain", thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"x-tenant": "a", "X-Tenant": "b"}}, "same header"},
		{"two-spellings-across", thv1.HeaderForwardConfig{AddPlaintextHeaders: map[string]string{"x-key": "a"}, AddHeadersFromSecret: secret("X-Key")}, "same header"},
		{"two-spellings-secret", thv1.HeaderForwardConfig{AddHeadersFromSecret: secret("X-Key", "x-key")}, "same header"},
		{"same-variable", thv1.HeaderForwardConfig{AddHeadersFromSecret: secret("X-Api-Key", "X_Api_Key")}, "TOOLHIVE_SECRET_HEADER_FORWARD_X_API_KEY_REMOTE"},
		{"no-secret-ref", thv1.HeaderForwardConfig{AddHeadersFromSecret: []thv1.HeaderFromSecret{{HeaderName: "X-Key"}}}, "no valueSecretRef"},
	} {
		err := CheckHeaderForward("remote", &c.hf)
		switch {
		case c.mentions == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.mentions != "" && (err == nil || !strings.Contains(err.Error(), c.mentions) || !strings.HasPrefix(err.Error(), "spec.headerForward.")):
			t.Errorf("%s: %v, want a refusal mentioning %q", c.name, err, c.mentions)
		}
	}
}

// TestHeaderSecretName pins the variable names ToolHive's runner looks
// up: header and proxy name upper-cased, every other character '_'.
func TestHeaderSecretName(t *testing.T) {
	for _, c := range []struct{ proxy, header, want string }{
		{"remote", "X-API-Key", "HEADER_FORWARD_X_API_KEY_REMOTE"},
		{"github-copilot", "Authorization", "HEADER_FORWARD_AUTHORIZATION_GITHUB_COPILOT"},
		{"proxy.v2", "x-tenant_id", "HEADER_FORWARD_X_TENANT_ID_PROXY_V2"},
	} {
		if got := headerSecretName(c.proxy, c.header); got != c.want {
			t.Errorf("headerSecretName(%q, %q) = %s, want %s", c.proxy, c.header, got, c.want)
		}
	}
}
