package mcpremoteproxy

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/proxy"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// sync converges one MCPRemoteProxy through the workload outline
// (workload.Sync). It is level-triggered: reconcile recomputes the desired
// state from the listers and never depends on the event that woke it. A
// converged proxy costs no API call at all.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	return workload.Sync(ctx, c.Base, key, c.proxies.MCPRemoteProxies(key.Namespace).Get,
		c.toolhive.ToolhiveV1beta1().MCPRemoteProxies(key.Namespace).Patch, c.reconcile)
}

// reconcile resolves references, builds the children, writes the ones that
// drifted, and returns the status to write. User errors become conditions
// and events, and are not retried. Deletion needs no step of its own:
// garbage collection removes the children, and reconcile reports
// Terminating.
func (c *Controller) reconcile(ctx context.Context, p *thv1.MCPRemoteProxy) (*thv1.MCPRemoteProxyStatus, time.Duration, error) {
	status := p.Status.DeepCopy()
	status.ObservedGeneration = p.Generation
	r := c.NewReport(p, &status.Conditions, &status.Phase, &status.Message)
	if p.DeletionTimestamp != nil {
		// Another finalizer (or foreground deletion) holds the object;
		// garbage collection removes the children, nothing is left to do
		// but say so.
		r.NotReady(thv1.MCPRemoteProxyPhaseTerminating, thv1.ReasonTerminating, "MCPRemoteProxy is being deleted")
		return status, 0, nil
	}
	status.URL = naming.RemoteProxyURL(p)
	c.ResolveMemberGroup(r, p.Namespace, workload.GroupName(p.Spec.GroupRef))
	workload.PrimaryUpstreamIgnored(r, thv1.KindMCPRemoteProxy, p.Spec.AuthzConfig)
	refs, ok := c.ResolveProxyRefs(r, p)
	status.OIDCConfigHash, status.ToolConfigHash, status.AuthzConfigHash = refs.OIDCHash, refs.ToolsHash, refs.AuthzHash
	status.ExternalAuthConfigHash, status.TelemetryConfigHash = refs.ExtAuthHash, refs.TelemetryHash
	status.AuthServerConfigHash = refs.AuthServerHash
	r.Unsupported(wiring.ExternalAuthNoEffect(refs.ExtAuth))
	// A spec that fails the checks is not deployed, and what an earlier
	// spec deployed is left exactly as it is: the refused URL never
	// reaches a pod, and a typo in an edit does not take a working proxy
	// down (README, "MCPRemoteProxy: remote URLs and headers").
	// ToolHive's operator counts a missing external auth config among
	// these checks, first; the reference's own condition has already made
	// the proxy Failed, so only the checks' conditions and event are added.
	if cfg := p.Spec.ExternalAuthConfigRef; cfg != nil && !c.ExtAuth.Exists(p.Namespace, cfg.Name) {
		msg := fmt.Sprintf("MCPExternalAuthConfig %q not found", cfg.Name)
		r.SetFalse(thv1.ConditionConfigurationValid, thv1.ReasonExternalAuthConfigFetchError, msg)
		r.Set(thv1.ConditionAuthConfigured, metav1.ConditionFalse, thv1.ReasonAuthInvalid, msg)
		return status, 0, nil
	}
	if reason, msg := checkSpec(p); reason != "" {
		r.Set(thv1.ConditionConfigurationValid, metav1.ConditionFalse, reason, msg)
		r.Set(thv1.ConditionAuthConfigured, metav1.ConditionFalse, thv1.ReasonAuthInvalid, msg)
		r.Fail(reason, msg+"; nothing is created or changed until the spec is fixed")
		return status, 0, nil
	}
	// Authorization from a ConfigMap is checked with the spec, as
	// ToolHive's operator checks it: a Cedar file the runner loads.
	authzFile, problem, err := c.AuthzFiles.Read(ctx, p.Namespace, p.Spec.AuthzConfig, true)
	if err != nil {
		return status, 0, err
	}
	if problem != nil {
		name := p.Spec.AuthzConfig.ConfigMap.Name
		msg := fmt.Sprintf("authorization ConfigMap %q is invalid: %s", name, problem.Message)
		if problem.NotFound {
			msg = fmt.Sprintf("authorization ConfigMap %q not found in namespace %q", name, p.Namespace)
		}
		// In ToolHive's words: one Warning event of the check's reason,
		// Ready=False NotReady.
		r.SetFalse(thv1.ConditionConfigurationValid, problem.Reason, msg)
		r.Set(thv1.ConditionAuthConfigured, metav1.ConditionFalse, thv1.ReasonAuthInvalid, msg)
		r.NotReady(thv1.MCPRemoteProxyPhaseFailed, thv1.ReasonNotReady, "Validation failed: "+msg)
		return status, 0, nil
	}
	r.Set(thv1.ConditionConfigurationValid, metav1.ConditionTrue, thv1.ReasonConfigurationValid, "remoteUrl and headerForward pass the checks")
	// ToolHive's operator never clears it once the spec is fixed; a False
	// condition describing a spec that no longer exists is only misleading.
	r.Remove(thv1.ConditionAuthConfigured)
	// ToolHive's operator writes it once the spec passed its checks, the
	// external auth config among them, and before the other references.
	if !meta.IsStatusConditionFalse(status.Conditions, thv1.ConditionExternalAuthConfigValidated) {
		workload.SessionStorageWarning(r, p.Spec.Replicas, p.Spec.SessionStorage)
	}
	if !ok {
		return status, 0, nil
	}
	// The CA bundles of the embedded authorization server: their content
	// is hashed into the pod template; their ConfigMaps' events re-sync
	// the proxy.
	caChecksum, ok, err := c.ProxyAuthServerCA(ctx, r, p.Namespace, refs)
	if !ok {
		return status, 0, err
	}
	dep, err := c.converge(ctx, p, refs, authzFile, caChecksum, r)
	requeueAfter, err := c.Settle(ctx, r, err)
	if dep != nil && err == nil && requeueAfter == 0 {
		r.Ready(deploymentPhase(dep, c.pods.Of(p.Namespace, p.Name)))
	}
	return status, requeueAfter, err
}

