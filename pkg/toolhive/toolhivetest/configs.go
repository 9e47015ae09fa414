package toolhivetest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// Now is the fixed time of the fixtures' clocks.
var Now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// NewOIDCConfig returns an MCPOIDCConfig with its status as the
// MCPOIDCConfig controller would have written it. An inline config has a
// client secret and a CA bundle ConfigMap named caBundle (none when empty).
func NewOIDCConfig(namespace, name string, inline bool, caBundle string, valid bool) *thv1.MCPOIDCConfig {
	cfg := &thv1.MCPOIDCConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPOIDCConfig},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("oidc-" + name),
			Generation: 1, ResourceVersion: "1"},
	}
	if inline {
		in := &thv1.InlineOIDCConfig{
			Issuer: "https://idp.example.com", JWKSURL: "https://idp.example.com/jwks", ClientID: "hive",
			ClientSecretRef: &thv1.SecretKeyRef{Name: "idp", Key: "secret"},
		}
		if caBundle != "" {
			in.CABundleRef = &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: caBundle, Key: "ca.crt"}}
		}
		cfg.Spec = thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeInline, Inline: in}
	} else {
		cfg.Spec = thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeKubernetesServiceAccount,
			KubernetesServiceAccount: &thv1.KubernetesServiceAccountOIDCConfig{Issuer: "https://kubernetes.default.svc"}}
	}
	status := metav1.ConditionTrue
	if !valid {
		status = metav1.ConditionFalse
	}
	cfg.Status = thv1.ConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
		Type: thv1.ConditionValid, Status: status, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
	}}}
	return cfg
}

// NewTelemetryConfig returns a valid MCPTelemetryConfig with its status as
// its controller would have written it, for one of the telemetry options
// every proxy kind is tested with: "otel" (OTLP tracing and metrics with
// plain and sensitive headers, resource attributes and a CA bundle
// ConfigMap named caBundle) or "prometheus" (scraping only).
func NewTelemetryConfig(namespace, name, option, caBundle string) *thv1.MCPTelemetryConfig {
	cfg := &thv1.MCPTelemetryConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPTelemetryConfig},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("telemetry-" + name),
			Generation: 1, ResourceVersion: "1"},
		Status: thv1.ConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
		}}},
	}
	switch option {
	case "otel":
		cfg.Spec.OpenTelemetry = &thv1.TelemetryOTelConfig{
			Enabled: true, Endpoint: "https://collector.monitoring:4318",
			Headers: map[string]string{"X-Tenant": "team-a"},
			SensitiveHeaders: []thv1.SensitiveHeader{
				{Name: "Authorization", SecretKeyRef: thv1.SecretKeyRef{Name: "otel-auth", Key: "token"}},
				{Name: "X-API-Key", SecretKeyRef: thv1.SecretKeyRef{Name: "otel-auth", Key: "key"}},
			},
			ResourceAttributes:  map[string]string{"deployment.environment": "test"},
			Tracing:             &thv1.OpenTelemetryTracingConfig{Enabled: true, SamplingRate: "0.25"},
			Metrics:             &thv1.OpenTelemetryMetricsConfig{Enabled: true},
			UseLegacyAttributes: true,
			CABundleRef:         &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: caBundle}},
		}
	case "prometheus":
		cfg.Spec.Prometheus = &thv1.PrometheusConfig{Enabled: true}
	}
	return cfg
}

