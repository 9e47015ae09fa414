package mcpserver

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// withEverything sets every field that tunes the runner.
func withEverything(s *thv1.MCPServer) {
	s.Spec.Transport = thv1.TransportStreamableHTTP
	s.Spec.Volumes = []thv1.Volume{
		{Name: "data", HostPath: "/srv/data", MountPath: "/data", ReadOnly: true},
		{Name: "cache", HostPath: "/var/cache", MountPath: "/cache"},
	}
	s.Spec.Audit = &thv1.AuditConfig{Enabled: true}
	s.Spec.MaxRequestBodySize = 1 << 20
	s.Spec.BackendReplicas = ptr.To[int32](2)
	s.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379", DB: 3,
		KeyPrefix: "mcp:", PasswordRef: &thv1.SecretKeyRef{Name: "redis-auth", Key: "password"}}
	s.Spec.RateLimiting = &thv1.RateLimitConfig{
		Shared: &thv1.RateLimitBucket{MaxTokens: 100, RefillPeriod: "60s"},
		Tools:  []thv1.ToolRateLimitConfig{{Name: "fetch", Shared: &thv1.RateLimitBucket{MaxTokens: 5, RefillPeriod: "90m"}}},
	}
}

// readRunConfig returns the RunConfig hivekeeper wrote, and its text.
func readRunConfig(t *testing.T, f *fixture, name string) (schema.RunConfig, string) {
	t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rc schema.RunConfig
	if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
		t.Fatal(err)
	}
	return rc, cm.Data[schema.Key]
}

// The runtime fields reach the RunConfig in ToolHive's encoding, and the
// Redis password reaches the proxy only as a secretKeyRef.
func TestRuntimeFieldsInRunConfigAndProxy(t *testing.T) {
	f := newFixture(t, newServer("fetch", withEverything))
	f.converge("fetch")
	rc, raw := readRunConfig(t, f, "fetch")
	want := schema.RunConfig{
		Volumes: []string{"/srv/data:/data:ro", "/var/cache:/cache"},
		PermissionProfile: &schema.PermissionProfile{Name: "network", Read: []string{"/srv/data:/data"}, Write: []string{"/var/cache:/cache"},
			Network: schema.DefaultPermissionProfile().Network},
		AuditConfig:        schema.DefaultAuditConfig(),
		MaxRequestBodySize: 1 << 20,
		ScalingConfig: &schema.ScalingConfig{BackendReplicas: ptr.To[int32](2),
			SessionRedis: &schema.SessionRedisConfig{Address: "redis:6379", DB: 3, KeyPrefix: "mcp:"}},
		RateLimitConfig: &schema.RateLimitConfig{
			Shared: &schema.RateLimitBucket{MaxTokens: 100, RefillPeriod: "1m0s"},
			Tools:  []schema.ToolRateLimitConfig{{Name: "fetch", Shared: &schema.RateLimitBucket{MaxTokens: 5, RefillPeriod: "1h30m0s"}}},
		},
		RateLimitNamespace: testNS,
	}
	got := schema.RunConfig{
		Volumes: rc.Volumes, PermissionProfile: rc.PermissionProfile,
		AuditConfig: rc.AuditConfig, MaxRequestBodySize: rc.MaxRequestBodySize, ScalingConfig: rc.ScalingConfig,
		RateLimitConfig: rc.RateLimitConfig, RateLimitNamespace: rc.RateLimitNamespace,
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("RunConfig\n got %s\nwant %s", g, w)
	}
	for _, leak := range []string{"redis-auth", "password", wiring.EnvSessionRedisPassword} {
		if strings.Contains(raw, leak) {
			t.Errorf("the RunConfig ConfigMap mentions %q:\n%s", leak, raw)
		}
	}

	dep, _ := f.kube.AppsV1().Deployments(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	c := dep.Spec.Template.Spec.Containers[0]
	var names []string
	var redis *corev1.EnvVar
	for i, e := range c.Env {
		names = append(names, e.Name)
		if e.Name == wiring.EnvSessionRedisPassword {
			redis = &c.Env[i]
		}
	}
	if redis == nil || redis.Value != "" || redis.ValueFrom == nil || redis.ValueFrom.SecretKeyRef == nil ||
		redis.ValueFrom.SecretKeyRef.Name != "redis-auth" || redis.ValueFrom.SecretKeyRef.Key != "password" {
		t.Fatalf("Redis password env %+v in %q", redis, names)
	}
	// After any override env, before the generation, as ToolHive orders it.
	if i := strings.Index(strings.Join(names, ","), wiring.EnvSessionRedisPassword+","+naming.EnvMCPServerGeneration); i < 0 {
		t.Errorf("env order %q", names)
	}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("a host path reached the proxy pod: %+v", v)
		}
	}
	got2, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if c := meta.FindStatusCondition(got2.Status.Conditions, thv1.ConditionUnsupportedFields); c != nil {
		t.Errorf("UnsupportedFields for implemented fields: %+v", c)
	}
}

