package mcpserverentry

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// sync recomputes one entry's status from the listers and writes it when
// it changed. A failed check is the user's to fix: it is reported (one
// Warning event when Valid turns False) and not retried; the named
// object's own events re-sync the entry through the index.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	e, err := c.entries.MCPServerEntries(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.DeferBehind(c.writer, key, e) {
		return nil
	}
	if e.DeletionTimestamp != nil {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("mcpserverentry", klog.KObj(e))
	ctx = klog.NewContext(ctx, logger)

	var o observed
	if name := groupName(e); name != "" {
		if g, err := c.groups.MCPGroups(e.Namespace).Get(name); err == nil {
			o.group = g
		}
	}
	if ref := e.Spec.ExternalAuthConfigRef; ref != nil && ref.Name != "" {
		o.authConfigSet = true
		_, err := workload.ExternalAuthConfigs.Get(c.authCfgs, e.Namespace, ref.Name)
		o.authConfig = err == nil
	}
	if ref := e.Spec.CABundleRef; ref != nil && ref.ConfigMapRef != nil {
		b, err := workload.LookupCABundle(e.Namespace, ref, c.configMap)
		if err != nil {
			return err
		}
		o.caBundle = b.Found
	}
	status, invalid := desiredStatus(e, o, c.clock)
	if equality.Semantic.DeepEqual(&e.Status, status) {
		c.writer.Skipped(resource + "/status")
		return nil
	}
	if _, err := framework.PatchStatus(ctx, c.writer, resource, e,
		c.client.ToolhiveV1beta1().MCPServerEntries(e.Namespace).Patch, e.Status, status); err != nil {
		return err
	}
	if invalid != "" && !meta.IsStatusConditionFalse(e.Status.Conditions, thv1.ConditionValid) {
		c.recorder.Event(e, corev1.EventTypeWarning, thv1.ReasonEntryInvalid, invalid)
		logger.V(2).Info("Entry is invalid", "reason", invalid)
	}
	return nil
}
