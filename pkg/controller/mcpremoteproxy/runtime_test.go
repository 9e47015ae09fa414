package mcpremoteproxy

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

func withAuditAndRedis(p *thv1.MCPRemoteProxy) {
	p.Spec.Audit = &thv1.AuditConfig{Enabled: true}
	p.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379", DB: 1,
		KeyPrefix: "rp:", PasswordRef: &thv1.SecretKeyRef{Name: "redis-auth", Key: "password"}}
}

// Audit and Redis session storage reach the RunConfig as ToolHive's
// operator writes them; the password reaches the proxy only as a
// secretKeyRef after the override env. Turning them on and off rolls the
// proxy once each, and the next syncs write nothing.
func TestAuditAndSessionStorage(t *testing.T) {
	f := newFixture(t, newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.ResourceOverrides = toolhivetest.RemoteProxyOverrides["deployment-only"]
	}))
	f.converge("remote")
	ctx := context.Background()
	checksum := func() string {
		dep, err := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "remote", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
	}
	before := checksum()

	for _, step := range []struct {
		name string
		mut  func(*thv1.MCPRemoteProxy)
	}{
		{"on", withAuditAndRedis},
		{"off", func(p *thv1.MCPRemoteProxy) { p.Spec.Audit, p.Spec.SessionStorage = nil, nil }},
	} {
		f.update("remote", func(p *thv1.MCPRemoteProxy) { step.mut(p); p.Generation++ })
		acts, err := f.sync("remote")
		if err != nil {
			t.Fatal(err)
		}
		wt.AssertActions(t, acts, "patch configmaps", "patch deployments", "patch mcpremoteproxies/status")
		f.ApplyServerBehaviour()
		f.Refresh()
		if acts, err := f.sync("remote"); err != nil || len(acts) != 0 {
			t.Fatalf("%s: the next sync wrote: %v %s", step.name, err, wt.Describe(acts))
		}
		if after := checksum(); after == before {
			t.Errorf("%s: the RunConfig checksum did not change", step.name)
		} else {
			before = after
		}

		cm, _ := f.Kube.CoreV1().ConfigMaps(testNS).Get(ctx, naming.RunConfigName("remote"), metav1.GetOptions{})
		var rc schema.RunConfig
		if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
			t.Fatal(err)
		}
		dep, _ := f.Kube.AppsV1().Deployments(testNS).Get(ctx, "remote", metav1.GetOptions{})
		var names []string
		for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
			names = append(names, e.Name)
			if e.Name == wiring.EnvSessionRedisPassword && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
				e.ValueFrom.SecretKeyRef.Name != "redis-auth" || e.ValueFrom.SecretKeyRef.Key != "password") {
				t.Errorf("%s: Redis password env %+v", step.name, e)
			}
		}
		hasPassword := strings.Contains(strings.Join(names, ","), "HTTP_PROXY,"+wiring.EnvSessionRedisPassword)
		if step.name == "on" {
			wantRC := schema.RunConfig{AuditConfig: schema.DefaultAuditConfig(), ScalingConfig: &schema.ScalingConfig{
				SessionRedis: &schema.SessionRedisConfig{Address: "redis:6379", DB: 1, KeyPrefix: "rp:"}}}
			if got := (schema.RunConfig{AuditConfig: rc.AuditConfig, ScalingConfig: rc.ScalingConfig}); !reflect.DeepEqual(got, wantRC) {
				t.Errorf("RunConfig audit %+v scaling %+v", rc.AuditConfig, rc.ScalingConfig)
			}
			if strings.Contains(cm.Data[schema.Key], "redis-auth") {
				t.Errorf("the RunConfig names the password's Secret:\n%s", cm.Data[schema.Key])
			}
			if !hasPassword {
				t.Errorf("env %q: want the Redis password right after the override env", names)
			}
		} else if rc.AuditConfig != nil || rc.ScalingConfig != nil || strings.Contains(strings.Join(names, ","), wiring.EnvSessionRedisPassword) {
			t.Errorf("off: audit %+v scaling %+v env %q", rc.AuditConfig, rc.ScalingConfig, names)
		}
		if c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionUnsupportedFields); c != nil {
			t.Errorf("%s: UnsupportedFields %+v", step.name, c)
		}
	}
}