// Turning the runtime fields on rolls the proxy exactly once: one
// ConfigMap write, one Deployment patch carrying the new checksum, env and
// volume, and nothing on the next syncs. Turning them off does the same.
func TestRuntimeFieldsRollTheProxyOnce(t *testing.T) {
	// withEverything's transport from the start: a transport change also
	// replaces the runner's binding (TestRunnerClusterRoleFollowsTheTransport).
	f := newFixture(t, newServer("fetch", func(s *thv1.MCPServer) { s.Spec.Transport = thv1.TransportStreamableHTTP }))
	f.converge("fetch")
	ctx := context.Background()
	dep, _ := f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	before := dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]

	for _, step := range []struct {
		name string
		mut  func(*thv1.MCPServer)
	}{
		{"on", withEverything},
		{"off", func(s *thv1.MCPServer) {
			s.Spec.Volumes, s.Spec.PermissionProfile, s.Spec.Audit, s.Spec.MaxRequestBodySize = nil, nil, nil, 0
			s.Spec.BackendReplicas, s.Spec.SessionStorage, s.Spec.RateLimiting = nil, nil, nil
		}},
	} {
		s, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
		step.mut(s)
		s.Generation++
		if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.refresh()
		acts, err := f.sync("fetch")
		if err != nil {
			t.Fatal(err)
		}
		assertActions(t, acts, "patch configmaps", "patch deployments", "patch mcpservers/status")
		f.applyServerBehaviour()
		f.refresh()
		for i := range 2 {
			if acts, err := f.sync("fetch"); err != nil || len(acts) != 0 {
				t.Fatalf("%s: sync %d after the change wrote: %v %s", step.name, i, err, describe(acts))
			}
		}
		dep, _ = f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
		after := dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
		if after == before {
			t.Errorf("%s: the RunConfig checksum did not change", step.name)
		}
		before = after
	}
	dep, _ = f.kube.AppsV1().Deployments(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == wiring.EnvSessionRedisPassword {
			t.Errorf("the Redis password env stayed after sessionStorage went")
		}
	}
}

