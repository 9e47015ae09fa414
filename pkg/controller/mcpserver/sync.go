package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	typedthv1 "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/typed/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/proxy"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// sync converges one MCPServer through the workload outline
// (workload.Sync). It is level-triggered: reconcile recomputes the desired
// state from the listers and never depends on the event that woke it. A
// converged server costs no API call at all.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	return workload.Sync(ctx, c.Base, key, c.servers.MCPServers(key.Namespace).Get, c.client(key.Namespace).Patch, c.reconcile)
}

func (c *Controller) client(ns string) typedthv1.MCPServerInterface {
	return c.toolhive.ToolhiveV1beta1().MCPServers(ns)
}

// reconcile resolves references, builds the children, writes the ones that
// drifted, processes a restart request, and returns the status to write.
// User errors become conditions and events, and are not retried. A
// deletion runs the finalizer instead, and writes no status.
//
// The first sync adds the finalizer and goes on in the same sync: the
// children do not depend on it and the status patch is not locked to a
// resourceVersion. Stopping there for the patch's update event cost a
// whole extra pass over every MCPServer when the controller starts on
// stored ones.
func (c *Controller) reconcile(ctx context.Context, s *thv1.MCPServer) (*thv1.MCPServerStatus, time.Duration, error) {
	if s.DeletionTimestamp != nil {
		return nil, 0, c.finalize(ctx, s)
	}
	// ToolHive's operator ignores spec.permissionProfile since v0.63.0
	// and says so once per spec change, before its finalizer.
	if s.Spec.PermissionProfile != nil && s.Generation != s.Status.ObservedGeneration {
		c.Recorder.Event(s, corev1.EventTypeWarning, thv1.ReasonPermissionProfileUnsupported,
			"spec.permissionProfile is deprecated and unsupported by the Kubernetes operator; it has no effect")
	}
	if _, err := framework.EnsureFinalizer(ctx, c.Writer, resource, c.client(s.Namespace).Patch, s, thv1.MCPServerFinalizer); err != nil {
		return nil, 0, err
	}
	status := s.Status.DeepCopy()
	status.ObservedGeneration = s.Generation
	status.URL = naming.MCPServerURL(s)
	r := c.NewReport(s, &status.Conditions, &status.Phase, &status.Message)
	c.ResolveMemberGroup(r, s.Namespace, workload.GroupName(s.Spec.GroupRef))
	advisories(r, s)
	refs, ok := c.ResolveProxyRefs(r, s)
	status.OIDCConfigHash, status.ToolConfigHash, status.AuthzConfigHash = refs.OIDCHash, refs.ToolsHash, refs.AuthzHash
	status.ExternalAuthConfigHash, status.TelemetryConfigHash = refs.ExtAuthHash, refs.TelemetryHash
	status.WebhookConfigHash = refs.WebhooksHash
	status.AuthServerConfigHash = refs.AuthServerHash
	r.Unsupported(wiring.ExternalAuthNoEffect(refs.ExtAuth))
	if !ok {
		return status, 0, nil
	}
	// Authorization from a ConfigMap: the file must be one the runner
	// loads, or nothing is written (ToolHive's operator fails to build the
	// RunConfig); the ConfigMap's events re-sync the server.
	authzFile, problem, err := c.AuthzFiles.Read(ctx, s.Namespace, s.Spec.AuthzConfig, false)
	if err != nil {
		return status, 0, err
	}
	if problem != nil {
		r.Fail(problem.Reason, "Failed to build configuration: failed to create RunConfig from MCPServer: failed to process AuthzConfig: "+problem.Message)
		return status, 0, nil
	}
	// The CA bundles of the embedded authorization server: their content
	// is hashed into the pod template; their ConfigMaps' events re-sync
	// the server.
	caChecksum, ok, err := c.ProxyAuthServerCA(ctx, r, s.Namespace, refs)
	if !ok {
		return status, 0, err
	}
	dep, err := c.converge(ctx, s, refs, authzFile, caChecksum, r)
	requeueAfter, err := c.Settle(ctx, r, err)
	if dep != nil && err == nil && requeueAfter == 0 {
		phase, ready, reason, msg, readyReplicas := deploymentPhase(dep, c.pods.All(s.Namespace, s.Name), c.runnerMissing(s.Namespace, s.Name))
		status.ReadyReplicas = readyReplicas
		r.Ready(phase, ready, reason, msg)
	}
	return status, requeueAfter, err
}

