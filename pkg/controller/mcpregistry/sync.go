package mcpregistry

import (
	"context"
	"errors"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	typedthv1 "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/typed/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/registry"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// conflictRetry is how long the controller waits before looking again at
// a child another controller owns: reported, not hot-looped.
const conflictRetry = time.Minute

// sync converges one MCPRegistry: the deprecation warning of a spec
// change, the finalizer, the children, one status write. It is
// level-triggered, and a converged registry costs no API call.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	r, err := c.registries.MCPRegistries(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.DeferBehind(c.writer, key, r) {
		return nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("mcpregistry", klog.KObj(r)))
	if r.DeletionTimestamp != nil {
		return c.finalize(ctx, r)
	}
	// Once per spec change: the status written below records the
	// generation.
	if r.Generation != r.Status.ObservedGeneration {
		c.recorder.Event(r, corev1.EventTypeWarning, thv1.ReasonMCPRegistryDeprecated, deprecationMessage)
	}
	if _, err := framework.EnsureFinalizer(ctx, c.writer, resource, c.client(r.Namespace).Patch, r, thv1.MCPRegistryFinalizer); err != nil {
		return err
	}
	status := r.Status.DeepCopy()
	status.ObservedGeneration = r.Generation
	requeueAfter, err := c.converge(ctx, r, status)
	if _, perr := framework.PatchStatus(ctx, c.writer, resource, r, c.client(r.Namespace).Patch, r.Status, status); perr != nil {
		if apierrors.IsNotFound(perr) {
			return nil
		}
		return errors.Join(err, perr)
	}
	if requeueAfter > 0 {
		c.EnqueueAfter(key, requeueAfter)
	}
	return err
}

// deprecationMessage is ToolHive's text of the MCPRegistryDeprecated event.
const deprecationMessage = "The MCPRegistry CRD is deprecated and will be removed in a future release; " +
	"install the ToolHive registry server via the toolhive-registry-server Helm chart " +
	"(https://github.com/stacklok/toolhive-registry-server) instead"

func (c *Controller) client(ns string) typedthv1.MCPRegistryInterface {
	return c.toolhive.ToolhiveV1beta1().MCPRegistries(ns)
}

