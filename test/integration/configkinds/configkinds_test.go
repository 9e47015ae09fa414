// Package configkinds tests what every config kind a workload references
// shares, against a real API server, kind by kind: a change of a config
// with 100 referrers rolls exactly those referrers, with exactly three
// writes each and one on the config.
package configkinds

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpcompositetooldefinition"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// configKind is one config kind: its resource, a valid spec, the change
// the test makes to it, and the MCPServer field that references it.
type configKind struct {
	kind, resource string
	spec           map[string]any
	change         string // a merge patch of the spec
	refField       string
	ref            func(name string) map[string]any
	// name names the subtest when the kind is referenced another way
	// (default: the kind); serverSpec and objects are what such a
	// reference needs besides it (fields of the server, other configs).
	name       string
	serverSpec map[string]any
	objects    []map[string]any
}

var kinds = []configKind{
	{
		kind: thv1.KindMCPOIDCConfig, resource: "mcpoidcconfigs",
		spec:     map[string]any{"type": "inline", "inline": map[string]any{"issuer": "https://idp.example.com"}},
		change:   `{"spec":{"inline":{"issuer":"https://idp2.example.com"}}}`,
		refField: "oidcConfigRef", ref: func(n string) map[string]any { return map[string]any{"name": n, "audience": "mcp"} },
	},
	{
		kind: thv1.KindMCPToolConfig, resource: "mcptoolconfigs",
		spec:     map[string]any{"toolsFilter": []any{"fetch"}},
		change:   `{"spec":{"toolsFilter":["fetch","search"]}}`,
		refField: "toolConfigRef", ref: func(n string) map[string]any { return map[string]any{"name": n} },
	},
	{
		kind: thv1.KindMCPAuthzConfig, resource: "mcpauthzconfigs",
		spec: map[string]any{"type": "cedarv1", "config": map[string]any{
			"policies": []any{`permit(principal, action == Action::"call_tool", resource == Tool::"fetch");`}}},
		change:   `{"spec":{"config":{"policies":["permit(principal, action == Action::\"call_tool\", resource);"]}}}`,
		refField: "authzConfigRef", ref: func(n string) map[string]any { return map[string]any{"name": n} },
	},
	{
		kind: thv1.KindMCPExternalAuthConfig, resource: "mcpexternalauthconfigs",
		spec: map[string]any{"type": "tokenExchange", "tokenExchange": map[string]any{
			"tokenUrl": "https://idp.example.com/token", "audience": "backend",
			"clientId": "proxy", "clientSecretRef": map[string]any{"name": "idp", "key": "secret"}}},
		change:   `{"spec":{"tokenExchange":{"audience":"backend-v2"}}}`,
		refField: "externalAuthConfigRef", ref: func(n string) map[string]any { return map[string]any{"name": n} },
	},
	{
		// The same kind through spec.authServerRef: an embedded
		// authorization server, which needs an OIDC reference whose
		// audience is its resource URL.
		name: "authServerRef", kind: thv1.KindMCPExternalAuthConfig, resource: "mcpexternalauthconfigs",
		spec: map[string]any{"type": "embeddedAuthServer", "embeddedAuthServer": map[string]any{
			"issuer": "https://auth.example.com", "upstreamProviders": []any{map[string]any{"name": "idp", "type": "oidc",
				"oidcConfig": map[string]any{"issuerUrl": "https://idp.example.com", "clientId": "mcp"}}}}},
		change:   `{"spec":{"embeddedAuthServer":{"issuer":"https://auth2.example.com"}}}`,
		refField: "authServerRef", ref: func(n string) map[string]any {
			return map[string]any{"kind": thv1.KindMCPExternalAuthConfig, "name": n}
		},
		serverSpec: map[string]any{"oidcConfigRef": map[string]any{"name": "issuer",
			"audience": "https://mcp.example.com", "resourceUrl": "https://mcp.example.com"}},
		objects: []map[string]any{{"apiVersion": thv1.SchemeGroupVersion.String(), "kind": thv1.KindMCPOIDCConfig,
			"metadata": map[string]any{"name": "issuer"}, "spec": map[string]any{"type": "inline", "inline": map[string]any{"issuer": "https://auth.example.com"}}}},
	},
	{
		kind: thv1.KindMCPTelemetryConfig, resource: "mcptelemetryconfigs",
		spec: map[string]any{"openTelemetry": map[string]any{"enabled": true, "endpoint": "collector.monitoring:4318",
			"tracing": map[string]any{"enabled": true, "samplingRate": "0.1"}}},
		change:   `{"spec":{"openTelemetry":{"tracing":{"samplingRate":"0.5"}}}}`,
		refField: "telemetryConfigRef", ref: func(n string) map[string]any { return map[string]any{"name": n} },
	},
	{
		kind: thv1.KindMCPWebhookConfig, resource: "mcpwebhookconfigs",
		spec: map[string]any{"validating": []any{map[string]any{"name": "policy", "url": "https://policy.webhooks.svc/validate",
			"hmacSecretRef": map[string]any{"name": "webhook-hmac", "key": "key"}}}},
		change:   `{"spec":{"validating":[{"name":"policy","url":"https://policy.webhooks.svc/validate","timeout":"5s"}]}}`,
		refField: "webhookConfigRef", ref: func(n string) map[string]any { return map[string]any{"name": n} },
	},
}

