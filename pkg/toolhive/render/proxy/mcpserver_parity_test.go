package proxy

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// option dimensions of the parity table.
var (
	transports = []string{thv1.TransportStdio, thv1.TransportStreamableHTTP, thv1.TransportSSE}
	oidcKinds  = []string{"none", "inline", "kubernetesServiceAccount"}
	secretSets = map[string][]thv1.SecretRef{
		"none": nil,
		"two":  {{Name: "gh", Key: "token", TargetEnvName: "GITHUB_TOKEN"}, {Name: "api", Key: "API_KEY"}},
	}
	podTemplates = map[string]*runtime.RawExtension{
		"none": nil,
		"set":  {Raw: []byte(`{"spec":{"nodeSelector":{"pool":"mcp"},"containers":[{"name":"mcp","resources":{"limits":{"memory":"256Mi"}}}]}}`)},
	}
	replicaSets = map[string]*int32{"nil": nil, "0": ptr.To[int32](0), "3": ptr.To[int32](3)}
	// telemetryByReplicas pairs each telemetry option with one replica
	// setting, which nothing telemetry touches depends on: every option
	// meets every other dimension without multiplying the table.
	telemetryByReplicas = map[string]string{"nil": "none", "0": "otel", "3": "prometheus"}
	// runtimeSets are the fields that tune the runner: the RunConfig
	// only, or also the proxy pod (the Redis password env, the configmap
	// profile's volume).
	runtimeSets = map[string]func(*thv1.MCPServerSpec){
		"none": func(*thv1.MCPServerSpec) {},
		"builtin-profile-volumes": func(s *thv1.MCPServerSpec) {
			s.PermissionProfile = &thv1.PermissionProfileRef{Type: thv1.PermissionProfileTypeBuiltin, Name: "none"}
			s.Volumes = testVolumes
		},
		"configmap-profile-volumes": func(s *thv1.MCPServerSpec) {
			s.PermissionProfile = &thv1.PermissionProfileRef{Type: thv1.PermissionProfileTypeConfigMap, Name: "profiles", Key: "p.json"}
			s.Volumes = testVolumes
		},
		"audit-limits-backend": func(s *thv1.MCPServerSpec) {
			s.Audit = &thv1.AuditConfig{Enabled: true}
			s.MaxRequestBodySize = 1 << 20
			s.BackendReplicas = ptr.To[int32](0)
		},
		"redis-password": func(s *thv1.MCPServerSpec) {
			s.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379",
				PasswordRef: &thv1.SecretKeyRef{Name: "redis", Key: "password"}}
		},
		"redis-tls-ca": func(s *thv1.MCPServerSpec) {
			s.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6380",
				TLS: &thv1.RedisTLSConfig{CACertSecretRef: &thv1.SecretKeyRef{Name: "redis-ca", Key: "ca.pem"}}}
		},
		// With the default Redis of runtimeDefaultRedis.
		"memory-default-redis": func(s *thv1.MCPServerSpec) {
			s.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderMemory}
		},
		"everything": func(s *thv1.MCPServerSpec) {
			s.PermissionProfile = &thv1.PermissionProfileRef{Type: thv1.PermissionProfileTypeConfigMap, Name: "profiles", Key: "p.json"}
			s.Volumes = testVolumes
			s.Audit = &thv1.AuditConfig{Enabled: true}
			s.MaxRequestBodySize = 4096
			s.BackendReplicas = ptr.To[int32](2)
			s.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379", DB: 1,
				KeyPrefix: "p:", PasswordRef: &thv1.SecretKeyRef{Name: "redis", Key: "password"}}
			s.RateLimiting = &thv1.RateLimitConfig{Shared: &thv1.RateLimitBucket{MaxTokens: 10, RefillPeriod: "1m"},
				Tools: []thv1.ToolRateLimitConfig{{Name: "fetch", Shared: &thv1.RateLimitBucket{MaxTokens: 1, RefillPeriod: "30s"}}}}
		},
	}
	// runtimeDefaultRedis is the default Redis a runtime set is built
	// with (none for the others).
	runtimeDefaultRedis = map[string]*wiring.DefaultRedis{
		"memory-default-redis": {Addr: "redis.infra:6379", SecretName: "redis", SecretKey: "redis-password",
			TLS: &thv1.RedisTLSConfig{CACertSecretRef: &thv1.SecretKeyRef{Name: "redis-ca", Key: "ca.crt"}}},
	}
	// webhooksByOIDC pairs each webhook option with an OIDC kind rather
	// than multiplying the table.
	webhooksByOIDC = map[string]string{"none": "none", "inline": "full", "kubernetesServiceAccount": "insecure"}
	testVolumes    = []thv1.Volume{{Name: "data", HostPath: "/srv/data", MountPath: "/data", ReadOnly: true}, {Name: "cache", HostPath: "/var/cache", MountPath: "/cache"}}
)

