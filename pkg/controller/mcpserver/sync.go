package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// conflictRetry is how long a sync waits before looking again at a child
// another controller owns; the conflict is reported, not hot-looped.
const conflictRetry = time.Minute

// sync converges one MCPServer. It is level-triggered: it recomputes the
// desired state from the listers and never depends on the event that
// woke it. A converged server costs no API call at all.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.servers.MCPServers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Gone: garbage collection removes the children; forget them.
		c.writer.ForgetStatus(resource, ns, name)
		c.writer.ForgetChildren(ns, RunConfigName(name), RunnerName(name), BackendServiceAccountName(name), name, ServiceName(name))
		return nil
	}
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("mcpserver", klog.KObj(cached))
	ctx = klog.NewContext(ctx, logger)

	if cached.DeletionTimestamp != nil {
		return c.finalize(ctx, cached)
	}
	if !slices.Contains(cached.Finalizers, Finalizer) {
		mod := cached.DeepCopy()
		mod.Finalizers = append(mod.Finalizers, Finalizer)
		// The update event of this patch brings the server back with the
		// finalizer in the cache and a fresh resourceVersion.
		_, err := controller.PatchObject(ctx, c.writer, resource, c.toolhive.ToolhiveV1beta1().MCPServers(ns).Patch, cached, mod)
		return err
	}

	status := cached.Status.DeepCopy()
	err = c.converge(ctx, cached, status)
	status.ObservedGeneration = cached.Generation
	status.URL = URL(cached)
	if _, perr := controller.PatchStatus(ctx, c.writer, resource, cached, c.toolhive.ToolhiveV1beta1().MCPServers(ns).Patch, cached.Status, status); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

// converge resolves references, builds the children, writes the ones that
// drifted, processes a restart request, and fills status. Terminal user
// errors become conditions and events and return nil.
func (c *Controller) converge(ctx context.Context, s *thv1.MCPServer, status *thv1.MCPServerStatus) error {
	setCond := func(t string, st metav1.ConditionStatus, reason, msg string) {
		controller.SetCondition(&status.Conditions, c.clock, s.Generation, t, st, reason, msg)
	}
	old := s.Status.Conditions

	c.groupCondition(s, setCond, status)
	oidc, ok := c.resolveOIDC(s, setCond, status)
	if !ok {
		cond := meta.FindStatusCondition(status.Conditions, thv1.ConditionOIDCConfigRefValidated)
		status.Phase, status.Message = thv1.MCPServerPhasePending, cond.Message
		setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonWaitingForOIDC, cond.Message)
		if workload.ConditionFlippedTo(old, status.Conditions, thv1.ConditionOIDCConfigRefValidated, metav1.ConditionFalse) {
			c.recorder.Event(s, corev1.EventTypeWarning, cond.Reason, cond.Message)
		}
		// The config's own events re-sync this server through the index.
		return nil
	}

	desired, err := Build(Inputs{Server: s, OIDC: oidc, RunnerImage: c.runnerImage, RunnerClusterRole: c.runnerClusterRole,
		ServiceAccount: c.children.NamedServiceAccount(s.Namespace, s.Spec.ServiceAccount)})
	var invalid *InvalidSpecError
	if errors.As(err, &invalid) {
		if invalid.Condition == thv1.ConditionPodTemplateValid {
			setCond(thv1.ConditionPodTemplateValid, metav1.ConditionFalse, invalid.Reason, invalid.Message)
		}
		setCond(thv1.ConditionReady, metav1.ConditionFalse, invalid.Reason, invalid.Message)
		status.Phase, status.Message = thv1.MCPServerPhaseFailed, invalid.Message
		if workload.ConditionFlippedTo(old, status.Conditions, thv1.ConditionReady, metav1.ConditionFalse) {
			c.recorder.Event(s, corev1.EventTypeWarning, invalid.Reason, invalid.Message)
		}
		// Retrying cannot fix user input; the next spec change will.
		return nil
	}
	if err != nil {
		return err
	}
	setCond(thv1.ConditionPodTemplateValid, metav1.ConditionTrue, ReasonPodTemplateValid, "pod template spec is valid")

	dep, err := c.ensureChildren(ctx, s, desired)
	var conflict *controller.ChildConflictError
	if errors.As(err, &conflict) {
		setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonChildConflict, conflict.Error())
		status.Phase, status.Message = thv1.MCPServerPhaseFailed, conflict.Error()
		if workload.ConditionFlippedTo(old, status.Conditions, thv1.ConditionReady, metav1.ConditionFalse) {
			c.recorder.Event(s, corev1.EventTypeWarning, ReasonChildConflict, conflict.Error())
		}
		return controller.RequeueAfter(conflictRetry)
	}
	if err != nil {
		// Reported so the user sees why (a quota, an exhausted Service
		// range, an admission webhook); retried with backoff. The
		// condition names the child and the kind of refusal only: the
		// API server's message can differ on every attempt (a quota's
		// current usage), and a condition quoting it would be a new
		// status write with every retry. The message itself goes to the
		// log and to an event, which the event recorder aggregates.
		msg := controller.StableMessage(err)
		setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonChildWriteFailed, msg)
		status.Phase, status.Message = thv1.MCPServerPhaseFailed, msg
		klog.FromContext(ctx).Info("Writing a child failed", "err", err.Error())
		c.recorder.Event(s, corev1.EventTypeWarning, ReasonChildWriteFailed, err.Error())
		return err
	}
	if err := c.processRestart(ctx, s, dep); err != nil {
		return err
	}

	phase, ready, reason, msg, readyReplicas := deploymentPhase(dep)
	status.Phase, status.Message, status.ReadyReplicas = phase, msg, readyReplicas
	setCond(thv1.ConditionReady, ready, reason, msg)
	return nil
}