// converge builds the children, writes the ones that drifted and processes
// a restart request; it returns the proxy Deployment.
func (c *Controller) converge(ctx context.Context, s *thv1.MCPServer, refs workload.ProxyRefs, authzFile *wiring.AuthzFile, caChecksum string, r *workload.Report) (*appsv1.Deployment, error) {
	desired, err := proxy.BuildMCPServer(s, proxy.Input{OIDC: refs.OIDC, Tools: refs.Tools, Authz: refs.Authz, ExtAuth: refs.ExtAuth, Telemetry: refs.Telemetry,
		AuthzFile:              authzFile,
		Webhooks:               refs.Webhooks,
		AuthServer:             refs.AuthServer,
		AuthServerCAChecksum:   caChecksum,
		RunnerImage:            c.Config.RunnerImage,
		DefaultRedis:           c.Config.DefaultRedis,
		UsageMetrics:           c.Config.UsageMetrics,
		Release:                c.Config.Release,
		PullSecrets:            c.Config.PullSecrets,
		ProxyHost:              c.Config.ProxyHost,
		RunnerClusterRole:      c.Config.Runners.WithDefaults().ProxyRunner,
		StdioRunnerClusterRole: c.Config.Runners.WithDefaults().StdioProxyRunner,
		ServiceAccount:         c.Children.NamedServiceAccount(s.Namespace, s.Spec.ServiceAccount)})
	if err != nil {
		return nil, err
	}
	r.Set(thv1.ConditionPodTemplateValid, metav1.ConditionTrue, thv1.ReasonPodTemplateValid, "pod template spec is valid")
	workload.AuthServerValid(r, s.Spec.AuthServerRef)
	dep, err := c.Children.Ensure(ctx, c.Writer, s.UID, s.Namespace, workload.Desired{
		RunnerServiceAccount: desired.RunnerServiceAccount, RunnerRoleBinding: desired.RunnerRoleBinding,
		PodServiceAccount: desired.BackendServiceAccount, ConfigMap: desired.RunConfig, Service: desired.Service, Deployment: desired.Deployment,
		AuthzConfigMap: desired.AuthzConfigMap, StaleAuthzConfigMap: naming.AuthzInlineName(s.Name),
	})
	if err != nil {
		return nil, err
	}
	return dep, c.processRestart(ctx, s, dep)
}

// processRestart honours a restart request once: a rolling restart stamps
// the pod template, an immediate one deletes the proxy pods; then the
// request is recorded as processed with an optimistic-lock patch.
func (c *Controller) processRestart(ctx context.Context, s *thv1.MCPServer, dep *appsv1.Deployment) error {
	logger := klog.FromContext(ctx)
	req := s.Annotations[thv1.AnnotationRestartedAt]
	last := s.Annotations[thv1.AnnotationLastProcessedRestart]
	// Without the finalizer in s, this sync has just added it, and the
	// optimistic-lock patch below would conflict with s's resourceVersion;
	// the finalizer patch's update event brings the request back.
	if req == "" || req == last || dep == nil || !slices.Contains(s.Finalizers, thv1.MCPServerFinalizer) {
		return nil
	}
	reqT, err := time.Parse(time.RFC3339, req)
	if err != nil {
		logger.Info("Ignoring unparsable restart request", "annotation", thv1.AnnotationRestartedAt, "value", req, "err", err.Error())
		return nil
	}
	if lastT, err := time.Parse(time.RFC3339, last); err == nil && !reqT.After(lastT) {
		return nil
	}
	// Acting is idempotent: the Deployment records what was done, so a
	// retry after a failed record below does not restart the pods again.
	ns := s.Namespace
	switch s.Annotations[thv1.AnnotationRestartStrategy] {
	case thv1.RestartImmediate:
		if dep.Annotations[thv1.AnnotationRestartedAt] != req {
			selector := labels.SelectorFromSet(naming.Labels(naming.AppMCPServer, s.Name)).String()
			if err := framework.DeleteCollection(ctx, c.Writer, "pods", ns, c.kube.CoreV1().Pods(ns).DeleteCollection, selector); err != nil {
				return err
			}
			body := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, thv1.AnnotationRestartedAt, req)
			if err := framework.PatchChild(ctx, c.Writer, s.UID, "deployments", ns, dep.Name, dep.ResourceVersion, c.kube.AppsV1().Deployments(ns).Patch, body); err != nil {
				return err
			}
		}
	default:
		if dep.Spec.Template.Annotations[thv1.AnnotationRestartedAt] != req {
			body := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, thv1.AnnotationRestartedAt, req)
			if err := framework.PatchChild(ctx, c.Writer, s.UID, "deployments", ns, dep.Name, dep.ResourceVersion, c.kube.AppsV1().Deployments(ns).Patch, body); err != nil {
				return err
			}
		}
	}
	mod := s.DeepCopy()
	if mod.Annotations == nil {
		mod.Annotations = map[string]string{}
	}
	mod.Annotations[thv1.AnnotationLastProcessedRestart] = req
	_, err = framework.PatchObject(ctx, c.Writer, resource, c.client(ns).Patch, s, mod)
	return err
}

