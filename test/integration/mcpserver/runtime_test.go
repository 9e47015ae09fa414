package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// runtimeServerObj is newServerObj with every field that tunes the
// runner, written as a ToolHive user writes it: defaults left to the
// server (volume readOnly, profile type, audit enabled, Redis db), a
// refill period the runner re-encodes.
func runtimeServerObj(ns, name string) *unstructured.Unstructured {
	u := newServerObj(ns, name)
	spec := u.Object["spec"].(map[string]any)
	spec["volumes"] = []any{map[string]any{"name": "data", "hostPath": "/srv/data", "mountPath": "/data"}}
	spec["permissionProfile"] = map[string]any{"type": "configmap", "name": "profiles", "key": "fetch.json"}
	spec["audit"] = map[string]any{}
	spec["maxRequestBodySize"] = int64(1 << 20)
	spec["backendReplicas"] = int64(0)
	spec["sessionStorage"] = map[string]any{"provider": "redis", "address": "redis:6379",
		"passwordRef": map[string]any{"name": "redis-auth", "key": "password"}}
	spec["rateLimiting"] = map[string]any{"shared": map[string]any{"maxTokens": int64(5), "refillPeriod": "90s"}}
	return u
}

// The runtime fields on a real API server: defaults applied by the schema
// build the same children on every sync, so many resyncs write nothing,
// and the Redis password is a secretKeyRef on the proxy only.
func TestRuntimeFieldsConvergeWithoutWrites(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: 100 * time.Millisecond})
	ctx := context.Background()
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, runtimeServerObj(ns, "fetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := waitConverged(t, env, ns, "fetch")
	if s.Spec.PermissionProfile == nil || s.Spec.Volumes[0].ReadOnly || s.Spec.Audit == nil || s.Spec.Audit.Enabled {
		t.Errorf("stored spec %+v", s.Spec)
	}
	settled(t)

	before := snapshot(t, env, ns, "fetch")
	writes := mcpWrites(t)
	syncs := counter(t, "hivekeeper_reconcile_total", map[string]string{"controller": mcpserver.Name})
	framework.Eventually(t, settle, func() (bool, error) {
		return counter(t, "hivekeeper_reconcile_total", map[string]string{"controller": mcpserver.Name}) >= syncs+10, nil
	}, "ten more syncs through informer resyncs")
	after := snapshot(t, env, ns, "fetch")
	for k, rv := range before {
		if after[k] != rv {
			t.Errorf("%s changed at steady state: resourceVersion %s -> %s", k, rv, after[k])
		}
	}
	if got := mcpWrites(t); got != writes {
		t.Errorf("hivekeeper_writes_total moved at steady state: %v -> %v", writes, got)
	}

	cm, _ := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, naming.RunConfigName("fetch"), metav1.GetOptions{})
	rc := cm.Data[schema.Key]
	for _, want := range []string{`"refillPeriod": "1m30s"`, `"rate_limit_namespace": "` + ns + `"`, `"backend_replicas": 0`,
		`"type": "ratelimit"`, `"/srv/data:/data"`} {
		if !strings.Contains(rc, want) {
			t.Errorf("RunConfig lacks %s:\n%s", want, rc)
		}
	}
	if strings.Contains(rc, "audit_config") || strings.Contains(rc, "redis-auth") || strings.Contains(rc, "fetch.json") {
		t.Errorf("RunConfig has audit (enabled defaults to false) or the password's Secret:\n%s", rc)
	}
	dep, _ := env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
	var wired bool
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		wired = wired || (e.Name == wiring.EnvSessionRedisPassword && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
			e.ValueFrom.SecretKeyRef.Name == "redis-auth")
	}
	if !wired {
		t.Errorf("no Redis password secretKeyRef: %+v", dep.Spec.Template.Spec.Containers[0].Env)
	}

	// A change of one of them is one rollout.
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Patch(ctx, "fetch", types.MergePatchType,
		[]byte(`{"spec":{"audit":{"enabled":true}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	dep2 := waitGeneration(t, env, ns, "fetch", 2)
	if dep2.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] {
		t.Error("enabling audit did not change the RunConfig checksum")
	}
	cm, _ = env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, naming.RunConfigName("fetch"), metav1.GetOptions{})
	if !strings.Contains(cm.Data[schema.Key], `"audit_config"`) {
		t.Errorf("RunConfig lacks audit_config:\n%s", cm.Data[schema.Key])
	}
	got, _ := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionUnsupportedFields); c != nil && strings.Contains(c.Message, "audit") {
		t.Errorf("UnsupportedFields names an implemented field: %s", c.Message)
	}
}

// The schema refuses what ToolHive's schema refuses, and what ToolHive's
// operator would fail on when it builds the RunConfig, with a message
// that names the rule.
func TestRuntimeFieldsSchema(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	redis := map[string]any{"provider": "redis", "address": "redis:6379"}
	bucket := map[string]any{"maxTokens": int64(1), "refillPeriod": "1m"}
	for name, tc := range map[string]struct {
		spec map[string]any
		want string // a fragment of the refusal; "" means accepted
	}{
		"rate-limit-needs-redis":   {map[string]any{"rateLimiting": map[string]any{"shared": bucket}}, "rateLimiting requires sessionStorage with provider 'redis'"},
		"rate-limit-memory":        {map[string]any{"sessionStorage": map[string]any{"provider": "memory"}, "rateLimiting": map[string]any{"shared": bucket}}, "provider 'redis'"},
		"per-user-needs-auth":      {map[string]any{"sessionStorage": redis, "rateLimiting": map[string]any{"perUser": bucket}}, "rateLimiting.perUser requires authentication"},
		"tool-per-user-needs-auth": {map[string]any{"sessionStorage": redis, "rateLimiting": map[string]any{"tools": []any{map[string]any{"name": "t", "perUser": bucket}}}}, "per-tool perUser"},
		"per-user-with-auth": {map[string]any{"sessionStorage": redis, "rateLimiting": map[string]any{"perUser": bucket},
			"oidcConfigRef": map[string]any{"name": "idp", "audience": "a"}}, ""},
		"rate-limit-empty":    {map[string]any{"sessionStorage": redis, "rateLimiting": map[string]any{}}, "at least one of shared, perUser, or tools"},
		"tool-without-bucket": {map[string]any{"sessionStorage": redis, "rateLimiting": map[string]any{"tools": []any{map[string]any{"name": "t"}}}}, "at least one of shared or perUser"},
		"refill-not-duration": {map[string]any{"sessionStorage": redis, "rateLimiting": map[string]any{"shared": map[string]any{"maxTokens": int64(1), "refillPeriod": "1 minute"}}}, "refillPeriod"},
		"zero-tokens":         {map[string]any{"sessionStorage": redis, "rateLimiting": map[string]any{"shared": map[string]any{"maxTokens": int64(0), "refillPeriod": "1m"}}}, "maxTokens"},
		"redis-needs-address": {map[string]any{"sessionStorage": map[string]any{"provider": "redis"}}, "address is required"},
		"provider-enum":       {map[string]any{"sessionStorage": map[string]any{"provider": "etcd"}}, "provider"},
		"volume-colon":        {map[string]any{"volumes": []any{map[string]any{"name": "v", "hostPath": "/a:b", "mountPath": "/b"}}}, "hostPath"},
		"volume-injection":    {map[string]any{"volumes": []any{map[string]any{"name": "v", "hostPath": "/a", "mountPath": "/b$(id)"}}}, "mountPath"},
		"volume-windows":      {map[string]any{"volumes": []any{map[string]any{"name": "v", "hostPath": "/a", "mountPath": `\b`}}}, "mountPath"},
		"builtin-unknown":     {map[string]any{"permissionProfile": map[string]any{"name": "root"}}, "a builtin permission profile is none or network"},
		"configmap-no-key":    {map[string]any{"permissionProfile": map[string]any{"type": "configmap", "name": "p"}}, "names its ConfigMap key"},
		"negative-body":       {map[string]any{"maxRequestBodySize": int64(-1)}, "maxRequestBodySize"},
		"negative-backends":   {map[string]any{"backendReplicas": int64(-1)}, "backendReplicas"},
		"accepted": {map[string]any{"permissionProfile": map[string]any{"name": "stdio"}, "sessionStorage": redis,
			"rateLimiting": map[string]any{"shared": map[string]any{"maxTokens": int64(1), "refillPeriod": "1.5h"}}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": thv1.SchemeGroupVersion.String(), "kind": thv1.KindMCPServer,
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec":     map[string]any{"image": "ghcr.io/example/fetch:1.0"},
			}}
			for k, v := range tc.spec {
				u.Object["spec"].(map[string]any)[k] = v
			}
			_, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want a refusal naming %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("refused with %v, want it to name %q", err, tc.want)
			}
		})
	}
}