// groupCondition reports whether the referenced MCPGroup exists. A missing
// group does not block the server; the group's creation re-syncs it.
func (c *Controller) groupCondition(s *thv1.MCPServer, setCond func(string, metav1.ConditionStatus, string, string), status *thv1.MCPServerStatus) {
	if s.Spec.GroupRef == nil || s.Spec.GroupRef.Name == "" {
		meta.RemoveStatusCondition(&status.Conditions, thv1.ConditionGroupRefValidated)
		return
	}
	st, reason, msg := mcpgroup.GroupRefCondition(c.groups, s.Namespace, s.Spec.GroupRef.Name)
	setCond(thv1.ConditionGroupRefValidated, st, reason, msg)
}

// resolveOIDC reads the referenced MCPOIDCConfig from its lister (never
// the API, never a write). ok is false when the server must wait: a proxy
// that should authenticate is not deployed without its configuration.
func (c *Controller) resolveOIDC(s *thv1.MCPServer, setCond func(string, metav1.ConditionStatus, string, string), status *thv1.MCPServerStatus) (*thv1.MCPOIDCConfig, bool) {
	ref := s.Spec.OIDCConfigRef
	if ref == nil {
		meta.RemoveStatusCondition(&status.Conditions, thv1.ConditionOIDCConfigRefValidated)
		status.OIDCConfigHash = ""
		return nil, true
	}
	cfg, err := c.oidcConfigs.MCPOIDCConfigs(s.Namespace).Get(ref.Name)
	if err != nil {
		cfg = nil
	}
	r := workload.CheckOIDCRef(ref, cfg)
	setCond(thv1.ConditionOIDCConfigRefValidated, r.Status, r.Reason, r.Message)
	if r.Usable() {
		status.OIDCConfigHash = r.Config.Status.ConfigHash
	}
	return r.Config, r.Usable()
}

// ensureChildren converges every child and returns the proxy Deployment.
// The RBAC and the RunConfig come before the Deployment so its first pod
// finds them.
func (c *Controller) ensureChildren(ctx context.Context, s *thv1.MCPServer, d *Desired) (*appsv1.Deployment, error) {
	w, ch, uid := c.writer, c.children, s.UID
	if _, err := controller.EnsureChild(ctx, w, ch.ServiceAccounts, d.RunnerServiceAccount, uid); err != nil {
		return nil, err
	}
	if _, err := controller.EnsureChild(ctx, w, ch.RoleBindings, d.RunnerRoleBinding, uid); err != nil {
		return nil, err
	}
	if d.BackendServiceAccount != nil {
		if _, err := controller.EnsureChild(ctx, w, ch.ServiceAccounts, d.BackendServiceAccount, uid); err != nil {
			return nil, err
		}
	}
	if _, err := controller.EnsureChild(ctx, w, ch.ConfigMaps, d.RunConfig, uid); err != nil {
		return nil, err
	}
	if _, err := controller.EnsureChild(ctx, w, ch.Services, d.Service, uid); err != nil {
		return nil, err
	}
	return controller.EnsureChild(ctx, w, ch.Deployments, d.Deployment, uid)
}

