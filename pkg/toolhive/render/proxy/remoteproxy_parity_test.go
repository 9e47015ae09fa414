package proxy

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/drift/drifttest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// option dimensions of the parity table.
var (
	remoteTransports  = []string{thv1.TransportStreamableHTTP, thv1.TransportSSE}
	remoteOidcKinds   = []string{"none", "inline", "kubernetesServiceAccount"}
	remoteReplicaSets = map[string]*int32{"nil": nil, "0": ptr.To[int32](0), "3": ptr.To[int32](3)}
	// remoteTelemetryByReplicas pairs each telemetry option with one replica
	// setting, which nothing telemetry touches depends on: every option
	// meets every other dimension without multiplying the table.
	remoteTelemetryByReplicas = map[string]string{"nil": "none", "0": "otel", "3": "prometheus"}
	serviceAccounts           = map[string]*string{"own": nil, "custom": ptr.To("remote-sa")}
	affinities                = []string{thv1.SessionAffinityClientIP, thv1.SessionAffinityNone}
	headerForwards            = map[string]*thv1.HeaderForwardConfig{
		"none":  nil,
		"plain": {AddPlaintextHeaders: map[string]string{"X-Tenant-ID": "team-a", "X-Region": "eu"}},
		"plain-and-secret": {
			AddPlaintextHeaders: map[string]string{"X-Tenant-ID": "team-a"},
			AddHeadersFromSecret: []thv1.HeaderFromSecret{
				{HeaderName: "X-API-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "vendor", Key: "key"}},
				{HeaderName: "Authorization", ValueSecretRef: &thv1.SecretKeyRef{Name: "vendor", Key: "bearer"}},
			},
		},
	}
	// remotePodTemplates pairs each podTemplateSpec option with one header
	// option: every pod-level and proxy-container field the template can
	// merge, a scheduling-only template, and none.
	podTemplateByHeaders = map[string]string{"none": "none", "plain": "scheduling", "plain-and-secret": "realistic"}
	// remoteRuntimeSets are audit and session storage: the RunConfig only, or
	// also the proxy container's env (the Redis password).
	remoteRuntimeSets = map[string]func(*thv1.MCPRemoteProxySpec){
		"none":  func(*thv1.MCPRemoteProxySpec) {},
		"audit": func(s *thv1.MCPRemoteProxySpec) { s.Audit = &thv1.AuditConfig{Enabled: true} },
		"memory-sessions": func(s *thv1.MCPRemoteProxySpec) {
			s.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderMemory}
		},
		"redis-password-audit": func(s *thv1.MCPRemoteProxySpec) {
			s.Audit = &thv1.AuditConfig{Enabled: true}
			s.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379", DB: 2,
				KeyPrefix: "rp:", PasswordRef: &thv1.SecretKeyRef{Name: "redis", Key: "password"},
				TLS: &thv1.RedisTLSConfig{CACertSecretRef: &thv1.SecretKeyRef{Name: "redis-ca", Key: "ca.crt"}}}
		},
	}
)

// remoteDefaultRedis is the default Redis a runtime set is built with: a
// proxy without session storage falls back to it, one with memory
// sessions does not.
var remoteDefaultRedis = map[string]*wiring.DefaultRedis{
	"audit":           runtimeDefaultRedis["memory-default-redis"],
	"memory-sessions": runtimeDefaultRedis["memory-default-redis"],
}

