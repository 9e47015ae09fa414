package proxy

import (
	"errors"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

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
	if _, err := wiring.DecodePodTemplate(p.Spec.PodTemplateSpec); err != nil {
		return nil, err
	}
	// A template may name the pod's account too; the same rule holds, and
	// this proxy's own runner account is the one it may name.
	if err := wiring.CheckServiceAccount(in.TemplateServiceAccount, p.UID, naming.RemoteProxyRunnerName(n)); err != nil {
		var invalid *wiring.InvalidSpecError
		if errors.As(err, &invalid) {
			invalid.Message = strings.Replace(invalid.Message, "spec.serviceAccount", "spec.podTemplateSpec.spec.serviceAccountName", 1)
		}
		return nil, err
	}
	resources, err := wiring.Resources(p.Spec.Resources)
	if err != nil {
		return nil, &wiring.InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: "spec." + err.Error()}
	}
	oidc := wiring.OIDC(in.OIDC, p.Spec.OIDCConfigRef, wiring.ServiceResourceURL(n, ns, naming.RemoteProxyPort(p)), wiring.EnvOIDCClientSecret)
	authz, err := wiring.AuthzRunConfig(p.Spec.AuthzConfig, in.Authz)
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
	authServer, err := wiring.EmbeddedAuthServer(thv1.KindMCPRemoteProxy, in.AuthServer, in.ExtAuth, oidc.Resolved, naming.RemoteProxyPort(p))
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
		Host:              proxyHost,
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
	rc, err := schema.Marshal(runCfg)
	if err != nil {
		return nil, err
	}
	cm := wiring.ConfigMap(meta(naming.RunConfigName(n), labels, nil), map[string]string{schema.Key: rc})

	d := &Output{RunConfig: cm}
	if _, custom := wiring.CustomServiceAccount(p.Spec.ServiceAccount); !custom {
		d.RunnerServiceAccount = wiring.ServiceAccount(meta(naming.RemoteProxyRunnerName(n), labels, nil))
		d.RunnerRoleBinding = wiring.RoleBinding(meta(naming.RemoteProxyRunnerName(n), labels, nil), in.RunnerClusterRole)
	}

	ov, err := wiring.UnpackOverrides(p.Spec.ResourceOverrides)
	if err != nil {
		return nil, err
	}
	// The telemetry env comes first, as on an MCPServer. The external
	// auth secrets, then header values from Secrets come after the OIDC
	// client secret and before the overrides, where ToolHive's operator
	// puts them. headerEnv starts with the secrets
	// provider switch; a bearer token needs it too, once.
	env := slices.Concat(telemetry.Env, oidc.Env, extAuth.Env)
	if len(headerEnv) == 0 && extAuth.SecretsProvider {
		headerEnv = []corev1.EnvVar{{Name: wiring.EnvSecretsProvider, Value: wiring.SecretsProviderFromEnv}}
	}
	env = append(env, headerEnv...)
	d.Deployment = proxyDeployment(proxyDeploymentSpec{
		Meta:           meta(n, naming.MergeOperatorWins(labels, ov.DeploymentLabels), ov.DeploymentAnnotations),
		Selector:       labels,
		Replicas:       wiring.CopyInt32(p.Spec.Replicas),
		TemplateLabels: naming.MergeOperatorWins(labels, ov.TemplateLabels),
		TemplateAnnotations: naming.MergeOperatorWins(map[string]string{
			naming.AnnotationRunConfigChecksum: cm.Annotations[schema.ChecksumAnnotation],
		}, ov.TemplateAnnotations),
		RunnerImage: in.RunnerImage,
		// The runner's "run" takes the server to run as its argument; a
		// URL makes it a proxy to that remote server. The RunConfig
		// carries the same URL as remote_url.
		Args:               []string{p.Spec.RemoteURL},
		ProxyPort:          naming.RemoteProxyPort(p),
		Resources:          resources,
		EnvBeforeOverrides: env,
		OverrideEnv:        ov.Env,
		// The authorization server's secrets come last, as ToolHive's
		// operator adds them.
		EnvAfterOverrides:  slices.Concat(session.Env, authServer.Env),
		ServiceAccountName: remoteProxyServiceAccountName(p),
		RunConfigMapName:   cm.Name,
		ImagePullSecrets:   ov.ImagePullSecrets,
		// The session storage Redis CA bundle comes before the
		// authorization server's volumes, as ToolHive's operator mounts it.
		ExtraVolumes: slices.Concat(oidc.Volumes, telemetry.Volumes, session.Volumes, authServer.Volumes),
		ExtraMounts:  slices.Concat(oidc.Mounts, telemetry.Mounts, session.Mounts, authServer.Mounts),
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
	})
	return d, nil
}
