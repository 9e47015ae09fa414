package proxy

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// defaultTargetPort is the backend port when spec.mcpPort is unset.
const defaultTargetPort int32 = 8080

// mcpServerGVK is the owner kind of every child.
var mcpServerGVK = thv1.SchemeGroupVersion.WithKind(thv1.KindMCPServer)

// mcpServerReplicas is nil (hands off) when the spec leaves it unset; a
// stdio server can only serve one client connection, so it is capped at
// one.
func mcpServerReplicas(s *thv1.MCPServer) *int32 {
	if s.Spec.Replicas == nil {
		return nil
	}
	r := *s.Spec.Replicas
	if naming.MCPServerTransport(s) == thv1.TransportStdio && r > 1 {
		r = 1
	}
	return &r
}

// runnerClusterRole is the ClusterRole of an MCPServer's runner: only a
// stdio server's may attach to its pod, as ToolHive's operator (v0.63.0)
// grants pods/attach to stdio servers alone.
func runnerClusterRole(s *thv1.MCPServer, in Input) string {
	if naming.MCPServerTransport(s) == thv1.TransportStdio {
		return in.StdioRunnerClusterRole
	}
	return in.RunnerClusterRole
}

// BuildMCPServer computes every child of an MCPServer. It is pure: the
// same inputs give the same objects, and the drift comparators compare
// against exactly these objects.
func BuildMCPServer(s *thv1.MCPServer, in Input) (*Output, error) {
	if strings.HasPrefix(s.Spec.Image, "-") {
		// The CRD refuses it; a server stored before that rule must not
		// hand the runner an option in place of its image either.
		return nil, &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec,
			Message: "spec.image may not start with '-': it is an argument of the proxy runner"}
	}
	n, ns := s.Name, s.Namespace
	labels := naming.Labels(naming.AppMCPServer, n)
	owner := naming.OwnerRef(s, mcpServerGVK)
	meta := func(name string, l, a map[string]string) metav1.ObjectMeta {
		return naming.ObjectMeta(name, ns, l, a, owner)
	}

	backendSA, custom := wiring.CustomServiceAccount(s.Spec.ServiceAccount)
	if !custom {
		backendSA = naming.BackendServiceAccountName(n)
	}
	if err := wiring.CheckServiceAccount(in.ServiceAccount, s.UID, naming.BackendServiceAccountName(n)); err != nil {
		return nil, err
	}
	// The runner applies the template to the MCP server's pod with the
	// permissions hivekeeper bound to it: it may not reach the node. Its
	// serviceAccountName is replaced by the backend's account.
	if err := wiring.CheckPodTemplate(s.Spec.PodTemplateSpec); err != nil {
		return nil, err
	}
	podPatch, err := wiring.BackendPodPatch(s, backendSA)
	if err != nil {
		return nil, err
	}
	resources, err := wiring.Resources(s.Spec.Resources)
	if err != nil {
		return nil, &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: err.Error()}
	}
	oidc := wiring.OIDC(in.OIDC, s.Spec.OIDCConfigRef, wiring.ServiceResourceURL(n, ns, naming.MCPServerProxyPort(s)), wiring.EnvOIDCClientSecret)
	authz, err := wiring.AuthzRunConfig(s.Spec.AuthzConfig, in.Authz, in.AuthzFile)
	if err != nil {
		return nil, err
	}
	authzFile, err := wiring.InlineAuthzFile(s.Spec.AuthzConfig, n)
	if err != nil {
		return nil, err
	}
	rt, err := resolveRuntime(s, in.DefaultRedis)
	if err != nil {
		return nil, err
	}
	extAuth, err := wiring.ExternalAuth(in.ExtAuth, thv1.KindMCPServer)
	if err != nil {
		return nil, err
	}
	telemetry, err := wiring.Telemetry(in.Telemetry, s.Spec.TelemetryConfigRef, n, ns)
	if err != nil {
		return nil, err
	}
	webhooks, err := wiring.Webhooks(in.Webhooks)
	if err != nil {
		return nil, err
	}
	authServer, err := wiring.EmbeddedAuthServer(thv1.KindMCPServer, wiring.Owner{Namespace: s.Namespace, Name: s.Name}, in.AuthServer, in.ExtAuth, oidc.Resolved, naming.MCPServerProxyPort(s), in.Release)
	if err != nil {
		return nil, err
	}
	rc, err := buildRunConfig(s, in, oidc, telemetry, webhooks, authz, rt, extAuth, authServer)
	if err != nil {
		return nil, err
	}
	ov, err := wiring.UnpackOverrides(s.Spec.ResourceOverrides)
	if err != nil {
		return nil, err
	}
	ov.ImagePullSecrets = wiring.MergePullSecrets(ov.ImagePullSecrets, in.PullSecrets)
	cm := wiring.ConfigMap(meta(naming.RunConfigName(n), naming.RunConfigLabels(thv1.KindMCPServer, n), nil), map[string]string{schema.Key: rc})

	d := &Output{
		RunConfig:      cm,
		AuthzConfigMap: authzFile.ConfigMap(meta(naming.AuthzInlineName(n), labels, nil)),
		// The runner's account and binding, and the backend's account,
		// carry no label, as ToolHive's operator writes them (and clears
		// the labels of those it finds).
		RunnerServiceAccount: wiring.ServiceAccount(meta(naming.ProxyRunnerName(n), nil, nil), ov.ImagePullSecrets),
		RunnerRoleBinding:    wiring.RoleBinding(meta(naming.ProxyRunnerName(n), nil, nil), runnerClusterRole(s, in)),
	}
	if !custom {
		d.BackendServiceAccount = wiring.ServiceAccount(meta(backendSA, nil, nil), ov.ImagePullSecrets)
	}

	generation := strconv.FormatInt(s.Generation, 10)
	args := []string{"--k8s-pod-patch=" + podPatch, s.Spec.Image}
	d.Deployment = proxyDeployment(proxyDeploymentSpec{
		Meta:           meta(n, naming.MergeOperatorWins(labels, ov.DeploymentLabels), ov.DeploymentAnnotations),
		Selector:       labels,
		Replicas:       mcpServerReplicas(s),
		TemplateLabels: naming.MergeOperatorWins(labels, ov.TemplateLabels),
		TemplateAnnotations: naming.MergeOperatorWins(authServerCAChecksum(map[string]string{
			naming.AnnotationRunConfigChecksum:   cm.Annotations[schema.ChecksumAnnotation],
			naming.AnnotationMCPServerGeneration: generation,
		}, authServer, in.AuthServerCAChecksum), ov.TemplateAnnotations),
		RunnerImage:    in.RunnerImage,
		Args:           args,
		ProxyPort:      naming.MCPServerProxyPort(s),
		ReadinessDelay: readinessDelayMCPServer,
		Resources:      resources,
		// In ToolHive's operator's order: the telemetry env, the external
		// auth secrets, the OIDC client secret, the overrides, the Redis
		// password (after the overrides, so a plain override does not
		// replace it), the generation, the authorization server's
		// secrets, then what the runner requires.
		Env: wiring.RequiredEnv(slices.Concat(telemetry.Env, extAuth.Env, oidc.Env, wiring.OverrideEnv(ov.Env), rt.Session.Env,
			[]corev1.EnvVar{{
				Name: naming.EnvMCPServerGeneration,
				ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
					// Explicit: the server defaults it, and a comparison
					// against the live object would otherwise see drift.
					APIVersion: "v1",
					FieldPath:  "metadata.annotations['" + naming.AnnotationMCPServerGeneration + "']",
				}},
			}}, authServer.Env), in.UsageMetrics.WorkloadEnv(in.Release)),
		ServiceAccountName: naming.ProxyRunnerName(n),
		RunConfigMapName:   cm.Name,
		ImagePullSecrets:   ov.ImagePullSecrets,
		// ToolHive's operator mounts the webhook Secrets first, then the
		// inline authorization config, the OIDC CA bundle, the telemetry
		// CA bundle, the session storage Redis CA bundle and the embedded
		// authorization server's keys.
		ExtraVolumes:  slices.Concat(webhooks.Volumes, authzFile.Volumes, oidc.Volumes, telemetry.Volumes, rt.Session.Volumes, authServer.Volumes),
		ExtraMounts:   slices.Concat(webhooks.Mounts, authzFile.Mounts, oidc.Mounts, telemetry.Mounts, rt.Session.Mounts, authServer.Mounts),
		AuthServerTLS: in.authServerTLSPort(authServer),
	})

	d.Service = wiring.Service(wiring.ServiceSpec{
		Meta:            meta(naming.MCPServerServiceName(n), naming.MergeOperatorWins(labels, ov.ServiceLabels), ov.ServiceAnnotations),
		PortName:        proxyPortName,
		Port:            naming.MCPServerProxyPort(s),
		TargetPort:      naming.MCPServerProxyPort(s),
		Selector:        labels,
		SessionAffinity: s.Spec.SessionAffinity,
		AuthServerTLS:   in.authServerTLSPort(authServer),
	})
	return d, nil
}