// NewWebhookConfig returns a valid MCPWebhookConfig with its status as its
// controller would have written it, for one of the webhook options the
// MCPServer is tested with: "full" (a validating webhook with an HMAC key,
// a CA bundle and a client certificate, timeout 5s, failing open, and a
// mutating webhook with the same HMAC key) or "insecure" (one validating
// webhook over plain http with every default).
func NewWebhookConfig(namespace, name, option string) *thv1.MCPWebhookConfig {
	cfg := &thv1.MCPWebhookConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPWebhookConfig},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("webhook-" + name),
			Generation: 1, ResourceVersion: "1"},
		Status: thv1.ConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
		}}},
	}
	hmac := &thv1.SecretKeyRef{Name: "webhook-hmac", Key: "key"}
	switch option {
	case "full":
		timeout := "5s"
		cfg.Spec.Validating = []thv1.WebhookSpec{{
			Name: "policy", URL: "https://policy.webhooks.svc/validate", Timeout: &timeout,
			FailurePolicy: thv1.WebhookFailurePolicyIgnore, HMACSecretRef: hmac,
			TLSConfig: &thv1.WebhookTLSConfig{
				CASecretRef:         &thv1.SecretKeyRef{Name: "webhook-tls", Key: "ca.crt"},
				ClientCertSecretRef: &thv1.SecretKeyRef{Name: "webhook-tls", Key: "tls.crt"},
				ClientKeySecretRef:  &thv1.SecretKeyRef{Name: "webhook-tls", Key: "tls.key"},
			},
		}}
		cfg.Spec.Mutating = []thv1.WebhookSpec{{
			Name: "redact", URL: "https://redact.webhooks.svc/mutate", FailurePolicy: thv1.WebhookFailurePolicyFail, HMACSecretRef: hmac,
		}}
	case "insecure":
		cfg.Spec.Validating = []thv1.WebhookSpec{{
			Name: "audit", URL: "http://audit.webhooks.svc:8080/validate",
			TLSConfig: &thv1.WebhookTLSConfig{InsecureSkipVerify: true},
		}}
	}
	return cfg
}

// NewCompositeTool returns a valid VirtualMCPCompositeToolDefinition (one
// tool step) with its status as its controller would have written it.
func NewCompositeTool(namespace, name, hash string) *thv1.VirtualMCPCompositeToolDefinition {
	return &thv1.VirtualMCPCompositeToolDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindVirtualMCPCompositeToolDefinition},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("ctd-" + name),
			Generation: 1, ResourceVersion: "1"},
		Spec: thv1.CompositeToolSpec{Name: name, Description: "test workflow",
			Steps: []thv1.WorkflowStep{{ID: "one", Tool: "backend.echo"}}},
		Status: thv1.VirtualMCPCompositeToolDefinitionStatus{
			ConfigStatus: thv1.ConfigStatus{ConfigHash: hash, Conditions: []metav1.Condition{{
				Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
			}}},
			ValidationStatus: thv1.ValidationStatusValid,
		},
	}
}

// NewGroup returns an MCPGroup.
func NewGroup(namespace, name string) *thv1.MCPGroup {
	return &thv1.MCPGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPGroup},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("group-" + name), ResourceVersion: "1"},
		// As its controller leaves it.
		Status: thv1.MCPGroupStatus{Phase: thv1.MCPGroupPhaseReady},
	}
}

// ManagedServiceAccount is a ServiceAccount as hivekeeper creates it for a
// workload of kind ownerKind named owner: labelled toolhive=true and
// controlled by that workload.
func ManagedServiceAccount(namespace, name, ownerKind, owner string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: namespace, UID: k8stypes.UID("sa-" + name),
		Labels: map[string]string{"toolhive": "true", "toolhive-name": owner},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: thv1.SchemeGroupVersion.String(), Kind: ownerKind, Name: owner,
			UID: k8stypes.UID("uid-" + owner), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}}
}

// NewMCPServer returns a minimal valid MCPServer with the finalizer
// already present and the API server's defaults applied; mut edits it.
func NewMCPServer(namespace, name string, mut ...func(*thv1.MCPServer)) *thv1.MCPServer {
	s := &thv1.MCPServer{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPServer},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: k8stypes.UID("uid-" + name), Generation: 1,
			ResourceVersion: "1", Finalizers: []string{thv1.MCPServerFinalizer},
		},
		Spec: thv1.MCPServerSpec{
			Image: "ghcr.io/example/fetch:1.0", Transport: thv1.TransportStdio,
			ProxyMode: thv1.TransportStreamableHTTP, ProxyPort: 8080, SessionAffinity: thv1.SessionAffinityClientIP,
		},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

