package mcpremoteproxy

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// setCondFunc sets one condition of the status being built.
type setCondFunc func(condType string, status metav1.ConditionStatus, reason, message string)

// sync converges one MCPRemoteProxy. It is level-triggered: it recomputes
// the desired state from the listers and never depends on the event that
// woke it. A converged proxy costs no API call at all.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.proxies.MCPRemoteProxies(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Gone: garbage collection removes the children; forget them.
		c.writer.ForgetStatus(resource, ns, name)
		c.writer.ForgetChildren(ns, RunConfigName(name), RunnerName(name), name, ServiceName(name))
		return nil
	}
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("mcpremoteproxy", klog.KObj(cached))
	ctx = klog.NewContext(ctx, logger)

	status := cached.Status.DeepCopy()
	setCond := func(t string, st metav1.ConditionStatus, reason, msg string) {
		controller.SetCondition(&status.Conditions, c.clock, cached.Generation, t, st, reason, msg)
	}
	if cached.DeletionTimestamp != nil {
		// Another finalizer (or foreground deletion) holds the object;
		// garbage collection removes the children, nothing is left to do
		// but say so.
		status.Phase, status.Message = PhaseTerminating, "MCPRemoteProxy is being deleted"
		setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonTerminating, status.Message)
	} else {
		err = c.converge(ctx, cached, status, setCond)
		status.URL = URL(cached)
	}
	status.ObservedGeneration = cached.Generation
	if _, perr := controller.PatchStatus(ctx, c.writer, resource, cached, c.toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Patch, cached.Status, status); perr != nil && !apierrors.IsNotFound(perr) {
		return errors.Join(err, perr)
	}
	return err
}

// converge resolves references, builds the children, writes the ones that
// drifted, and fills status. Terminal user errors become conditions and
// events and return nil.
func (c *Controller) converge(ctx context.Context, p *thv1.MCPRemoteProxy, status *thv1.MCPRemoteProxyStatus, setCond setCondFunc) error {
	old := p.Status.Conditions
	warnOnFlip := func(condType, reason, msg string) {
		if workload.ConditionFlippedTo(old, status.Conditions, condType, metav1.ConditionFalse) {
			c.recorder.Event(p, corev1.EventTypeWarning, reason, msg)
		}
	}

	if g := p.Spec.GroupRef; g != nil && g.Name != "" {
		st, reason, msg := mcpgroup.GroupRefCondition(c.groups, p.Namespace, g.Name)
		setCond(thv1.ConditionGroupRefValidated, st, reason, msg)
	} else {
		meta.RemoveStatusCondition(&status.Conditions, thv1.ConditionGroupRefValidated)
	}

	var oidc *thv1.MCPOIDCConfig
	if ref := p.Spec.OIDCConfigRef; ref != nil {
		cfg, err := c.oidcConfigs.MCPOIDCConfigs(p.Namespace).Get(ref.Name)
		if err != nil {
			cfg = nil // a lister fails with NotFound only
		}
		r := workload.CheckOIDCRef(ref, cfg)
		setCond(thv1.ConditionOIDCConfigRefValidated, r.Status, r.Reason, r.Message)
		if !r.Usable() {
			status.Phase, status.Message = PhasePending, r.Message
			setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonWaitingForOIDC, r.Message)
			warnOnFlip(thv1.ConditionOIDCConfigRefValidated, r.Reason, r.Message)
			// The config's own events re-sync this proxy through the index.
			return nil
		}
		oidc = r.Config
		status.OIDCConfigHash = r.Config.Status.ConfigHash
	} else {
		meta.RemoveStatusCondition(&status.Conditions, thv1.ConditionOIDCConfigRefValidated)
		status.OIDCConfigHash = ""
	}

	desired, err := Build(Inputs{Proxy: p, OIDC: oidc, RunnerImage: c.runnerImage, RunnerClusterRole: c.runnerClusterRole,
		ServiceAccount: c.children.NamedServiceAccount(p.Namespace, p.Spec.ServiceAccount)})
	var invalid *workload.InvalidSpecError
	if errors.As(err, &invalid) {
		setCond(thv1.ConditionReady, metav1.ConditionFalse, invalid.Reason, invalid.Message)
		status.Phase, status.Message = PhaseFailed, invalid.Message
		warnOnFlip(thv1.ConditionReady, invalid.Reason, invalid.Message)
		// Retrying cannot fix user input; the next spec change will.
		return nil
	}
	if err != nil {
		return err
	}

	dep, err := c.ensureChildren(ctx, p, desired)
	var conflict *controller.ChildConflictError
	if errors.As(err, &conflict) {
		setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonChildConflict, conflict.Error())
		status.Phase, status.Message = PhaseFailed, conflict.Error()
		warnOnFlip(thv1.ConditionReady, ReasonChildConflict, conflict.Error())
		return controller.RequeueAfter(conflictRetry)
	}
	if err != nil {
		return err
	}
	phase, ready, reason, msg := deploymentPhase(dep)
	status.Phase, status.Message = phase, msg
	setCond(thv1.ConditionReady, ready, reason, msg)
	return nil
}

// ensureChildren converges every child and returns the proxy Deployment.
// The RBAC and the RunConfig come before the Deployment so its first pod
// finds them. When the spec names its own service account, the runner
// binding and account left from before are deleted: nothing should keep
// granting the runner's permissions to an account no pod uses. (A Role an
// older hivekeeper created for the runner is left to garbage collection:
// once its binding is gone it grants nothing, and hivekeeper no longer
// holds any permission on Roles.)
func (c *Controller) ensureChildren(ctx context.Context, p *thv1.MCPRemoteProxy, d *Desired) (*appsv1.Deployment, error) {
	w, ch, uid, ns := c.writer, c.children, p.UID, p.Namespace
	if d.RunnerServiceAccount != nil {
		if _, err := controller.EnsureChild(ctx, w, ch.ServiceAccounts, d.RunnerServiceAccount, uid); err != nil {
			return nil, err
		}
		if _, err := controller.EnsureChild(ctx, w, ch.RoleBindings, d.RunnerRoleBinding, uid); err != nil {
			return nil, err
		}
	}
	if _, err := controller.EnsureChild(ctx, w, ch.ConfigMaps, d.RunConfig, uid); err != nil {
		return nil, err
	}
	if _, err := controller.EnsureChild(ctx, w, ch.Services, d.Service, uid); err != nil {
		return nil, err
	}
	dep, err := controller.EnsureChild(ctx, w, ch.Deployments, d.Deployment, uid)
	if err != nil {
		return nil, err
	}
	if d.RunnerServiceAccount == nil {
		// After the Deployment points at the user's account, so no pod is
		// left without the permissions it runs with.
		rn := RunnerName(p.Name)
		if err := controller.DeleteStaleChild(ctx, w, ch.RoleBindings, ns, rn, uid); err != nil {
			return nil, err
		}
		if err := controller.DeleteStaleChild(ctx, w, ch.ServiceAccounts, ns, rn, uid); err != nil {
			return nil, err
		}
	}
	return dep, nil
}
