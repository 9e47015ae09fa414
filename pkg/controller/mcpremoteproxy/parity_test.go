package mcpremoteproxy

import (
	"fmt"
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
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// option dimensions of the parity table.
var (
	transports = []string{thv1.TransportStreamableHTTP, thv1.TransportSSE}
	overrides  = map[string]*thv1.ResourceOverrides{
		"none": nil,
		"deployment-only": {ProxyDeployment: &thv1.ProxyDeploymentOverrides{
			ResourceMetadataOverrides: thv1.ResourceMetadataOverrides{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"owner": "platform"}},
			Env:                       []thv1.NameValue{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
			ImagePullSecrets:          []corev1.LocalObjectReference{{Name: "regcred"}},
		}},
		"pod-template-and-service": {
			ProxyDeployment: &thv1.ProxyDeploymentOverrides{PodTemplateMetadataOverrides: &thv1.ResourceMetadataOverrides{
				Labels:      map[string]string{"sidecar.istio.io/inject": "false"},
				Annotations: map[string]string{"vault.hashicorp.com/agent-inject": "true"},
			}},
			ProxyService: &thv1.ResourceMetadataOverrides{Labels: map[string]string{"expose": "internal"}, Annotations: map[string]string{"lb": "nlb"}},
		},
		"conflicting-operator-keys": {
			ProxyDeployment: &thv1.ProxyDeploymentOverrides{
				ResourceMetadataOverrides: thv1.ResourceMetadataOverrides{Labels: map[string]string{naming.LabelApp: "hijack"}},
				PodTemplateMetadataOverrides: &thv1.ResourceMetadataOverrides{
					Labels:      map[string]string{naming.LabelInstance: "hijack"},
					Annotations: map[string]string{naming.AnnotationRunConfigChecksum: "user-value"},
				},
				Env: []thv1.NameValue{{Name: "HOME", Value: "/home/runner"}},
			},
			ProxyService: &thv1.ResourceMetadataOverrides{Labels: map[string]string{naming.LabelToolhive: "false"}},
		},
	}
	oidcKinds   = []string{"none", "inline", "kubernetesServiceAccount"}
	replicaSets = map[string]*int32{"nil": nil, "0": ptr.To[int32](0), "3": ptr.To[int32](3)}
	// telemetryByReplicas pairs each telemetry option with one replica
	// setting, which nothing telemetry touches depends on: every option
	// meets every other dimension without multiplying the table.
	telemetryByReplicas = map[string]string{"nil": "none", "0": "otel", "3": "prometheus"}
	serviceAccounts     = map[string]*string{"own": nil, "custom": ptr.To("remote-sa")}
	affinities          = []string{thv1.SessionAffinityClientIP, thv1.SessionAffinityNone}
	headerForwards      = map[string]*thv1.HeaderForwardConfig{
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
	// podTemplates pairs each podTemplateSpec option with one header
	// option: every pod-level and proxy-container field the template can
	// merge, a scheduling-only template, and none.
	podTemplateByHeaders = map[string]string{"none": "none", "plain": "scheduling", "plain-and-secret": "realistic"}
	// runtimeSets are audit and session storage: the RunConfig only, or
	// also the proxy container's env (the Redis password).
	runtimeSets = map[string]func(*thv1.MCPRemoteProxySpec){
		"none":  func(*thv1.MCPRemoteProxySpec) {},
		"audit": func(s *thv1.MCPRemoteProxySpec) { s.Audit = &thv1.AuditConfig{Enabled: true} },
		"memory-sessions": func(s *thv1.MCPRemoteProxySpec) {
			s.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderMemory}
		},
		"redis-password-audit": func(s *thv1.MCPRemoteProxySpec) {
			s.Audit = &thv1.AuditConfig{Enabled: true}
			s.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379", DB: 2,
				KeyPrefix: "rp:", PasswordRef: &thv1.SecretKeyRef{Name: "redis", Key: "password"}}
		},
	}
)