// TestMCPServerBuildDriftParity is invariant 3: for every option combination, the
// built children fed back as live — after a JSON round trip and the API
// server's defaults — show no drift. A comparator that looks at a field the
// builder does not set, or at a server default, fails here.
func TestMCPServerBuildDriftParity(t *testing.T) {
	n := 0
	for _, tr := range transports {
		for ovName, ov := range toolhivetest.MCPServerOverrides {
			for _, oidcKind := range oidcKinds {
				for secName, secs := range secretSets {
					for ptName, pt := range podTemplates {
						for repName, rep := range replicaSets {
							for rtName, rt := range runtimeSets {
								tel := telemetryByReplicas[repName]
								name := fmt.Sprintf("%s/%s/%s/secrets-%s/pts-%s/replicas-%s/%s/telemetry-%s", tr, ovName, oidcKind, secName, ptName, repName, rtName, tel)
								n++
								s := newServer("srv", func(s *thv1.MCPServer) {
									s.Spec.Transport = tr
									s.Spec.ResourceOverrides = ov
									s.Spec.Secrets = secs
									s.Spec.PodTemplateSpec = pt
									s.Spec.Replicas = rep
									s.Spec.Env = []thv1.NameValue{{Name: "LOG_LEVEL", Value: "debug"}}
									s.Spec.Resources = thv1.ResourceRequirements{Limits: thv1.ResourceList{CPU: "1000m", Memory: "128Mi"}}
									rt(&s.Spec)
								})
								// OIDC, tools and authorization (toolhivetest.RefsFor).
								refs := toolhivetest.RefsFor(testNS, oidcKind)
								s.Spec.OIDCConfigRef, s.Spec.ToolConfigRef = refs.OIDCRef, refs.ToolRef
								s.Spec.AuthzConfigRef, s.Spec.AuthzConfig = refs.AuthzRef, refs.InlineAuthz
								s.Spec.AuthServerRef = refs.AuthServerRef
								// External auth: a token exchange with a client secret,
								// one with a header of its own and no secret, or none.
								extAuth := &thv1.MCPExternalAuthConfig{ObjectMeta: metav1.ObjectMeta{Name: "ext"}}
								switch oidcKind {
								case "none":
									extAuth.Spec = thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeTokenExchange,
										TokenExchange: &thv1.TokenExchangeConfig{TokenURL: "https://idp/token", Audience: "backend", ClientID: "c",
											ClientSecretRef: &thv1.SecretKeyRef{Name: "idp", Key: "secret"}, Scopes: []string{"read"}}}
								case "inline":
									extAuth.Spec = thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeTokenExchange,
										TokenExchange: &thv1.TokenExchangeConfig{TokenURL: "https://idp/token", Audience: "backend",
											ExternalTokenHeaderName: "X-Upstream-Token", SubjectTokenType: "jwt"}}
								default:
									extAuth.Spec = thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}
								}
								s.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "ext"}
								// Telemetry: its CA bundle ConfigMap is the inline
								// OIDC config's too, so two volumes name it.
								var telemetry *thv1.MCPTelemetryConfig
								if tel != "none" {
									telemetry = toolhivetest.NewTelemetryConfig(testNS, "otel", tel, "idp-ca")
									s.Spec.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "otel", ServiceName: "fetch-" + tel}
								}
								// Webhooks: every Secret kind mounted, a plain
								// http one, or none.
								var webhooks *thv1.MCPWebhookConfig
								if wh := webhooksByOIDC[oidcKind]; wh != "none" {
									webhooks = toolhivetest.NewWebhookConfig(testNS, "hooks", wh)
									s.Spec.WebhookConfigRef = &thv1.WebhookConfigReference{Name: "hooks"}
								}
								// Each release's output, the newest with its
								// usage-metrics variables and TLS listener port.
								rel, usage := releaseByTransport(tr)
								d, err := BuildMCPServer(s, Input{OIDC: refs.OIDC, Tools: refs.Tools, Authz: refs.Authz, ExtAuth: extAuth, Telemetry: telemetry,
									Webhooks: webhooks, AuthServer: refs.AuthServer, RunnerImage: "runner:test", DefaultRedis: runtimeDefaultRedis[rtName],
									Release: rel, UsageMetrics: usage})
								if err != nil {
									t.Fatalf("%s: build: %v", name, err)
								}
								assertMCPServerNoDrift(t, name, d)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

// releaseByTransport pairs each transport with a release written and its
// usage-metrics settings, so every release meets every other dimension
// without multiplying the table.
func releaseByTransport(tr string) (release.Release, wiring.UsageMetrics) {
	switch tr {
	case thv1.TransportStdio:
		return release.Releases[0], wiring.UsageMetrics{}
	case thv1.TransportSSE:
		return release.Newest(), wiring.UsageMetrics{SkipUpdateCheck: true, Disabled: true}
	}
	return release.Newest(), wiring.UsageMetrics{AnonymousID: "0b6f3c5e-7d0a-4c55-9a51-8d1f0e2b6c11"}
}

func assertMCPServerNoDrift(t *testing.T, name string, d *Output) {
	t.Helper()
	dep := roundTrip(d.Deployment)
	defaultDeployment(dep)
	svc := roundTrip(d.Service)
	defaultService(svc)
	checks := map[string][]string{
		"configmap":      drift.DiffConfigMap(d.RunConfig, roundTrip(d.RunConfig)),
		"runner-sa":      drift.DiffServiceAccount(d.RunnerServiceAccount, roundTrip(d.RunnerServiceAccount)),
		"rolebinding":    drift.DiffRoleBinding(d.RunnerRoleBinding, roundTrip(d.RunnerRoleBinding)),
		"deployment":     drift.DiffDeployment(d.Deployment, dep),
		"deployment-raw": drift.DiffDeployment(d.Deployment, d.Deployment),
		"service":        drift.DiffService(d.Service, svc),
	}
	if d.BackendServiceAccount != nil {
		checks["backend-sa"] = drift.DiffServiceAccount(d.BackendServiceAccount, roundTrip(d.BackendServiceAccount))
	}
	if d.AuthzConfigMap != nil {
		checks["authz-configmap"] = drift.DiffConfigMap(d.AuthzConfigMap, roundTrip(d.AuthzConfigMap))
	}
	for child, fields := range checks {
		if len(fields) != 0 {
			t.Errorf("%s: %s drifted right after build: %v", name, child, fields)
		}
	}
	if drift.DeploymentNeedsRecreate(d.Deployment, dep) || drift.RoleBindingNeedsRecreate(d.RunnerRoleBinding, roundTrip(d.RunnerRoleBinding)) {
		t.Errorf("%s: immutable field drift right after build", name)
	}
}

// TestMCPServerDriftDetectsOwnedFields makes sure the comparators are not blind: each
// owned field changed on the live object is reported under its name.
func TestMCPServerDriftDetectsOwnedFields(t *testing.T) {
	s := newServer("srv", func(s *thv1.MCPServer) { s.Spec.Replicas = ptr.To[int32](1) })
	d, err := BuildMCPServer(s, Input{RunnerImage: "runner:test"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field string
		edit  func(*appsv1.Deployment)
	}{
		{drift.FieldContainerImage, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "other" }},
		{drift.FieldContainerArgs, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = []string{"run"} }},
		{drift.FieldContainerEnv, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env = nil }},
		{drift.FieldVolumes, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Volumes = nil }},
		{drift.FieldVolumes, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Volumes[0].ConfigMap.DefaultMode = ptr.To[int32](0o600)
		}},
		{drift.FieldTemplateAnnotations, func(d *appsv1.Deployment) { delete(d.Spec.Template.Annotations, naming.AnnotationRunConfigChecksum) }},
		{drift.FieldTemplateLabels, func(d *appsv1.Deployment) { d.Spec.Template.Labels[naming.LabelApp] = "x" }},
		{drift.FieldReplicas, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }},
		{drift.FieldServiceAccountName, func(d *appsv1.Deployment) { d.Spec.Template.Spec.ServiceAccountName = "default" }},
		{drift.FieldContainerSecurity, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].SecurityContext = nil }},
		{drift.FieldContainerStartup, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].StartupProbe.FailureThreshold = 3 }},
		{drift.FieldContainerLiveness, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].LivenessProbe.TimeoutSeconds = 3 }},
		{drift.FieldContainerMissing, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "renamed" }},
	}
	for _, tc := range cases {
		live := d.Deployment.DeepCopy()
		tc.edit(live)
		got := drift.DiffDeployment(d.Deployment, live)
		found := false
		for _, f := range got {
			found = found || f == tc.field
		}
		if !found {
			t.Errorf("editing %s: drift %v does not name it", tc.field, got)
		}
	}
	// Replicas are hands off when the spec leaves them unset.
	s.Spec.Replicas = nil
	d, _ = BuildMCPServer(s, Input{RunnerImage: "runner:test"})
	live := d.Deployment.DeepCopy()
	live.Spec.Replicas = ptr.To[int32](7)
	if got := drift.DiffDeployment(d.Deployment, live); len(got) != 0 {
		t.Errorf("replicas changed by an HPA are drift with spec.replicas nil: %v", got)
	}

	rb := d.RunnerRoleBinding.DeepCopy()
	rb.Subjects = []rbacv1.Subject{{Kind: "User", Name: "eve"}}
	if got := drift.DiffRoleBinding(d.RunnerRoleBinding, rb); len(got) != 1 {
		t.Errorf("rolebinding subjects drift not detected: %v", got)
	}
	// A binding to the Role an older hivekeeper created is drift that
	// only deleting and recreating the binding can repair.
	rb = d.RunnerRoleBinding.DeepCopy()
	rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: rb.Name}
	if got := drift.DiffRoleBinding(d.RunnerRoleBinding, rb); !slices.Equal(got, []string{drift.FieldRoleRef}) || !drift.RoleBindingNeedsRecreate(d.RunnerRoleBinding, rb) {
		t.Errorf("rolebinding roleRef drift: %v, recreate %v", got, drift.RoleBindingNeedsRecreate(d.RunnerRoleBinding, rb))
	}
	svc := d.Service.DeepCopy()
	svc.Spec.Ports[0].Port = 9999
	if got := drift.DiffService(d.Service, svc); len(got) != 1 || got[0] != drift.FieldServicePorts {
		t.Errorf("service port drift not detected: %v", got)
	}
	cm := d.RunConfig.DeepCopy()
	cm.Data["extra"] = "x"
	if got := drift.DiffConfigMap(d.RunConfig, cm); len(got) != 1 || got[0] != drift.FieldData {
		t.Errorf("configmap extra key not detected: %v", got)
	}
}