// NewRemoteProxy returns a minimal valid MCPRemoteProxy with the API
// server's defaults applied; mut edits it.
func NewRemoteProxy(namespace, name string, mut ...func(*thv1.MCPRemoteProxy)) *thv1.MCPRemoteProxy {
	p := &thv1.MCPRemoteProxy{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPRemoteProxy},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: k8stypes.UID("uid-" + name), Generation: 1, ResourceVersion: "1",
		},
		Spec: thv1.MCPRemoteProxySpec{
			RemoteURL: "https://mcp.example.com/mcp", Transport: thv1.TransportStreamableHTTP,
			ProxyPort: 8080, SessionAffinity: thv1.SessionAffinityClientIP,
		},
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

// MCPServerOverrides are the resourceOverrides options an MCPServer is
// tested with, by name.
var MCPServerOverrides = map[string]*thv1.ResourceOverrides{
	"none": nil,
	"deployment-only": {ProxyDeployment: &thv1.ProxyDeploymentOverrides{
		ResourceMetadataOverrides: thv1.ResourceMetadataOverrides{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"owner": "platform"}},
		Env:                       []thv1.NameValue{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}},
		ImagePullSecrets:          []corev1.LocalObjectReference{{Name: "regcred"}},
	}},
	"pod-template-only": {ProxyDeployment: &thv1.ProxyDeploymentOverrides{
		PodTemplateMetadataOverrides: &thv1.ResourceMetadataOverrides{
			Labels:      map[string]string{"sidecar.istio.io/inject": "false"},
			Annotations: map[string]string{"vault.hashicorp.com/agent-inject": "true"},
		},
	}},
	"both": {
		ProxyDeployment: &thv1.ProxyDeploymentOverrides{
			ResourceMetadataOverrides:    thv1.ResourceMetadataOverrides{Annotations: map[string]string{"owner": "platform"}},
			PodTemplateMetadataOverrides: &thv1.ResourceMetadataOverrides{Annotations: map[string]string{"vault.hashicorp.com/role": "mcp"}},
		},
		ProxyService: &thv1.ResourceMetadataOverrides{Labels: map[string]string{"expose": "internal"}, Annotations: map[string]string{"lb": "nlb"}},
	},
	"conflicting-operator-keys": {
		ProxyDeployment: &thv1.ProxyDeploymentOverrides{
			ResourceMetadataOverrides: thv1.ResourceMetadataOverrides{Labels: map[string]string{naming.LabelApp: "hijack"}},
			PodTemplateMetadataOverrides: &thv1.ResourceMetadataOverrides{
				Labels:      map[string]string{naming.LabelInstance: "hijack"},
				Annotations: map[string]string{naming.AnnotationRunConfigChecksum: "user-value", naming.AnnotationMCPServerGeneration: "99"},
			},
			Env: []thv1.NameValue{{Name: "HOME", Value: "/home/runner"}},
		},
		ProxyService: &thv1.ResourceMetadataOverrides{Labels: map[string]string{naming.LabelToolhive: "false"}},
	},
}

// RemoteProxyOverrides are the resourceOverrides options an
// MCPRemoteProxy is tested with, by name.
var RemoteProxyOverrides = map[string]*thv1.ResourceOverrides{
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

// RealisticProxyPodTemplate sets every kind of field a podTemplateSpec merges
// into the proxy pod: template metadata, pod-level scheduling, security,
// pull secrets, priority and volumes, an init container and a sidecar,
// and on the toolhive container env (plain and downward API, with and
// without the apiVersion the server defaults), mounts, resources, a
// security context and a probe override.
const RealisticProxyPodTemplate = `{
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
      {"name": "host-certs", "configMap": {"name": "host-certs"}},
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
