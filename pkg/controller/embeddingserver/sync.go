package embeddingserver

import (
	"context"
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	typedthv1 "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/typed/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/embedding"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// conflictRetry is how long the controller waits before looking again at
// a child another controller owns: reported, not hot-looped.
const conflictRetry = time.Minute

// sync converges one EmbeddingServer: finalizer, children, one status
// write. It is level-triggered, and a converged server costs no API call.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	e, err := c.servers.EmbeddingServers(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.DeferBehind(c.writer, key, e) {
		return nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("embeddingserver", klog.KObj(e)))
	if e.DeletionTimestamp != nil {
		return c.finalize(ctx, e)
	}
	// The finalizer is ToolHive's, added as its operator adds it; the
	// children do not depend on it, so the sync goes on.
	if _, err := framework.EnsureFinalizer(ctx, c.writer, resource, c.client(e.Namespace).Patch, e, thv1.EmbeddingServerFinalizer); err != nil {
		return err
	}
	status := e.Status.DeepCopy()
	status.URL = naming.EmbeddingServerURL(e)
	status.ObservedGeneration = e.Generation
	requeueAfter, err := c.converge(ctx, e, status)
	if _, perr := framework.PatchStatus(ctx, c.writer, resource, e, c.client(e.Namespace).Patch, e.Status, status); perr != nil {
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

func (c *Controller) client(ns string) typedthv1.EmbeddingServerInterface {
	return c.toolhive.ToolhiveV1beta1().EmbeddingServers(ns)
}

// converge builds the StatefulSet and Service, writes what drifted, and
// derives the phase into status. A spec no child can be built from leaves
// the children as they are (phase Failed, not retried: the next spec
// change is synced anyway); a child another controller owns is looked at
// again in a minute; a write the API server refused is retried with
// backoff.
func (c *Controller) converge(ctx context.Context, e *thv1.EmbeddingServer, status *thv1.EmbeddingServerStatus) (time.Duration, error) {
	out, err := embedding.Build(e, c.pullSecrets, workload.NamedServiceAccount(c.accounts, e.Namespace, wiring.PodTemplateServiceAccount(e.Spec.PodTemplateSpec)))
	var invalid *wiring.InvalidSpecError
	if errors.As(err, &invalid) {
		if invalid.Condition == thv1.ConditionPodTemplateValid {
			framework.SetCondition(&status.Conditions, c.clock, e.Generation, thv1.ConditionPodTemplateValid, metav1.ConditionFalse, invalid.Reason, invalid.Message)
		}
		klog.FromContext(ctx).Info("Invalid spec, leaving the children untouched", "reason", invalid.Message)
		c.fail(e, status, invalid.Reason, invalid.Message, invalid.Message)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	msg := "No PodTemplateSpec provided"
	if e.Spec.PodTemplateSpec != nil {
		msg = "PodTemplateSpec is valid"
	}
	framework.SetCondition(&status.Conditions, c.clock, e.Generation, thv1.ConditionPodTemplateValid, metav1.ConditionTrue, thv1.ReasonPodTemplateValid, msg)

	var sts *appsv1.StatefulSet
	sts, err = framework.EnsureChild(ctx, c.writer, c.statefulSets, out.StatefulSet, e.UID)
	if err == nil {
		_, err = framework.EnsureChild(ctx, c.writer, c.services, out.Service, e.UID)
	}
	var conflict *framework.ChildConflictError
	switch {
	case errors.As(err, &conflict):
		c.fail(e, status, thv1.ReasonChildConflict, conflict.Error(), conflict.Error())
		return conflictRetry, nil
	case apierrors.IsConflict(err):
		// A child changed since it was read: retried from a fresh read,
		// the status says nothing.
		return 0, err
	case err != nil:
		// The status does not quote the API server (its message can
		// change on every attempt); the event does.
		c.fail(e, status, thv1.ReasonChildWriteFailed, framework.StableMessage(err), err.Error())
		return 0, err
	}
	status.Phase, status.Message, status.ReadyReplicas = statefulSetPhase(sts)
	return 0, nil
}

// fail sets phase Failed with message, and records a Warning event when
// the phase or message is new, so a lasting problem is one event.
func (c *Controller) fail(e *thv1.EmbeddingServer, status *thv1.EmbeddingServerStatus, reason, message, event string) {
	status.Phase, status.Message = thv1.EmbeddingServerPhaseFailed, message
	if e.Status.Phase != status.Phase || e.Status.Message != message {
		c.recorder.Event(e, corev1.EventTypeWarning, reason, event)
	}
}

// finalize marks the server Terminating and releases ToolHive's
// finalizer, in one sync; garbage collection removes the children.
func (c *Controller) finalize(ctx context.Context, e *thv1.EmbeddingServer) error {
	status := e.Status.DeepCopy()
	status.Phase = thv1.EmbeddingServerPhaseTerminating
	released, err := framework.ReleaseFinalizer(ctx, c.writer, resource, c.client(e.Namespace).Patch, e, thv1.EmbeddingServerFinalizer, e.Status, status, nil)
	if err != nil || !released {
		return err
	}
	c.recorder.Event(e, corev1.EventTypeNormal, thv1.ReasonEmbeddingServerDeleted, "EmbeddingServer has been finalized")
	return nil
}
