package proxy

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// remoteProxyPlaceholder is the server argument of a remote proxy's
// runner, as ToolHive's operator writes it.
const remoteProxyPlaceholder = "placeholder-for-remote-proxy"

// remoteProxyGVK is the owner kind of every child.
var remoteProxyGVK = thv1.SchemeGroupVersion.WithKind(thv1.KindMCPRemoteProxy)

// remoteProxyServiceAccountName is the proxy pod's account: the spec's,
// or the runner account hivekeeper creates.
func remoteProxyServiceAccountName(p *thv1.MCPRemoteProxy) string {
	if sa, ok := wiring.CustomServiceAccount(p.Spec.ServiceAccount); ok {
		return sa
	}
	return naming.RemoteProxyRunnerName(p.Name)
}

// BuildRemoteProxy computes every child of an MCPRemoteProxy. It is pure:
// the same inputs give the same objects, and the drift comparators compare
// against exactly these objects.
func BuildRemoteProxy(p *thv1.MCPRemoteProxy, in Input) (*Output, error) {
	n, ns := p.Name, p.Namespace
	labels := naming.Labels(naming.AppMCPRemoteProxy, n)
	owner := naming.OwnerRef(p, remoteProxyGVK)
	meta := func(name string, l, a map[string]string) metav1.ObjectMeta {
		return naming.ObjectMeta(name, ns, l, a, owner)
	}

	// No hivekeeper-managed account is this proxy's to name: its own is
	// the runner account, used anyway when the spec names none.
	if err := wiring.CheckServiceAccount(in.ServiceAccount, p.UID, ""); err != nil {
		return nil, err
	}
	// The template is checked first, as ToolHive's operator does, so that
	// a template no pod can be built from is reported as such.
	templateHash, err := wiring.HashPodTemplateSpec(p.Spec.PodTemplateSpec)
	if err != nil {
		return nil, err
	}
	if err := wiring.CheckPodTemplate(p.Spec.PodTemplateSpec); err != nil {
		return nil, err
	}
	// A template may name the pod's account too; the same rule holds, and
	// this proxy's own runner account is the one it may name.
	if err := wiring.CheckTemplateServiceAccount(in.TemplateServiceAccount, p.UID, naming.RemoteProxyRunnerName(n)); err != nil {
		return nil, err
	}
	resources, err := wiring.Resources(p.Spec.Resources)
	if err != nil {
		return nil, &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: "spec." + err.Error()}
	}
	oidc := wiring.OIDC(in.OIDC, p.Spec.OIDCConfigRef, wiring.ServiceResourceURL(n, ns, naming.RemoteProxyPort(p)), wiring.EnvOIDCClientSecret)
	authz, err := wiring.AuthzRunConfig(p.Spec.AuthzConfig, in.Authz, in.AuthzFile)
	if err != nil {
		return nil, err
	}
	authzFile, err := wiring.InlineAuthzFile(p.Spec.AuthzConfig, n)
	if err != nil {
		return nil, err
	}
	extAuth, err := wiring.ExternalAuth(in.ExtAuth, thv1.KindMCPRemoteProxy)
	if err != nil {
		return nil, err
	}
	headers, headerEnv, err := wiring.HeaderForward(p)
	if err != nil {
		return nil, &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonHeaderForwardInvalid, Message: err.Error()}
	}
	telemetry, err := wiring.Telemetry(in.Telemetry, p.Spec.TelemetryConfigRef, n, ns)
	if err != nil {
		return nil, err
	}
	authServer, err := wiring.EmbeddedAuthServer(thv1.KindMCPRemoteProxy, wiring.Owner{Namespace: p.Namespace, Name: p.Name}, in.AuthServer, in.ExtAuth, oidc.Resolved, naming.RemoteProxyPort(p), in.Release)
	if err != nil {
		return nil, err
	}
	// ToolHive names a remote workload's container after the workload.
	runCfg := &schema.RunConfig{
		SchemaVersion:     schema.SchemaVersion,
		Name:              n,
		ContainerName:     n,
		BaseName:          n,
		RemoteURL:         p.Spec.RemoteURL,
		Transport:         naming.RemoteProxyTransport(p),
		Host:              in.proxyHost(),
		Port:              naming.RemoteProxyPort(p),
		ProxyMode:         naming.RemoteProxyTransport(p),
		TrustProxyHeaders: p.Spec.TrustProxyHeaders,
		EndpointPrefix:    p.Spec.EndpointPrefix,
		AuthzConfig:       authz,
		HeaderForward:     headers,
	}
	runCfg.SetContainerLabels()
	oidc.ApplyTo(runCfg)
	extAuth.ApplyTo(runCfg)
	authServer.ApplyTo(runCfg)
	telemetry.ApplyTo(runCfg)
	wiring.ApplyToolConfig(runCfg, in.Tools)
	runCfg.AuditConfig = wiring.Audit(p.Spec.Audit)
	session := wiring.SessionStorage(p.Spec.SessionStorage, in.DefaultRedis, wiring.FallbackWhenAbsent)
	if session.Redis != nil {
		runCfg.ScalingConfig = &schema.ScalingConfig{SessionRedis: session.Redis}
	}
	runCfg.PermissionProfile = schema.DefaultPermissionProfile()
	runCfg.SetTransportEnv()
	rc, err := marshalRunConfig(runCfg, in.UsageMetrics.Middleware())
	if err != nil {
		return nil, err
	}
	ov, err := wiring.UnpackOverrides(p.Spec.ResourceOverrides)
	if err != nil {
		return nil, err
	}
	ov.ImagePullSecrets = wiring.MergePullSecrets(ov.ImagePullSecrets, in.PullSecrets)
	cm := wiring.ConfigMap(meta(naming.RunConfigName(n), naming.RunConfigLabels(thv1.KindMCPRemoteProxy, n), nil), map[string]string{schema.Key: rc})

	d := &Output{RunConfig: cm, AuthzConfigMap: authzFile.ConfigMap(meta(naming.AuthzInlineName(n), labels, nil))}
	if _, custom := wiring.CustomServiceAccount(p.Spec.ServiceAccount); !custom {
		// No label on the runner's account and binding, as ToolHive's
		// operator writes them.
		d.RunnerServiceAccount = wiring.ServiceAccount(meta(naming.RemoteProxyRunnerName(n), nil, nil), ov.ImagePullSecrets)
		d.RunnerRoleBinding = wiring.RoleBinding(meta(naming.RemoteProxyRunnerName(n), nil, nil), in.RunnerClusterRole)
	}

	// In ToolHive's operator's order: the OIDC client secret, the
	// external auth secrets, the header values from Secrets (after the
	// secrets provider switch), the overrides, the Redis password, what
	// the runner requires, then the authorization server's secrets. No
	// telemetry env: ToolHive's operator sets none on a remote proxy, and
	// its runner reads none.
	env := wiring.RequiredEnv(slices.Concat(oidc.Env, extAuth.Env, headerEnv, wiring.OverrideEnv(ov.Env), session.Env), in.UsageMetrics.WorkloadEnv(in.Release))
	d.Deployment = proxyDeployment(proxyDeploymentSpec{
		Meta:           meta(n, naming.MergeOperatorWins(labels, ov.DeploymentLabels), ov.DeploymentAnnotations),
		Selector:       labels,
		Replicas:       wiring.CopyInt32(p.Spec.Replicas),
		TemplateLabels: naming.MergeOperatorWins(labels, ov.TemplateLabels),
		TemplateAnnotations: naming.MergeOperatorWins(authServerCAChecksum(map[string]string{
			naming.AnnotationRunConfigChecksum: cm.Annotations[schema.ChecksumAnnotation],
		}, authServer, in.AuthServerCAChecksum), ov.TemplateAnnotations),
		RunnerImage: in.RunnerImage,
		// The runner's "run" takes the server to run as its argument,
		// which it ignores when the RunConfig names a remote_url: ToolHive's
		// operator passes a placeholder, in the foreground.
		Args:               []string{"--foreground=true", remoteProxyPlaceholder},
		ProxyPort:          naming.RemoteProxyPort(p),
		ReadinessDelay:     readinessDelayRemoteProxy,
		Resources:          resources,
		Env:                slices.Concat(env, authServer.Env),
		ServiceAccountName: remoteProxyServiceAccountName(p),
		RunConfigMapName:   cm.Name,
		ImagePullSecrets:   ov.ImagePullSecrets,
		// ToolHive's operator mounts the inline authorization config, then
		// the telemetry CA bundle before the OIDC one on a remote proxy,
		// then the session storage Redis CA bundle before the
		// authorization server's volumes.
		ExtraVolumes:  slices.Concat(authzFile.Volumes, telemetry.Volumes, oidc.Volumes, session.Volumes, authServer.Volumes),
		ExtraMounts:   slices.Concat(authzFile.Mounts, telemetry.Mounts, oidc.Mounts, session.Mounts, authServer.Mounts),
		AuthServerTLS: in.authServerTLSPort(authServer),
	})

	// The user's podTemplateSpec is merged last, into the pod built
	// above, as ToolHive's operator merges it; the Deployment carries its
	// hash, through which what only the template sets is compared.
	if d.Deployment.Spec.Template, err = wiring.ApplyPodTemplate(d.Deployment.Spec.Template, p.Spec.PodTemplateSpec, labels); err != nil {
		return nil, err
	}
	d.Deployment.Annotations = wiring.SetPodTemplateSpecHash(d.Deployment.Annotations, templateHash)

	d.Service = wiring.Service(wiring.ServiceSpec{
		Meta:            meta(naming.RemoteProxyServiceName(n), naming.MergeOperatorWins(labels, ov.ServiceLabels), ov.ServiceAnnotations),
		PortName:        proxyPortName,
		Port:            naming.RemoteProxyPort(p),
		TargetPort:      naming.RemoteProxyPort(p),
		Selector:        labels,
		SessionAffinity: p.Spec.SessionAffinity,
		AuthServerTLS:   in.authServerTLSPort(authServer),
	})
	return d, nil
}