// buildRunConfig renders the RunConfig as ToolHive's operator does for the
// same manifest. The container and base names are the server's name: a
// Kubernetes name is already what ToolHive's name sanitising would keep,
// and the runner names the StatefulSet after the container name.
func buildRunConfig(s *thv1.MCPServer, in Input, oidc wiring.OIDCWiring, telemetry wiring.TelemetryWiring, webhooks wiring.WebhookWiring, authz json.RawMessage, rt runtimeOptions, extAuth wiring.ExternalAuthWiring, authServer wiring.AuthServerWiring) (string, error) {
	var env map[string]string
	for _, e := range s.Spec.Env {
		if err := schema.ValidateEnvName(e.Name); err != nil {
			return "", &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: "spec.env: " + err.Error()}
		}
		if env == nil {
			env = map[string]string{}
		}
		env[e.Name] = e.Value
	}
	target := defaultTargetPort
	if s.Spec.MCPPort != nil {
		target = *s.Spec.MCPPort
	}
	rc := &schema.RunConfig{
		SchemaVersion:       schema.SchemaVersion,
		Name:                s.Name,
		ContainerName:       s.Name,
		BaseName:            s.Name,
		Image:               s.Spec.Image,
		MCPServerGeneration: s.Generation,
		CmdArgs:             s.Spec.Args,
		Transport:           naming.MCPServerTransport(s),
		Host:                in.proxyHost(),
		Port:                naming.MCPServerProxyPort(s),
		TargetPort:          target,
		ProxyMode:           naming.MCPServerProxyMode(s),
		TrustProxyHeaders:   s.Spec.TrustProxyHeaders,
		EndpointPrefix:      s.Spec.EndpointPrefix,
		EnvVars:             env,
		AuthzConfig:         authz,
	}
	rc.SetContainerLabels()
	rc.SetTransportEnv()
	oidc.ApplyTo(rc)
	extAuth.ApplyTo(rc)
	authServer.ApplyTo(rc)
	telemetry.ApplyTo(rc)
	webhooks.ApplyTo(rc)
	wiring.ApplyToolConfig(rc, in.Tools)
	rt.applyTo(rc)
	return marshalRunConfig(rc, in.UsageMetrics.Middleware())
}

// marshalRunConfig derives the middleware chain and encodes the
// RunConfig. A chain ToolHive's runner would refuse (a credential
// re-added after the embedded authorization server strips it) is the
// spec's error.
func marshalRunConfig(rc *schema.RunConfig, usageMetrics bool) (string, error) {
	if err := rc.PopulateMiddlewareConfigs(usageMetrics); err != nil {
		return "", invalidSpec("%v", err)
	}
	return schema.Marshal(rc)
}
