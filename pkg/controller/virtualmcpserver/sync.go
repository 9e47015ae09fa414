package virtualmcpserver

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// conflictRetry is how long a sync waits before looking again at a child
// another controller owns; the conflict is reported, not hot-looped.
const conflictRetry = time.Minute

// setCondFunc sets one condition of the status being built.
type setCondFunc func(condType string, status metav1.ConditionStatus, reason, message string)

// sync converges one VirtualMCPServer. It is level-triggered: it recomputes
// the desired state from the listers and never depends on the event that
// woke it. A converged server costs no API call at all.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.servers.VirtualMCPServers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Gone: garbage collection removes the children; forget them.
		c.writer.ForgetStatus(resource, ns, name)
		c.writer.ForgetChildren(ns, ConfigMapName(name), OwnServiceAccountName(name), name, ServiceName(name))
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp != nil {
		// Garbage collection removes the children; writing them now would
		// only race it.
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("virtualmcpserver", klog.KObj(cached))
	ctx = klog.NewContext(ctx, logger)

	status := cached.Status.DeepCopy()
	setCond := func(t string, st metav1.ConditionStatus, reason, msg string) {
		controller.SetCondition(&status.Conditions, c.clock, cached.Generation, t, st, reason, msg)
	}
	err = c.converge(ctx, cached, status, setCond)
	status.ObservedGeneration = cached.Generation
	status.URL = URL(cached)
	if _, perr := controller.PatchStatus(ctx, c.writer, resource, cached, c.toolhive.ToolhiveV1beta1().VirtualMCPServers(ns).Patch, cached.Status, status); perr != nil && !apierrors.IsNotFound(perr) {
		return errors.Join(err, perr)
	}
	return err
}

// converge resolves references, builds the children, writes the ones that
// drifted, and fills status. Terminal user errors become conditions and
// events and return nil.
func (c *Controller) converge(ctx context.Context, v *thv1.VirtualMCPServer, status *thv1.VirtualMCPServerStatus, setCond setCondFunc) error {
	logger := klog.FromContext(ctx)
	old := v.Status.Conditions
	warnOnFlip := func(condType, reason, msg string) {
		if workload.ConditionFlippedTo(old, status.Conditions, condType, metav1.ConditionFalse) {
			c.recorder.Event(v, corev1.EventTypeWarning, reason, msg)
		}
	}

	// A missing group is reported, not fatal: backends are declared by the
	// MCPServers, and the group's creation re-syncs this server.
	groupSt, groupReason, groupMsg := mcpgroup.GroupRefCondition(c.groups, v.Namespace, v.Spec.GroupRef.Name)
	setCond(thv1.ConditionGroupRefValidated, groupSt, groupReason, groupMsg)

	var oidc *thv1.MCPOIDCConfig
	if ref := v.Spec.IncomingAuth.OIDCConfigRef; v.Spec.IncomingAuth.Type == thv1.IncomingAuthOIDC && ref != nil {
		cfg, err := c.oidcConfigs.MCPOIDCConfigs(v.Namespace).Get(ref.Name)
		if err != nil {
			cfg = nil // a lister fails with NotFound only
		}
		r := workload.CheckOIDCRef(ref, cfg)
		setCond(thv1.ConditionOIDCConfigRefValidated, r.Status, r.Reason, r.Message)
		if !r.Usable() {
			status.Phase, status.Message = thv1.VirtualMCPServerPhasePending, r.Message
			setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonWaitingForOIDC, r.Message)
			warnOnFlip(thv1.ConditionOIDCConfigRefValidated, r.Reason, r.Message)
			// The config's own events re-sync this server through the index.
			return nil
		}
		oidc = r.Config
		status.OIDCConfigHash = r.Config.Status.ConfigHash
	} else {
		meta.RemoveStatusCondition(&status.Conditions, thv1.ConditionOIDCConfigRefValidated)
		status.OIDCConfigHash = ""
	}

	backends, err := c.members.ByIndex(index.ByGroup, index.Key(v.Namespace, v.Spec.GroupRef.Name))
	if err != nil {
		return err
	}
	in := Inputs{Server: v, OIDC: oidc, Image: c.image, ServiceAccount: c.children.NamedServiceAccount(v.Namespace, v.Spec.ServiceAccount)}
	for _, o := range backends {
		if s, ok := o.(*thv1.MCPServer); ok {
			in.Backends = append(in.Backends, s)
		}
	}

	desired, err := Build(in)
	var invalid *workload.InvalidSpecError
	if errors.As(err, &invalid) {
		// Nothing is written: a Deployment rolled with some volumes
		// missing would be worse than the one that is running.
		if invalid.Condition == thv1.ConditionPodTemplateValid {
			logger.Info("Pod volumes cannot be resolved, leaving the live Deployment untouched", "reason", invalid.Message)
			setCond(thv1.ConditionPodTemplateValid, metav1.ConditionFalse, invalid.Reason, invalid.Message)
		} else {
			logger.Info("Invalid spec, leaving the children untouched", "reason", invalid.Message)
		}
		setCond(thv1.ConditionReady, metav1.ConditionFalse, invalid.Reason, invalid.Message)
		status.Phase, status.Message = thv1.VirtualMCPServerPhaseFailed, invalid.Message
		warnOnFlip(thv1.ConditionReady, invalid.Reason, invalid.Message)
		// Retrying cannot fix user input; the next spec change will.
		return nil
	}
	if err != nil {
		return err
	}
	setCond(thv1.ConditionPodTemplateValid, metav1.ConditionTrue, ReasonPodTemplateValid, "pod template spec is valid")
	if len(desired.Backends) == 0 {
		// vmcp given no backends switches to discovering them through the
		// Kubernetes API, which it has no access to. Nothing is written;
		// the first member's event re-syncs this server through the index.
		msg := fmt.Sprintf("MCPGroup %q has no MCPServers to aggregate; the vMCP is deployed once it has one", v.Spec.GroupRef.Name)
		setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonNoBackends, msg)
		status.Phase, status.Message = thv1.VirtualMCPServerPhasePending, msg
		return nil
	}

	dep, err := c.ensureChildren(ctx, v, desired)
	var conflict *controller.ChildConflictError
	if errors.As(err, &conflict) {
		setCond(thv1.ConditionReady, metav1.ConditionFalse, ReasonChildConflict, conflict.Error())
		status.Phase, status.Message = thv1.VirtualMCPServerPhaseFailed, conflict.Error()
		warnOnFlip(thv1.ConditionReady, ReasonChildConflict, conflict.Error())
		return controller.RequeueAfter(conflictRetry)
	}
	if err != nil {
		return err
	}
	phase, ready, reason, msg := deploymentPhase(dep, groupSt == metav1.ConditionTrue, v.Spec.GroupRef.Name, len(desired.Backends))
	status.Phase, status.Message = phase, msg
	setCond(thv1.ConditionReady, ready, reason, msg)
	return nil
}

// ensureChildren converges every child and returns the Deployment. The
// ServiceAccount and the configuration come first so the first pod finds
// them; a ServiceAccount hivekeeper created before the spec named its own
// is deleted once the Deployment no longer uses it.
func (c *Controller) ensureChildren(ctx context.Context, v *thv1.VirtualMCPServer, d *Desired) (*appsv1.Deployment, error) {
	w, ch, uid := c.writer, c.children, v.UID
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
		if err := controller.DeleteStaleChild(ctx, w, ch.ServiceAccounts, v.Namespace, OwnServiceAccountName(v.Name), uid); err != nil {
			return nil, err
		}
	}
	return dep, nil
}
