package virtualmcpserver

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// sync converges one VirtualMCPServer. It is level-triggered: it
// recomputes the desired state from the listers and never depends on the
// event that woke it. A converged server costs no API call at all.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	v, err := c.servers.VirtualMCPServers(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Gone: garbage collection removes the children.
		return nil
	}
	if err != nil {
		return err
	}
	if v.DeletionTimestamp != nil {
		// Garbage collection removes the children; writing them now would
		// only race it.
		return nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("virtualmcpserver", klog.KObj(v)))
	status, requeueAfter, err := c.reconcile(ctx, v)
	err = workload.FinishSync(ctx, c.Base, resource, key, v, c.toolhive.ToolhiveV1beta1().VirtualMCPServers(v.Namespace).Patch, v.Status, status, requeueAfter, err)
	if apierrors.IsNotFound(err) {
		// Deleted while this sync ran.
		return nil
	}
	return err
}

// reconcile resolves references and the group's members, builds the
// children, writes the ones that drifted, and returns the status to write.
// User errors become conditions and events, and are not retried.
func (c *Controller) reconcile(ctx context.Context, v *thv1.VirtualMCPServer) (*thv1.VirtualMCPServerStatus, time.Duration, error) {
	status := v.Status.DeepCopy()
	status.ObservedGeneration = v.Generation
	status.URL = URL(v)
	r := c.NewReport(v, &status.Conditions, &status.Phase, &status.Message)

	// A missing group is reported, not fatal: backends are declared by the
	// MCPServers, and the group's creation re-syncs this server.
	groupFound := c.ResolveGroup(r, v.Namespace, v.Spec.GroupRef.Name)
	var ref *thv1.OIDCConfigReference
	if v.Spec.IncomingAuth.Type == thv1.IncomingAuthOIDC {
		ref = v.Spec.IncomingAuth.OIDCConfigRef
	}
	oidc, hash, ok := c.ResolveOIDC(r, v.Namespace, ref)
	status.OIDCConfigHash = hash
	if !ok {
		return status, 0, nil
	}
	backends, err := c.members.ByIndex(index.ByGroup, index.Key(v.Namespace, v.Spec.GroupRef.Name))
	if err != nil {
		return status, 0, err
	}
	in := inputs{Server: v, OIDC: oidc, Image: c.Config.VMCPImage, ServiceAccount: c.Children.NamedServiceAccount(v.Namespace, v.Spec.ServiceAccount)}
	for _, o := range backends {
		if s, ok := o.(*thv1.MCPServer); ok {
			in.Backends = append(in.Backends, s)
		}
	}
	desired, err := build(in)
	if err == nil {
		r.Set(thv1.ConditionPodTemplateValid, metav1.ConditionTrue, thv1.ReasonPodTemplateValid, "pod template spec is valid")
		if len(desired.Backends) == 0 {
			// vmcp given no backends switches to discovering them through
			// the Kubernetes API, which it has no access to. Nothing is
			// written; the first member's event re-syncs this server
			// through the index.
			r.Pending(thv1.ReasonNoBackends, fmt.Sprintf("MCPGroup %q has no MCPServers to aggregate; the vMCP is deployed once it has one", v.Spec.GroupRef.Name))
			return status, 0, nil
		}
	}
	var dep *appsv1.Deployment
	if err == nil {
		dep, err = c.ensureChildren(ctx, v, desired)
	}
	requeueAfter, err := c.Settle(ctx, r, err)
	if dep != nil && err == nil && requeueAfter == 0 {
		r.Ready(deploymentPhase(dep, groupFound, v.Spec.GroupRef.Name, len(desired.Backends)))
	}
	return status, requeueAfter, err
}

// ensureChildren converges every child and returns the Deployment. The
// ServiceAccount and the configuration come first so the first pod finds
// them; a ServiceAccount hivekeeper created before the spec named its own
// is deleted once the Deployment no longer uses it.
func (c *Controller) ensureChildren(ctx context.Context, v *thv1.VirtualMCPServer, d *childSet) (*appsv1.Deployment, error) {
	w, ch, uid := c.Writer, c.Children, v.UID
	if d.ServiceAccount != nil {
		if _, err := controller.EnsureChild(ctx, w, ch.ServiceAccounts, d.ServiceAccount, uid); err != nil {
			return nil, err
		}
	}
	if _, err := controller.EnsureChild(ctx, w, ch.ConfigMaps, d.Config, uid); err != nil {
		return nil, err
	}
	if _, err := controller.EnsureChild(ctx, w, ch.Services, d.Service, uid); err != nil {
		return nil, err
	}
	dep, err := controller.EnsureChild(ctx, w, ch.Deployments, d.Deployment, uid)
	if err != nil {
		return nil, err
	}
	if d.ServiceAccount == nil {
		if err := controller.DeleteStaleChild(ctx, w, ch.ServiceAccounts, v.Namespace, workload.VMCPServiceAccountName(v.Name), uid); err != nil {
			return nil, err
		}
	}
	return dep, nil
}