const referrers = 100

// TestConfigChangeWithHundredReferrers: per kind, 100 MCPServers reference
// one config and 10 others reference another. Changing the first config
// rolls exactly its 100 referrers' Deployments, and costs exactly 301
// writes: per referrer its RunConfig ConfigMap, its Deployment and its
// status (the config hash), and the config's own status. The time is
// logged, not asserted.
func TestConfigChangeWithHundredReferrers(t *testing.T) {
	env := framework.Get(t)
	for _, k := range kinds {
		t.Run(cmp.Or(k.name, k.kind), func(t *testing.T) {
			ns := env.Namespace(t)
			ctx := context.Background()
			env.StartControllers(t, app.Options{Namespaces: []string{ns}, Workers: 4})
			for _, o := range k.objects {
				obj := &unstructured.Unstructured{Object: o}
				res := env.Dynamic.Resource(thv1.SchemeGroupVersion.WithResource(strings.ToLower(obj.GetKind()) + "s")).Namespace(ns)
				if _, err := res.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			configs := env.Dynamic.Resource(thv1.SchemeGroupVersion.WithResource(k.resource)).Namespace(ns)
			for _, name := range []string{"shared", "other"} {
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": thv1.SchemeGroupVersion.String(), "kind": k.kind,
					"metadata": map[string]any{"name": name}, "spec": k.spec,
				}}
				if _, err := configs.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			servers := env.Dynamic.Resource(thv1.SchemeGroupVersion.WithResource("mcpservers")).Namespace(ns)
			for i := range referrers + 10 {
				cfg := "shared"
				if i >= referrers {
					cfg = "other"
				}
				spec := map[string]any{"image": "ghcr.io/example/mcp:1", k.refField: k.ref(cfg)}
				maps.Copy(spec, k.serverSpec)
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": thv1.SchemeGroupVersion.String(), "kind": thv1.KindMCPServer,
					"metadata": map[string]any{"name": fmt.Sprintf("s-%03d", i)},
					"spec":     spec,
				}}
				if _, err := servers.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			configController := strings.ToLower(k.kind)
			delta, took := rollReferrers(t, env, ns, naming.AnnotationRunConfigChecksum, "s-", func() {
				if _, err := configs.Patch(ctx, "shared", types.MergePatchType, []byte(k.change), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			})
			want := map[string]float64{
				mcpserver.Name + " configmaps patch success":                  referrers,
				mcpserver.Name + " deployments patch success":                 referrers,
				mcpserver.Name + " mcpservers/status patch success":           referrers,
				configController + " " + k.resource + "/status patch success": 1,
			}
			if !maps.Equal(delta, want) {
				t.Errorf("writes for the change = %v, want %v", delta, want)
			}
			t.Logf("%s: a change with %d referrers rolled them in %v", k.kind, referrers, took.Round(time.Millisecond))
		})
	}
}