// TestRemoteProxyBuildDriftParity is invariant 3: for every option combination, the
// built children fed back as live — after a JSON round trip and the API
// server's defaults — show no drift.
func TestRemoteProxyBuildDriftParity(t *testing.T) {
	n := 0
	for _, tr := range remoteTransports {
		for ovName, ov := range toolhivetest.RemoteProxyOverrides {
			for _, oidcKind := range remoteOidcKinds {
				for repName, rep := range remoteReplicaSets {
					for saName, sa := range serviceAccounts {
						for _, aff := range affinities {
							for hfName, hf := range headerForwards {
								for rtName, rt := range remoteRuntimeSets {
									tel := remoteTelemetryByReplicas[repName]
									tpl := podTemplateByHeaders[hfName]
									name := fmt.Sprintf("%s/%s/%s/replicas-%s/sa-%s/%s/headers-%s/%s/telemetry-%s/template-%s", tr, ovName, oidcKind, repName, saName, aff, hfName, rtName, tel, tpl)
									n++
									p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
										p.Spec.HeaderForward = hf
										p.Spec.Transport = tr
										p.Spec.ResourceOverrides = ov
										p.Spec.Replicas = rep
										p.Spec.ServiceAccount = sa
										p.Spec.SessionAffinity = aff
										p.Spec.TrustProxyHeaders = true
										p.Spec.EndpointPrefix = "/team-a"
										p.Spec.Resources = thv1.ResourceRequirements{Limits: thv1.ResourceList{CPU: "1000m", Memory: "128Mi"}}
										p.Spec.PodTemplateSpec = remotePodTemplates[tpl]
										rt(&p.Spec)
									})
									// OIDC, tools and authorization (toolhivetest.RefsFor).
									refs := toolhivetest.RefsFor(testNS, oidcKind)
									p.Spec.OIDCConfigRef, p.Spec.ToolConfigRef = refs.OIDCRef, refs.ToolRef
									p.Spec.AuthzConfigRef, p.Spec.AuthzConfig = refs.AuthzRef, refs.InlineAuthz
									p.Spec.AuthServerRef = refs.AuthServerRef
									// External auth: a bearer token (with and without
									// headers from Secrets: one secrets provider switch),
									// a token exchange with a client secret, or none.
									extAuth := &thv1.MCPExternalAuthConfig{ObjectMeta: metav1.ObjectMeta{Name: "ext"}}
									switch oidcKind {
									case "none":
										extAuth.Spec = thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeBearerToken,
											BearerToken: &thv1.BearerTokenConfig{TokenSecretRef: &thv1.SecretKeyRef{Name: "remote-token", Key: "token"}}}
									case "inline":
										extAuth.Spec = thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeTokenExchange,
											TokenExchange: &thv1.TokenExchangeConfig{TokenURL: "https://idp/token", Audience: "remote", ClientID: "c",
												ClientSecretRef: &thv1.SecretKeyRef{Name: "idp", Key: "secret"}}}
									default:
										extAuth.Spec = thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}
									}
									p.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "ext"}
									// Telemetry: its CA bundle ConfigMap is the inline
									// OIDC config's too, so two volumes name it.
									var telemetry *thv1.MCPTelemetryConfig
									if tel != "none" {
										telemetry = toolhivetest.NewTelemetryConfig(testNS, "otel", tel, "idp-ca")
										p.Spec.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "otel"}
									}
									rel, usage := releaseByTransport(tr)
									d, err := BuildRemoteProxy(p, Input{OIDC: refs.OIDC, Tools: refs.Tools, Authz: refs.Authz, ExtAuth: extAuth, Telemetry: telemetry, AuthServer: refs.AuthServer, RunnerImage: "runner:test",
										DefaultRedis: remoteDefaultRedis[rtName], Release: rel, UsageMetrics: usage})
									if err != nil {
										t.Fatalf("%s: build: %v", name, err)
									}
									assertRemoteProxyNoDrift(t, name, d)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

func assertRemoteProxyNoDrift(t *testing.T, name string, d *Output) {
	t.Helper()
	dep := drifttest.RoundTrip(d.Deployment)
	drifttest.DefaultDeployment(dep)
	svc := drifttest.RoundTrip(d.Service)
	drifttest.DefaultService(svc)
	checks := map[string][]string{
		"configmap":      drift.DiffConfigMap(d.RunConfig, drifttest.RoundTrip(d.RunConfig)),
		"deployment":     drift.DiffDeploymentWithPodTemplate(d.Deployment, dep),
		"deployment-raw": drift.DiffDeploymentWithPodTemplate(d.Deployment, d.Deployment),
		"service":        drift.DiffService(d.Service, svc),
	}
	if d.AuthzConfigMap != nil {
		checks["authz-configmap"] = drift.DiffConfigMap(d.AuthzConfigMap, drifttest.RoundTrip(d.AuthzConfigMap))
	}
	if d.RunnerServiceAccount != nil {
		checks["runner-sa"] = drift.DiffServiceAccount(d.RunnerServiceAccount, drifttest.RoundTrip(d.RunnerServiceAccount))
		checks["rolebinding"] = drift.DiffRoleBinding(d.RunnerRoleBinding, drifttest.RoundTrip(d.RunnerRoleBinding))
		if drift.RoleBindingNeedsRecreate(d.RunnerRoleBinding, drifttest.RoundTrip(d.RunnerRoleBinding)) {
			t.Errorf("%s: rolebinding needs recreation right after build", name)
		}
	}
	for child, fields := range checks {
		if len(fields) != 0 {
			t.Errorf("%s: %s drifted right after build: %v", name, child, fields)
		}
	}
	if drift.DeploymentNeedsRecreate(d.Deployment, dep) {
		t.Errorf("%s: immutable field drift right after build", name)
	}
	for _, obj := range childrenOf(d) {
		m := obj.(metav1.Object)
		if ref := metav1.GetControllerOf(m); ref == nil || ref.Kind != thv1.KindMCPRemoteProxy || ref.UID != "uid-remote" {
			t.Errorf("%s: %s has controller %+v", name, m.GetName(), ref)
		}
	}
	// The labels ToolHive's operator gives each child: the workload's on
	// the Deployment and Service, its own on the RunConfig, none on the
	// runner's account and binding.
	for _, m := range []metav1.Object{d.Deployment, d.Service} {
		if m.GetLabels()[naming.LabelApp] != naming.AppMCPRemoteProxy || m.GetLabels()[naming.LabelToolhive] != "true" {
			t.Errorf("%s: %s labels %v", name, m.GetName(), m.GetLabels())
		}
	}
	if !maps.Equal(d.RunConfig.Labels, naming.RunConfigLabels(thv1.KindMCPRemoteProxy, "remote")) {
		t.Errorf("%s: RunConfig labels %v", name, d.RunConfig.Labels)
	}
	if d.RunnerServiceAccount != nil && (len(d.RunnerServiceAccount.Labels) != 0 || len(d.RunnerRoleBinding.Labels) != 0) {
		t.Errorf("%s: runner account or binding labelled: %v %v", name, d.RunnerServiceAccount.Labels, d.RunnerRoleBinding.Labels)
	}
}

// TestRemoteProxyDriftDetectsOwnedFields makes sure the comparators are not blind:
// each owned field changed on the live object is reported under its name.
func TestRemoteProxyDriftDetectsOwnedFields(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.Replicas = ptr.To[int32](2)
		p.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp"}
		p.Spec.HeaderForward = headerForwards["plain-and-secret"]
	})
	d, err := BuildRemoteProxy(p, Input{OIDC: newOIDCConfig("auth", true, true), RunnerImage: "runner:test"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field string
		edit  func(*appsv1.Deployment)
	}{
		{drift.FieldContainerArgs, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Args = []string{"run", "https://evil.example.com"}
		}},
		{drift.FieldContainerImage, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "other" }},
		{drift.FieldTemplateAnnotations, func(d *appsv1.Deployment) { delete(d.Spec.Template.Annotations, naming.AnnotationRunConfigChecksum) }},
		{drift.FieldServiceAccountName, func(d *appsv1.Deployment) { d.Spec.Template.Spec.ServiceAccountName = "default" }},
		{drift.FieldReplicas, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }},
		// A header's value read from another Secret.
		{drift.FieldContainerEnv, func(d *appsv1.Deployment) {
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Name != wiring.EnvOIDCClientSecret {
					e.ValueFrom.SecretKeyRef.Name = "someone-elses"
					return
				}
			}
			panic("no header env to edit")
		}},
		// The secrets provider switch taken away.
		{drift.FieldContainerEnv, func(d *appsv1.Deployment) {
			c := &d.Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == wiring.EnvSecretsProvider })
		}},
		{drift.FieldVolumes, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Volumes = nil }},
	}
	for _, tc := range cases {
		live := d.Deployment.DeepCopy()
		tc.edit(live)
		found := false
		for _, f := range drift.DiffDeployment(d.Deployment, live) {
			found = found || f == tc.field
		}
		if !found {
			t.Errorf("editing %s is not reported", tc.field)
		}
	}
}

// remotePodTemplates are the podTemplateSpec options of the parity table, as a
// user writes them (raw JSON).
var remotePodTemplates = map[string]*runtime.RawExtension{
	"none": nil,
	"scheduling": {Raw: []byte(`{"spec":{
		"nodeSelector":{"pool":"mcp"},
		"tolerations":[{"key":"dedicated","operator":"Equal","value":"mcp","effect":"NoSchedule"}]}}`)},
	"realistic": {Raw: []byte(toolhivetest.RealisticProxyPodTemplate)},
}

// childrenOf returns the built children as a flat list.
func childrenOf(d *Output) []runtime.Object {
	out := []runtime.Object{d.RunConfig, d.Deployment, d.Service}
	if d.AuthzConfigMap != nil {
		out = append(out, d.AuthzConfigMap)
	}
	if d.RunnerServiceAccount != nil {
		out = append(out, d.RunnerServiceAccount, d.RunnerRoleBinding)
	}
	return out
}
