package mcpoidcconfig

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

// Condition messages.
const (
	msgValid = "configuration is valid"
)

// sync converges one MCPOIDCConfig. It is level-triggered: the finalizer,
// the referrer list and the conditions are all derived from the lister and
// the reference index, whatever event woke it. At steady state it sends
// nothing. An invalid spec is reported and returns nil: retrying cannot fix
// it, the next spec change will.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	ns := key.Namespace
	cached, err := c.lister.MCPOIDCConfigs(ns).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("mcpoidcconfig", klog.KObj(cached))
	ctx = klog.NewContext(ctx, logger)

	refs, err := c.referrers(key.String())
	if err != nil {
		metrics.ReferencingWorkloadsRecomputes.WithLabelValues(recomputeError).Inc()
		return err
	}
	if slices.Equal(refs, cached.Status.ReferencingWorkloads) {
		metrics.ReferencingWorkloadsRecomputes.WithLabelValues(recomputeUnchanged).Inc()
	} else {
		metrics.ReferencingWorkloadsRecomputes.WithLabelValues(recomputeChanged).Inc()
	}

	client := c.client.ToolhiveV1beta1().MCPOIDCConfigs(ns)
	deleting := cached.DeletionTimestamp != nil
	hasFinalizer := slices.Contains(cached.Finalizers, finalizer)

	switch {
	case !deleting && !hasFinalizer:
		// Added before anything else so that a config cannot be deleted
		// between a workload starting to use it and this controller
		// noticing. The status patch below is not locked, so the new
		// resourceVersion does not matter to it.
		modified := cached.DeepCopy()
		modified.Finalizers = append(modified.Finalizers, finalizer)
		if _, err := controller.PatchObject(ctx, c.writer, resource, client.Patch, cached, modified); err != nil {
			return err
		}
		hasFinalizer = true
	case deleting && hasFinalizer && len(refs) == 0:
		modified := cached.DeepCopy()
		modified.Finalizers = slices.DeleteFunc(modified.Finalizers, func(f string) bool { return f == finalizer })
		if _, err := controller.PatchObject(ctx, c.writer, resource, client.Patch, cached, modified); err != nil {
			return err
		}
		logger.V(2).Info("Released finalizer, no workload references the config")
		if len(modified.Finalizers) == 0 {
			// The API server removes the object now; a status patch
			// would only race it to a 404.
			return nil
		}
		hasFinalizer = false
	}
	blocked := deleting && hasFinalizer && len(refs) > 0

	status, invalid, err := c.desiredStatus(cached, refs, blocked)
	if err != nil {
		return err
	}
	// The typed comparison settles the steady state cheaply; computing a
	// merge patch of a status listing many workloads costs 20 times more.
	if equality.Semantic.DeepEqual(&cached.Status, status) {
		c.writer.Skipped(resource + "/status")
	} else if _, err := controller.PatchStatus(ctx, c.writer, resource, cached, client.Patch, cached.Status, status); err != nil {
		return err
	}

	// Events follow a successful write, so a retried sync cannot emit the
	// same transition twice; they fire only when the condition turns.
	if invalid != "" && !meta.IsStatusConditionFalse(cached.Status.Conditions, thv1.ConditionValid) {
		c.recorder.Event(cached, corev1.EventTypeWarning, eventReasonConfigInvalid, invalid)
	}
	if blocked && !meta.IsStatusConditionTrue(cached.Status.Conditions, thv1.ConditionDeletionBlocked) {
		c.recorder.Event(cached, corev1.EventTypeWarning, eventReasonDeletionBlocked, "Deletion blocked: "+blockedMessage(refs))
	}
	if invalid != "" {
		logger.V(2).Info("Config is invalid", "reason", invalid)
	}
	return nil
}

// desiredStatus builds the new status from the one as read, so that
// conditions written by others survive the merge patch (which replaces the
// whole conditions array). invalid is the validation message, empty when
// the spec is valid.
//
// DeletionBlocked exists only while a deletion is actually blocked: it is
// removed otherwise, including while referrers exist but nobody is
// deleting the config, so that a config in normal use carries no condition
// that suggests a deletion.
func (c *Controller) desiredStatus(cached *thv1.MCPOIDCConfig, refs []thv1.WorkloadReference, blocked bool) (*thv1.MCPOIDCConfigStatus, string, error) {
	status := cached.Status.DeepCopy()
	gen := cached.Generation

	hash, err := configHash(&cached.Spec)
	if err != nil {
		return nil, "", err
	}
	status.ObservedGeneration = gen
	status.ConfigHash = hash
	status.ReferencingWorkloads = refs
	status.ReferenceCount = int32(len(refs))

	var invalid string
	if errs := validate(&cached.Spec); len(errs) > 0 {
		invalid = strings.Join(errs, "; ")
		controller.SetCondition(&status.Conditions, c.clock, gen, thv1.ConditionValid, metav1.ConditionFalse, thv1.ReasonConfigInvalid, invalid)
	} else {
		controller.SetCondition(&status.Conditions, c.clock, gen, thv1.ConditionValid, metav1.ConditionTrue, thv1.ReasonConfigValid, msgValid)
	}
	if blocked {
		controller.SetCondition(&status.Conditions, c.clock, gen, thv1.ConditionDeletionBlocked, metav1.ConditionTrue, thv1.ReasonReferencedByWorkloads, blockedMessage(refs))
	} else {
		meta.RemoveStatusCondition(&status.Conditions, thv1.ConditionDeletionBlocked)
	}
	return status, invalid, nil
}

// blockedMessage names the referrers that hold a deletion.
func blockedMessage(refs []thv1.WorkloadReference) string {
	return "referenced by " + referrerList(refs)
}