// A new Secret key for the Redis password reaches the proxy through its
// env, in the one rollout the change makes; the RunConfig changes only by
// the generation it records.
func TestRedisPasswordRefChangeReachesTheProxyEnv(t *testing.T) {
	f := newFixture(t, newServer("fetch", withEverything))
	f.converge("fetch")
	ctx := context.Background()
	s, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
	s.Spec.SessionStorage.PasswordRef.Key = "rotated"
	s.Generation++
	if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	acts, err := f.sync("fetch")
	if err != nil {
		t.Fatal(err)
	}
	// The generation is in the RunConfig too, so the ConfigMap follows.
	assertActions(t, acts, "patch configmaps", "patch deployments", "patch mcpservers/status")
	if body := mustJSON(t, patchBody(t, acts[0])); strings.Contains(body, "rotated") {
		t.Errorf("the ConfigMap patch carries the Secret key: %s", body)
	}
	if body := mustJSON(t, patchBody(t, acts[1])); !strings.Contains(body, `"rotated"`) {
		t.Errorf("the Deployment patch does not carry the new key: %s", body)
	}
	f.applyServerBehaviour()
	f.refresh()
	if acts, err := f.sync("fetch"); err != nil || len(acts) != 0 {
		t.Fatalf("second sync wrote: %v %s", err, describe(acts))
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

// What the schema refuses, stored anyway (before the schema, or past
// it), is a condition and no child, never a retry or a half-built
// RunConfig the runner would refuse at start.
func TestRuntimeInvalidSpecIsAConditionNotARetry(t *testing.T) {
	redis := &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379"}
	for name, mut := range map[string]func(*thv1.MCPServer){
		"rate-limit-without-redis": func(s *thv1.MCPServer) {
			s.Spec.RateLimiting = &thv1.RateLimitConfig{Shared: &thv1.RateLimitBucket{MaxTokens: 1, RefillPeriod: "1m"}}
		},
		"rate-limit-memory-sessions": func(s *thv1.MCPServer) {
			s.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderMemory}
			s.Spec.RateLimiting = &thv1.RateLimitConfig{Shared: &thv1.RateLimitBucket{MaxTokens: 1, RefillPeriod: "1m"}}
		},
		"refill-not-a-duration": func(s *thv1.MCPServer) {
			s.Spec.SessionStorage = redis
			s.Spec.RateLimiting = &thv1.RateLimitConfig{Shared: &thv1.RateLimitBucket{MaxTokens: 1, RefillPeriod: "a minute"}}
		},
		"refill-zero": func(s *thv1.MCPServer) {
			s.Spec.SessionStorage = redis
			s.Spec.RateLimiting = &thv1.RateLimitConfig{Tools: []thv1.ToolRateLimitConfig{{Name: "x", PerUser: &thv1.RateLimitBucket{MaxTokens: 1, RefillPeriod: "0s"}}}}
		},
		"no-tokens": func(s *thv1.MCPServer) {
			s.Spec.SessionStorage = redis
			s.Spec.RateLimiting = &thv1.RateLimitConfig{Shared: &thv1.RateLimitBucket{MaxTokens: 0, RefillPeriod: "1m"}}
		},
		"volume-colon": func(s *thv1.MCPServer) {
			s.Spec.Volumes = []thv1.Volume{{Name: "v", HostPath: "/a:b", MountPath: "/b"}}
		},
		"volume-injection": func(s *thv1.MCPServer) {
			s.Spec.Volumes = []thv1.Volume{{Name: "v", HostPath: "/a", MountPath: "/b;rm"}}
		},
		"volume-empty": func(s *thv1.MCPServer) { s.Spec.Volumes = []thv1.Volume{{Name: "v", MountPath: "/b"}} },
		"volume-windows-target": func(s *thv1.MCPServer) {
			s.Spec.Volumes = []thv1.Volume{{Name: "v", HostPath: "/a", MountPath: `\b`}}
		},
		"negative-body-size": func(s *thv1.MCPServer) { s.Spec.MaxRequestBodySize = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, newServer("bad", mut))
			acts, err := f.sync("bad")
			if err != nil {
				t.Fatalf("invalid input must not be retried: %v", err)
			}
			assertActions(t, acts, "patch mcpservers/status")
			got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "bad", metav1.GetOptions{})
			c := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonNotReady || !strings.Contains(c.Message, "spec.") {
				t.Fatalf("Ready %+v", c)
			}
			if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonInvalidSpec+" spec.") {
				t.Fatalf("events %q, want one Warning %s", evs, thv1.ReasonInvalidSpec)
			}
			f.refresh()
			if acts, err := f.sync("bad"); err != nil || len(acts) != 0 {
				t.Fatalf("second sync: %v %s", err, describe(acts))
			}
		})
	}
}

// spec.permissionProfile changes nothing, as for ToolHive's operator from
// v0.63.0 on: the server is deployed with the default profile.
func TestPermissionProfileHasNoEffect(t *testing.T) {
	f := newFixture(t, newServer("fetch", func(s *thv1.MCPServer) {
		s.Spec.PermissionProfile = &thv1.PermissionProfileRef{Type: thv1.PermissionProfileTypeConfigMap, Name: "profiles", Key: "p.json"}
	}))
	f.converge("fetch")
	rc, raw := readRunConfig(t, f, "fetch")
	if !reflect.DeepEqual(rc.PermissionProfile, schema.DefaultPermissionProfile()) || strings.Contains(raw, "permission_profile_name_or_path") {
		t.Errorf("permission profile %+v in %s", rc.PermissionProfile, raw)
	}
}