// processRestart honours a restart request once: a rolling restart stamps
// the pod template, an immediate one deletes the proxy pods; then the
// request is recorded as processed with an optimistic-lock patch.
func (c *Controller) processRestart(ctx context.Context, s *thv1.MCPServer, dep *appsv1.Deployment) error {
	logger := klog.FromContext(ctx)
	req := s.Annotations[AnnotationRestartedAt]
	last := s.Annotations[AnnotationLastProcessedRestart]
	if req == "" || req == last || dep == nil {
		return nil
	}
	reqT, err := time.Parse(time.RFC3339, req)
	if err != nil {
		logger.Info("Ignoring unparsable restart request", "annotation", AnnotationRestartedAt, "value", req, "err", err.Error())
		return nil
	}
	if lastT, err := time.Parse(time.RFC3339, last); err == nil && !reqT.After(lastT) {
		return nil
	}
	// Acting is idempotent: the Deployment records what was done, so a
	// retry after a failed record below does not restart the pods again.
	ns := s.Namespace
	switch s.Annotations[AnnotationRestartStrategy] {
	case RestartImmediate:
		if dep.Annotations[AnnotationRestartedAt] != req {
			selector := labels.SelectorFromSet(workload.Labels(App, s.Name)).String()
			if err := controller.DeleteCollection(ctx, c.writer, "pods", ns, c.kube.CoreV1().Pods(ns).DeleteCollection, selector); err != nil {
				return err
			}
			body := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, AnnotationRestartedAt, req)
			if err := controller.PatchChild(ctx, c.writer, "deployments", ns, dep.Name, dep.ResourceVersion, c.kube.AppsV1().Deployments(ns).Patch, body); err != nil {
				return err
			}
		}
	default:
		if dep.Spec.Template.Annotations[AnnotationRestartedAt] != req {
			body := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, AnnotationRestartedAt, req)
			if err := controller.PatchChild(ctx, c.writer, "deployments", ns, dep.Name, dep.ResourceVersion, c.kube.AppsV1().Deployments(ns).Patch, body); err != nil {
				return err
			}
		}
	}
	mod := s.DeepCopy()
	if mod.Annotations == nil {
		mod.Annotations = map[string]string{}
	}
	mod.Annotations[AnnotationLastProcessedRestart] = req
	_, err = controller.PatchObject(ctx, c.writer, resource, c.toolhive.ToolhiveV1beta1().MCPServers(ns).Patch, s, mod)
	return err
}

// finalize cleans up what the proxy runner created (which carries no owner
// reference to the server) and then releases the finalizer, in one sync.
func (c *Controller) finalize(ctx context.Context, s *thv1.MCPServer) error {
	if !slices.Contains(s.Finalizers, Finalizer) {
		return nil
	}
	ns := s.Namespace
	client := c.toolhive.ToolhiveV1beta1().MCPServers(ns)
	status := s.Status.DeepCopy()
	status.Phase, status.Message = thv1.MCPServerPhaseTerminating, "cleaning up"
	controller.SetCondition(&status.Conditions, c.clock, s.Generation, thv1.ConditionReady, metav1.ConditionFalse, ReasonTerminating, "MCPServer is being deleted")
	// The finalizer patch below is locked to a resourceVersion, which this
	// status write changes. The new one is taken from the API server's
	// answer, so that cleanup and release happen in this same sync instead
	// of depending on the write's watch event to bring the server back.
	current := s
	patchStatus := func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*thv1.MCPServer, error) {
		out, err := client.Patch(ctx, name, pt, data, opts, sub...)
		if err == nil {
			current = out
		}
		return out, err
	}
	if _, err := controller.PatchStatus(ctx, c.writer, resource, s, patchStatus, s.Status, status); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.deleteRunnerObjects(ctx, s); err != nil {
		return err
	}
	mod := current.DeepCopy()
	mod.Finalizers = slices.DeleteFunc(mod.Finalizers, func(f string) bool { return f == Finalizer })
	_, err := controller.PatchObject(ctx, c.writer, resource, client.Patch, current, mod)
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
	want := map[string]string{workload.LabelToolhive: "true", workload.LabelToolhiveName: n}
	leftAlone := func(kind, name, why string) {
		c.recorder.Eventf(s, corev1.EventTypeWarning, ReasonCleanupSkipped,
			"Left %s %s/%s in place: %s, so it is not what the proxy runner created for this MCPServer", kind, ns, name, why)
	}
	sts := c.kube.AppsV1().StatefulSets(ns)
	why, err := controller.DeleteLabelled(ctx, c.writer, "statefulsets", ns, runnerStatefulSetName(n), sts.Get, sts.Delete, want)
	if err != nil {
		return err
	}
	if why != "" {
		leftAlone("StatefulSet", runnerStatefulSetName(n), why)
	}
	svcs := c.kube.CoreV1().Services(ns)
	for _, name := range runnerServiceNames(n) {
		why, err := controller.DeleteLabelled(ctx, c.writer, "services", ns, name, svcs.Get, svcs.Delete, want)
		if err != nil {
			return err
		}
		if why != "" {
			leftAlone("Service", name, why)
		}
	}
	return nil
}
