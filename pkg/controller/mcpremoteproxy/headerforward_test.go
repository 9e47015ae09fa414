package mcpremoteproxy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// headerProxy is a proxy that forwards one plain header and one from a
// Secret.
func headerProxy(mut ...func(*thv1.MCPRemoteProxy)) *thv1.MCPRemoteProxy {
	return newProxy("remote", append([]func(*thv1.MCPRemoteProxy){func(p *thv1.MCPRemoteProxy) {
		p.Spec.HeaderForward = &thv1.HeaderForwardConfig{
			AddPlaintextHeaders: map[string]string{"X-Tenant-ID": "team-a"},
			AddHeadersFromSecret: []thv1.HeaderFromSecret{{
				HeaderName: "X-API-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "vendor-api", Key: "key"},
			}},
		}
	}}, mut...)...)
}

// The RunConfig carries the plain header and, for the Secret's, the name
// the runner looks up in its environment; the container gets that
// variable from a secretKeyRef, after switching the runner's secrets
// provider to the environment. Nothing of the Secret is in the ConfigMap.
func TestHeaderForwardRunConfigAndEnv(t *testing.T) {
	f := newFixture(t, headerProxy(func(p *thv1.MCPRemoteProxy) {
		p.Spec.ResourceOverrides = &thv1.ResourceOverrides{ProxyDeployment: &thv1.ProxyDeploymentOverrides{
			Env: []thv1.NameValue{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
		}}
	}))
	f.converge("remote")
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), "remote-runconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	want := &schema.HeaderForward{
		AddPlaintextHeaders:  map[string]string{"X-Tenant-ID": "team-a"},
		AddHeadersFromSecret: map[string]string{"X-API-Key": "HEADER_FORWARD_X_API_KEY_REMOTE"},
	}
	if got, _ := json.Marshal(rc.HeaderForward); string(got) != mustJSON(t, want) {
		t.Errorf("header_forward %s, want %s", got, mustJSON(t, want))
	}
	if strings.Contains(cm.Data[schema.Key], "vendor-api") {
		t.Errorf("the Secret's name reached the RunConfig: %s", cm.Data[schema.Key])
	}

	env := f.deployment("remote").Spec.Template.Spec.Containers[0].Env
	var names []string
	for _, e := range env {
		names = append(names, e.Name)
	}
	if got, want := strings.Join(names, ","), "TOOLHIVE_SECRETS_PROVIDER,TOOLHIVE_SECRET_HEADER_FORWARD_X_API_KEY_REMOTE,HTTP_PROXY,XDG_CONFIG_HOME,HOME,TOOLHIVE_RUNTIME,UNSTRUCTURED_LOGS"; got != want {
		t.Errorf("env %s, want %s", got, want)
	}
	if env[0].Value != "environment" {
		t.Errorf("%s = %q", env[0].Name, env[0].Value)
	}
	if ref := env[1].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "vendor-api" || ref.SecretKeyRef.Key != "key" || env[1].Value != "" {
		t.Errorf("%s = %+v, want a secretKeyRef to vendor-api/key", env[1].Name, env[1])
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A change of the header configuration rolls the proxy exactly once: one
// Deployment patch whose pod template changed (the RunConfig checksum
// when the RunConfig changed, the env when only a Secret reference did),
// and nothing on the next sync.
func TestHeaderForwardChangeRollsOnce(t *testing.T) {
	for _, c := range []struct {
		name      string
		edit      func(*thv1.MCPRemoteProxy)
		configMap bool // the RunConfig changes too
	}{
		{"plain-value", func(p *thv1.MCPRemoteProxy) { p.Spec.HeaderForward.AddPlaintextHeaders["X-Tenant-ID"] = "team-b" }, true},
		{"plain-added", func(p *thv1.MCPRemoteProxy) { p.Spec.HeaderForward.AddPlaintextHeaders["X-Region"] = "eu" }, true},
		{"secret-key", func(p *thv1.MCPRemoteProxy) {
			p.Spec.HeaderForward.AddHeadersFromSecret[0].ValueSecretRef.Key = "key-v2"
		}, false},
		{"secret-renamed-header", func(p *thv1.MCPRemoteProxy) { p.Spec.HeaderForward.AddHeadersFromSecret[0].HeaderName = "X-Vendor-Key" }, true},
		{"secret-added", func(p *thv1.MCPRemoteProxy) {
			p.Spec.HeaderForward.AddHeadersFromSecret = append(p.Spec.HeaderForward.AddHeadersFromSecret,
				thv1.HeaderFromSecret{HeaderName: "Authorization", ValueSecretRef: &thv1.SecretKeyRef{Name: "vendor-api", Key: "bearer"}})
		}, true},
		{"removed", func(p *thv1.MCPRemoteProxy) { p.Spec.HeaderForward = nil }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, headerProxy())
			f.converge("remote")
			before := f.deployment("remote")
			f.update("remote", c.edit)
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatal(err)
			}
			// No status write: the fake clientset does not bump the
			// generation, so the status does not change.
			want := []string{"patch deployments"}
			if c.configMap {
				want = append([]string{"patch configmaps"}, want...)
			}
			wt.AssertActions(t, acts, want...)
			f.ApplyServerBehaviour()
			f.Refresh()
			after := f.deployment("remote")
			sumBefore, sumAfter := before.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum], after.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
			if (sumBefore != sumAfter) != c.configMap {
				t.Errorf("checksum %s -> %s, want a change: %t", sumBefore, sumAfter, c.configMap)
			}
			if !c.configMap && slices.EqualFunc(before.Spec.Template.Spec.Containers[0].Env, after.Spec.Template.Spec.Containers[0].Env, envEqual) {
				t.Errorf("only the Secret reference changed, and the pod template did not")
			}
			acts, err = f.sync("remote")
			if err != nil || len(acts) != 0 {
				t.Fatalf("second sync: err %v actions %s", err, wt.Describe(acts))
			}
		})
	}
}

func envEqual(a, b corev1.EnvVar) bool { return mustJSONAny(a) == mustJSONAny(b) }

func mustJSONAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A header the runner would refuse or could not send is refused like a
// remote URL: status only, reason HeaderForwardInvalid.
func TestInvalidHeaderForwardWritesStatusOnly(t *testing.T) {
	f := newFixture(t, headerProxy(func(p *thv1.MCPRemoteProxy) { p.Spec.HeaderForward.AddPlaintextHeaders["Host"] = "evil.example.com" }))
	acts, err := f.sync("remote")
	if err != nil {
		t.Fatal(err)
	}
	wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
	assertRefused(t, f.get("remote"), thv1.ReasonHeaderForwardInvalid, "Host")
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonHeaderForwardInvalid) {
		t.Errorf("events %q", evs)
	}
}

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
		err := checkHeaderForward("remote", &c.hf)
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