// TestBuildDriftParity is invariant 3: for every option combination, the
// built children fed back as live — after a JSON round trip and the API
// server's defaults — show no drift.
func TestBuildDriftParity(t *testing.T) {
	n := 0
	for _, tr := range transports {
		for ovName, ov := range overrides {
			for _, oidcKind := range oidcKinds {
				for repName, rep := range replicaSets {
					for saName, sa := range serviceAccounts {
						for _, aff := range affinities {
							for hfName, hf := range headerForwards {
								for rtName, rt := range runtimeSets {
									tel := telemetryByReplicas[repName]
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
										p.Spec.PodTemplateSpec = podTemplates[tpl]
										rt(&p.Spec)
									})
									// OIDC, tools and authorization (workloadtest.RefsFor).
									refs := workloadtest.RefsFor(testNS, oidcKind)
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
										telemetry = workloadtest.NewTelemetryConfig(testNS, "otel", tel, "idp-ca")
										p.Spec.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "otel"}
									}
									d, err := build(inputs{Proxy: p, OIDC: refs.OIDC, Tools: refs.Tools, Authz: refs.Authz, ExtAuth: extAuth, Telemetry: telemetry, AuthServer: refs.AuthServer, RunnerImage: "runner:test"})
									if err != nil {
										t.Fatalf("%s: build: %v", name, err)
									}
									assertNoDrift(t, name, d)
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

func assertNoDrift(t *testing.T, name string, d *childSet) {
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
		if m.GetLabels()[naming.LabelApp] != app || m.GetLabels()[naming.LabelToolhive] != "true" {
			t.Errorf("%s: %s labels %v", name, m.GetName(), m.GetLabels())
		}
	}
}

// TestDriftDetectsOwnedFields makes sure the comparators are not blind:
// each owned field changed on the live object is reported under its name.
func TestDriftDetectsOwnedFields(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.Replicas = ptr.To[int32](2)
		p.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp"}
		p.Spec.HeaderForward = headerForwards["plain-and-secret"]
	})
	d, err := build(inputs{Proxy: p, OIDC: newOIDCConfig("auth", true, true), RunnerImage: "runner:test"})
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
		{drift.FieldVolumes, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Volumes = d.Spec.Template.Spec.Volumes[:2] }},
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

// podTemplates are the podTemplateSpec options of the parity table, as a
// user writes them (raw JSON).
var podTemplates = map[string]*runtime.RawExtension{
	"none": nil,
	"scheduling": {Raw: []byte(`{"spec":{
		"nodeSelector":{"pool":"mcp"},
		"tolerations":[{"key":"dedicated","operator":"Equal","value":"mcp","effect":"NoSchedule"}]}}`)},
	"realistic": {Raw: []byte(realisticPodTemplate)},
}

// realisticPodTemplate sets every kind of field a podTemplateSpec merges
// into the proxy pod: template metadata, pod-level scheduling, security,
// pull secrets, priority and volumes, an init container and a sidecar,
// and on the toolhive container env (plain and downward API, with and
// without the apiVersion the server defaults), mounts, resources, a
// security context and a probe override.
const realisticPodTemplate = `{
  "metadata": {"labels": {"team": "payments"}, "annotations": {"prometheus.io/scrape": "true"}},
  "spec": {
    "nodeSelector": {"kubernetes.io/os": "linux", "pool": "mcp"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "mcp", "effect": "NoSchedule"},
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100,
      "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "mcpremoteproxy"}}}}]}},
    "securityContext": {"runAsUser": 2000, "fsGroup": 2000, "supplementalGroups": [3000]},
    "imagePullSecrets": [{"name": "corp-registry"}],
    "priorityClassName": "mcp-critical",
    "terminationGracePeriodSeconds": 45,
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
      "labelSelector": {"matchLabels": {"app": "mcpremoteproxy"}}}],
    "volumes": [
      {"name": "corp-ca", "secret": {"secretName": "corp-ca"}},
      {"name": "cache", "emptyDir": {"sizeLimit": "64Mi"}},
      {"name": "host-certs", "hostPath": {"path": "/etc/ssl/certs"}},
      {"name": "podinfo", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}
    ],
    "initContainers": [{"name": "wait", "image": "busybox:1.36", "command": ["sh", "-c", "true"]}],
    "containers": [
      {"name": "toolhive",
       "env": [{"name": "SSL_CERT_DIR", "value": "/etc/corp-ca"},
               {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
               {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
       "volumeMounts": [{"name": "corp-ca", "mountPath": "/etc/corp-ca", "readOnly": true},
                        {"name": "cache", "mountPath": "/var/cache/mcp"},
                        {"name": "host-certs", "mountPath": "/etc/host-certs", "readOnly": true},
                        {"name": "podinfo", "mountPath": "/etc/podinfo"}],
       "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
       "securityContext": {"runAsUser": 2000},
       "readinessProbe": {"initialDelaySeconds": 2}},
      {"name": "log-shipper", "image": "fluent/fluent-bit:3.0",
       "ports": [{"name": "metrics", "containerPort": 2020}],
       "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
       "livenessProbe": {"httpGet": {"path": "/", "port": 2020}},
       "volumeMounts": [{"name": "cache", "mountPath": "/cache", "readOnly": true}]}
    ]
  }
}`
