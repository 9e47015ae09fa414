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
	if got, want := strings.Join(names, ","), "TOOLHIVE_SECRETS_PROVIDER,TOOLHIVE_SECRET_HEADER_FORWARD_X_API_KEY_REMOTE,HTTP_PROXY,XDG_CONFIG_HOME,HOME,TOOLHIVE_RUNTIME,UNSTRUCTURED_LOGS,TOOLHIVE_SECRETS_PROVIDER"; got != want {
		// ToolHive's operator names the secrets provider twice: before the
		// header values, and again last, where the runner's required
		// variables go.
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