// converge builds the children and writes the ones that drifted; it
// returns the proxy Deployment.
func (c *Controller) converge(ctx context.Context, p *thv1.MCPRemoteProxy, refs workload.ProxyRefs, authzFile *wiring.AuthzFile, caChecksum string, r *workload.Report) (*appsv1.Deployment, error) {
	desired, err := proxy.BuildRemoteProxy(p, proxy.Input{OIDC: refs.OIDC, Tools: refs.Tools, Authz: refs.Authz, ExtAuth: refs.ExtAuth, Telemetry: refs.Telemetry,
		AuthzFile:              authzFile,
		AuthServer:             refs.AuthServer,
		AuthServerCAChecksum:   caChecksum,
		RunnerImage:            c.Config.RunnerImage,
		DefaultRedis:           c.Config.DefaultRedis,
		UsageMetrics:           c.Config.UsageMetrics,
		Release:                c.Config.Release,
		PullSecrets:            c.Config.PullSecrets,
		ProxyHost:              c.Config.ProxyHost,
		RunnerClusterRole:      c.Config.Runners.WithDefaults().RemoteProxyRunner,
		ServiceAccount:         c.Children.NamedServiceAccount(p.Namespace, p.Spec.ServiceAccount),
		TemplateServiceAccount: c.Children.NamedServiceAccount(p.Namespace, wiring.PodTemplateServiceAccount(p.Spec.PodTemplateSpec))})
	if err != nil {
		return nil, err
	}
	workload.AuthServerValid(r, p.Spec.AuthServerRef)
	// PodTemplateValid is reported only while there is a template, as
	// ToolHive's operator does; a template that failed is reported by
	// Settle.
	if p.Spec.PodTemplateSpec != nil {
		r.Set(thv1.ConditionPodTemplateValid, metav1.ConditionTrue, thv1.ReasonPodTemplateValid, "pod template spec is valid")
	} else {
		r.Remove(thv1.ConditionPodTemplateValid)
	}
	// A Role an older hivekeeper created for the runner is left to garbage
	// collection: once its binding is gone it grants nothing, and
	// hivekeeper holds no permission on Roles.
	want := workload.Desired{RunnerServiceAccount: desired.RunnerServiceAccount, RunnerRoleBinding: desired.RunnerRoleBinding,
		ConfigMap: desired.RunConfig, Service: desired.Service, Deployment: desired.Deployment,
		AuthzConfigMap: desired.AuthzConfigMap, StaleAuthzConfigMap: naming.AuthzInlineName(p.Name)}
	if desired.RunnerServiceAccount == nil {
		want.StaleRoleBinding = naming.RemoteProxyRunnerName(p.Name)
		want.StaleServiceAccount = want.StaleRoleBinding
	}
	return c.Children.Ensure(ctx, c.Writer, p.UID, p.Namespace, want)
}