// finalize cleans up what the proxy runner created (which carries no owner
// reference to the server) and then releases the finalizer, in one sync.
func (c *Controller) finalize(ctx context.Context, s *thv1.MCPServer) error {
	if !slices.Contains(s.Finalizers, thv1.MCPServerFinalizer) {
		return nil
	}
	status := s.Status.DeepCopy()
	c.NewReport(s, &status.Conditions, &status.Phase, &status.Message).Ready(thv1.MCPServerPhaseTerminating, metav1.ConditionFalse, thv1.ReasonTerminating, "MCPServer is being deleted")
	status.Message = "cleaning up"
	// Cleanup and release happen in this same sync, after the
	// Terminating status is written.
	_, err := framework.ReleaseFinalizer(ctx, c.Writer, resource, c.client(s.Namespace).Patch, s, thv1.MCPServerFinalizer, s.Status, status,
		func(ctx context.Context) error { return c.deleteRunnerObjects(ctx, s) })
	return err
}

// deleteRunnerObjects deletes the StatefulSet and Services the proxy runner
// created for s. They are found by name, and a name is not proof: an
// unrelated StatefulSet "postgres" shares its name with MCPServer
// "postgres", and MCPServer "foo"'s proxy Service mcp-foo-proxy is the name
// the runner of MCPServer "foo-proxy" would give its Service. So only an
// object carrying the labels the runner puts on everything it creates for
// this server (toolhive=true, toolhive-name=<name>) is deleted; anything
// else is left alone, with a Warning event naming it.
func (c *Controller) deleteRunnerObjects(ctx context.Context, s *thv1.MCPServer) error {
	ns, n := s.Namespace, s.Name
	want := map[string]string{naming.LabelToolhive: "true", naming.LabelToolhiveName: n}
	leftAlone := func(kind, name, why string) {
		c.Recorder.Eventf(s, corev1.EventTypeWarning, thv1.ReasonCleanupSkipped,
			"Left %s %s/%s in place: %s, so it is not what the proxy runner created for this MCPServer", kind, ns, name, why)
	}
	sts := c.kube.AppsV1().StatefulSets(ns)
	why, err := framework.DeleteLabelled(ctx, c.Writer, s.UID, "statefulsets", ns, naming.MCPServerRunnerStatefulSetName(n), sts.Get, sts.Delete, want)
	if err != nil {
		return err
	}
	if why != "" {
		leftAlone("StatefulSet", naming.MCPServerRunnerStatefulSetName(n), why)
	}
	svcs := c.kube.CoreV1().Services(ns)
	for _, name := range naming.MCPServerRunnerServiceNames(n) {
		why, err := framework.DeleteLabelled(ctx, c.Writer, s.UID, "services", ns, name, svcs.Get, svcs.Delete, want)
		if err != nil {
			return err
		}
		if why != "" {
			leftAlone("Service", name, why)
		}
	}
	return nil
}