// TestCompositeToolChangeWithHundredReferrers is the same proof for
// VirtualMCPCompositeToolDefinition, whose referrers are VirtualMCPServers
// (spec.config.compositeToolRefs): changing the definition 100 of them
// name rolls exactly those, at two writes each (the vMCP ConfigMap, whose
// annotation carries the definitions' hashes, and the Deployment; the
// server's status records no hash of it) and one on the definition.
func TestCompositeToolChangeWithHundredReferrers(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, Workers: 4})
	th := env.Toolhive.ToolhiveV1beta1()
	if _, err := th.MCPGroups(ns).Create(ctx, &thv1.MCPGroup{ObjectMeta: metav1.ObjectMeta{Name: "g"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := th.MCPServers(ns).Create(ctx, &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: "backend"},
		Spec: thv1.MCPServerSpec{Image: "ghcr.io/example/mcp:1", GroupRef: &thv1.GroupRef{Name: "g"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"shared", "other"} {
		def := toolhivetest.NewCompositeTool(ns, name, "")
		def.ResourceVersion, def.UID, def.Status = "", "", thv1.VirtualMCPCompositeToolDefinitionStatus{}
		if _, err := th.VirtualMCPCompositeToolDefinitions(ns).Create(ctx, def, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range referrers + 10 {
		def := "shared"
		if i >= referrers {
			def = "other"
		}
		v := &thv1.VirtualMCPServer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("v-%03d", i)},
			Spec: thv1.VirtualMCPServerSpec{IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous}, GroupRef: thv1.GroupRef{Name: "g"},
				Config: &thv1.VirtualMCPConfig{CompositeToolRefs: []thv1.VMCPCompositeToolRef{{Name: def}}}}}
		if _, err := th.VirtualMCPServers(ns).Create(ctx, v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	delta, took := rollReferrers(t, env, ns, naming.AnnotationRunConfigChecksum, "v-", func() {
		if _, err := th.VirtualMCPCompositeToolDefinitions(ns).Patch(ctx, "shared", types.MergePatchType,
			[]byte(`{"spec":{"timeout":"2m"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	want := map[string]float64{
		virtualmcpserver.Name + " configmaps patch success":                                                 referrers,
		virtualmcpserver.Name + " deployments patch success":                                                referrers,
		virtualmcpcompositetooldefinition.Name + " virtualmcpcompositetooldefinitions/status patch success": 1,
	}
	if !maps.Equal(delta, want) {
		t.Errorf("writes for the change = %v, want %v", delta, want)
	}
	t.Logf("a composite tool change with %d referrers rolled them in %v", referrers, took.Round(time.Millisecond))
}

// rollReferrers waits for the referrers+10 Deployments of ns (their pod
// templates carrying the checksum annotation), lets every controller
// settle, makes change, and waits until the referrers (named prefix000
// on) have rolled. It fails when one of the last ten, which reference
// another config, rolled, and returns every controller's writes between
// the two quiet points and how long the roll took.
func rollReferrers(t *testing.T, env *framework.Env, ns, annotation, prefix string, change func()) (map[string]float64, time.Duration) {
	t.Helper()
	ctx := context.Background()
	checksums := func() map[string]string {
		deps, err := env.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, d := range deps.Items {
			// The referrers only: the group's MCPServer carries a checksum
			// under the same key as a vMCP.
			if sum := d.Spec.Template.Annotations[annotation]; sum != "" && strings.HasPrefix(d.Name, prefix) {
				out[d.Name] = sum
			}
		}
		return out
	}
	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		return len(checksums()) == referrers+10, nil
	}, "%d Deployments", referrers+10)
	// Every controller's writes count: the change must cost nothing
	// beyond the referrers and the config.
	var writers []string
	for _, d := range app.Controllers() {
		writers = append(writers, d.Name)
	}
	before := workloadtest.Quiesce(t, 2*time.Second, 2*time.Minute, writers...)
	old := checksums()

	start := time.Now()
	change()
	framework.Eventually(t, time.Minute, func() (bool, error) {
		rolled := 0
		for name, sum := range checksums() {
			if sum != old[name] {
				rolled++
			}
		}
		return rolled >= referrers, nil
	}, "the referrers to roll")
	took := time.Since(start)
	delta := workloadtest.WritesBetween(before, workloadtest.Quiesce(t, 2*time.Second, time.Minute, writers...))
	now := checksums()
	for i := referrers; i < referrers+10; i++ {
		if name := fmt.Sprintf("%s%03d", prefix, i); now[name] != old[name] {
			t.Errorf("%s references the other config and rolled", name)
		}
	}
	return delta, took
}