// converge builds the children, writes what drifted, and derives the
// phase into status. A spec ToolHive's operator refuses leaves the
// children as they are (phase Failed, not retried: the next spec change is
// synced anyway); a child another controller owns is looked at again in a
// minute; a write the API server refused is retried with backoff.
func (c *Controller) converge(ctx context.Context, r *thv1.MCPRegistry, status *thv1.MCPRegistryStatus) (time.Duration, error) {
	out, err := registry.Build(r, registry.Input{Image: c.config.RegistryAPIImage, ClusterRole: c.config.Runners.WithDefaults().RegistryAPI, PullSecrets: c.config.PullSecrets,
		TemplateServiceAccount: workload.NamedServiceAccount(c.serviceAccounts, r.Namespace, wiring.PodTemplateServiceAccount(r.Spec.PodTemplateSpec))})
	var invalid *wiring.InvalidSpecError
	if errors.As(err, &invalid) {
		condition := invalid.Condition
		if condition != thv1.ConditionPodTemplateValid {
			condition = thv1.ConditionReady
		}
		framework.SetCondition(&status.Conditions, c.clock, r.Generation, condition, metav1.ConditionFalse, invalid.Reason, invalid.Message)
		klog.FromContext(ctx).Info("Invalid spec, leaving the children untouched", "reason", invalid.Message)
		c.fail(r, status, invalid.Reason, invalid.Message, invalid.Message)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if r.Spec.PodTemplateSpec != nil {
		framework.SetCondition(&status.Conditions, c.clock, r.Generation, thv1.ConditionPodTemplateValid, metav1.ConditionTrue,
			thv1.ReasonPodTemplateValid, "PodTemplateSpec is valid")
	} else {
		meta.RemoveStatusCondition(&status.Conditions, thv1.ConditionPodTemplateValid)
	}
	dep, err := c.ensure(ctx, r.UID, out)
	var conflict *framework.ChildConflictError
	var write *framework.ChildWriteError
	switch {
	case errors.As(err, &conflict):
		c.notReady(r, status, childReason(conflict.Resource), conflict.Error(), conflict.Error())
		return conflictRetry, nil
	case apierrors.IsConflict(err):
		// A child changed since it was read: retried from a fresh read,
		// the status says nothing.
		return 0, err
	case err != nil:
		reason := thv1.ReasonChildWriteFailed
		if errors.As(err, &write) {
			reason = childReason(write.Resource)
		}
		// The status does not quote the API server (its message can
		// change on every attempt); the event does.
		c.notReady(r, status, reason, framework.StableMessage(err), err.Error())
		return 0, err
	}
	status.ReadyReplicas = dep.Status.ReadyReplicas
	phase, ready, reason, message := deploymentPhase(dep)
	status.Phase, status.Message = phase, message
	// status.url is written once the API is ready and kept after, as
	// ToolHive's operator writes it.
	if ready == metav1.ConditionTrue {
		status.URL = naming.RegistryAPIURL(r)
	}
	framework.SetCondition(&status.Conditions, c.clock, r.Generation, thv1.ConditionReady, ready, reason, message)
	return 0, nil
}

// ensure converges the children in ToolHive's order: the configuration,
// the account and its permissions before the Deployment that uses them,
// then the Service. It returns the Deployment.
func (c *Controller) ensure(ctx context.Context, owner types.UID, out *registry.Output) (*appsv1.Deployment, error) {
	if _, err := framework.EnsureChild(ctx, c.writer, c.configMaps, out.ConfigMap, owner); err != nil {
		return nil, err
	}
	if _, err := framework.EnsureChild(ctx, c.writer, c.serviceAccounts, out.ServiceAccount, owner); err != nil {
		return nil, err
	}
	if _, err := framework.EnsureChild(ctx, c.writer, c.roleBindings, out.RoleBinding, owner); err != nil {
		return nil, err
	}
	dep, err := framework.EnsureChild(ctx, c.writer, c.deployments, out.Deployment, owner)
	if err != nil {
		return nil, err
	}
	_, err = framework.EnsureChild(ctx, c.writer, c.services, out.Service, owner)
	return dep, err
}

// fail sets phase Failed with message and records a Warning event when
// the phase or message is new, so a lasting problem is one event.
func (c *Controller) fail(r *thv1.MCPRegistry, status *thv1.MCPRegistryStatus, reason, message, event string) {
	status.Phase, status.Message = thv1.MCPRegistryPhaseFailed, message
	if r.Status.Phase != status.Phase || r.Status.Message != message {
		c.recorder.Event(r, corev1.EventTypeWarning, reason, event)
	}
}

// notReady is fail with Ready=False for reason, and no ready replicas.
func (c *Controller) notReady(r *thv1.MCPRegistry, status *thv1.MCPRegistryStatus, reason, message, event string) {
	status.ReadyReplicas = 0
	framework.SetCondition(&status.Conditions, c.clock, r.Generation, thv1.ConditionReady, metav1.ConditionFalse, reason, message)
	c.fail(r, status, reason, message, event)
}

// finalize marks the registry Terminating and releases ToolHive's
// finalizer, in one sync; garbage collection removes the children.
func (c *Controller) finalize(ctx context.Context, r *thv1.MCPRegistry) error {
	if !slices.Contains(r.Finalizers, thv1.MCPRegistryFinalizer) {
		return nil
	}
	status := r.Status.DeepCopy()
	status.Phase, status.Message = thv1.MCPRegistryPhaseTerminating, "MCPRegistry is being terminated"
	framework.SetCondition(&status.Conditions, c.clock, r.Generation, thv1.ConditionReady, metav1.ConditionFalse, thv1.ReasonRegistryNotReady, status.Message)
	_, err := framework.ReleaseFinalizer(ctx, c.writer, resource, c.client(r.Namespace).Patch, r, thv1.MCPRegistryFinalizer, r.Status, status, nil)
	return err
}
