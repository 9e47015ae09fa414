package mcpremoteproxy

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// sync converges one MCPRemoteProxy. It is level-triggered: it recomputes
// the desired state from the listers and never depends on the event that
// woke it. A converged proxy costs no API call at all.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	p, err := c.proxies.MCPRemoteProxies(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Gone: garbage collection removes the children.
		return nil
	}
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("mcpremoteproxy", klog.KObj(p)))
	status, requeueAfter, err := c.reconcile(ctx, p)
	err = workload.FinishSync(ctx, c.Base, resource, key, p, c.toolhive.ToolhiveV1beta1().MCPRemoteProxies(p.Namespace).Patch, p.Status, status, requeueAfter, err)
	if apierrors.IsNotFound(err) {
		// Deleted while this sync ran.
		return nil
	}
	return err
}

// reconcile resolves references, builds the children, writes the ones that
// drifted, and returns the status to write. User errors become conditions
// and events, and are not retried.
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
	status.URL = URL(p)
	c.ResolveGroup(r, p.Namespace, workload.GroupName(p.Spec.GroupRef))
	oidc, hash, ok := c.ResolveOIDC(r, p.Namespace, p.Spec.OIDCConfigRef)
	status.OIDCConfigHash = hash
	if !ok {
		return status, 0, nil
	}
	dep, err := c.converge(ctx, p, oidc)
	requeueAfter, err := c.Settle(ctx, r, err)
	if dep != nil && err == nil && requeueAfter == 0 {
		r.Ready(deploymentPhase(dep))
	}
	return status, requeueAfter, err
}

// converge builds the children and writes the ones that drifted; it
// returns the proxy Deployment.
func (c *Controller) converge(ctx context.Context, p *thv1.MCPRemoteProxy, oidc *thv1.MCPOIDCConfig) (*appsv1.Deployment, error) {
	desired, err := build(inputs{Proxy: p, OIDC: oidc, RunnerImage: c.Config.RunnerImage,
		RunnerClusterRole: c.Config.Runners.WithDefaults().RemoteProxyRunner,
		ServiceAccount:    c.Children.NamedServiceAccount(p.Namespace, p.Spec.ServiceAccount)})
	if err != nil {
		return nil, err
	}
	return c.ensureChildren(ctx, p, desired)
}

// ensureChildren converges every child and returns the proxy Deployment.
// The RBAC and the RunConfig come before the Deployment so its first pod
// finds them. When the spec names its own service account, the runner
// binding and account left from before are deleted: nothing should keep
// granting the runner's permissions to an account no pod uses. (A Role an
// older hivekeeper created for the runner is left to garbage collection:
// once its binding is gone it grants nothing, and hivekeeper no longer
// holds any permission on Roles.)
func (c *Controller) ensureChildren(ctx context.Context, p *thv1.MCPRemoteProxy, d *childSet) (*appsv1.Deployment, error) {
	w, ch, uid, ns := c.Writer, c.Children, p.UID, p.Namespace
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
		rn := workload.RemoteProxyRunnerName(p.Name)
		if err := controller.DeleteStaleChild(ctx, w, ch.RoleBindings, ns, rn, uid); err != nil {
			return nil, err
		}
		if err := controller.DeleteStaleChild(ctx, w, ch.ServiceAccounts, ns, rn, uid); err != nil {
			return nil, err
		}
	}
	return dep, nil
}
