package workload

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// ResolveGroup sets the GroupRefValidated condition of a workload that
// names MCPGroup group ("" removes the condition) and reports whether the
// group exists. A missing group is reported, never fatal: membership is
// declared by the workload, not granted by the group, and the group's
// creation re-syncs the workload (MemberHandler).
func (b *Base) ResolveGroup(r *Report, namespace, group string) bool {
	if group == "" {
		r.Remove(thv1.ConditionGroupRefValidated)
		return false
	}
	if _, err := b.Groups.MCPGroups(namespace).Get(group); err != nil {
		// A lister fails with NotFound only.
		r.Set(thv1.ConditionGroupRefValidated, metav1.ConditionFalse, thv1.ReasonGroupRefNotFound,
			fmt.Sprintf("MCPGroup %q not found in namespace %q", group, namespace))
		return false
	}
	r.Set(thv1.ConditionGroupRefValidated, metav1.ConditionTrue, thv1.ReasonGroupRefValid,
		fmt.Sprintf("MCPGroup %q exists", group))
	return true
}

// ResolveMemberGroup is ResolveGroup for a member of the group (an
// MCPServer or MCPRemoteProxy): a group being deleted is reported as
// ToolHive's operator reports it on each member when it deletes a group,
// GroupRefValidated False, reason GroupRefNotFound, "Referenced MCPGroup
// is being deleted". ToolHive's group controller writes that into its
// members' status; here each member's own controller does, the only
// writer of its status, woken by MemberHandler when the group's deletion
// starts. It reports whether the group exists and is not being deleted.
// The condition is worded as ToolHive v0.63.0's operator words it on a
// member (reason GroupRefIsValid, where a VirtualMCPServer's is
// GroupRefValid).
func (b *Base) ResolveMemberGroup(r *Report, namespace, group string) bool {
	if group == "" {
		return b.ResolveGroup(r, namespace, group)
	}
	g, err := b.Groups.MCPGroups(namespace).Get(group)
	switch {
	case err != nil:
		// A lister fails with NotFound only.
		r.Set(thv1.ConditionGroupRefValidated, metav1.ConditionFalse, thv1.ReasonGroupRefNotFound,
			fmt.Sprintf("MCPGroup '%s' not found in namespace '%s'", group, namespace))
		return false
	case g.DeletionTimestamp != nil:
		r.Set(thv1.ConditionGroupRefValidated, metav1.ConditionFalse, thv1.ReasonGroupRefNotFound, thv1.MessageGroupBeingDeleted)
		return false
	case g.Status.Phase != thv1.MCPGroupPhaseReady:
		// As ToolHive's operator reports it; the member is served all the
		// same, and the group's phase change re-syncs it (MemberHandler).
		r.Set(thv1.ConditionGroupRefValidated, metav1.ConditionFalse, thv1.ReasonGroupRefNotReady,
			fmt.Sprintf("MCPGroup '%s' is not ready (current phase: %s)", group, g.Status.Phase))
		return true
	}
	r.Set(thv1.ConditionGroupRefValidated, metav1.ConditionTrue, thv1.ReasonGroupRefValidated,
		fmt.Sprintf("MCPGroup '%s' is valid and ready", group))
	return true
}

// GroupName is the group a workload's spec.groupRef names, "" for none.
func GroupName(ref *thv1.GroupRef) string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// MemberHandler returns an event handler for the MCPGroup informer that
// enqueues every member of a group when the group is added or deleted
// (tombstones included), so that exactly the workloads whose
// GroupRefValidated answer changed are re-synced. indexer is the workload
// informer's and must carry the index.ByGroup index. Other group updates
// are ignored: they change neither the group's existence nor its
// membership, which only workloads declare; but the start of a group's
// deletion is handled as its deletion, and a change of its phase turns
// its members' GroupRefValidated (ResolveMemberGroup).
func MemberHandler(indexer cache.Indexer, enqueue func(cache.ObjectName)) cache.ResourceEventHandler {
	handle := func(obj any) {
		group, ok := framework.MetaFromObj(obj)
		if !ok {
			return
		}
		names, err := index.Referrers(indexer, index.ByGroup, index.Key(group.GetNamespace(), group.GetName()))
		if err != nil {
			utilruntime.HandleError(fmt.Errorf("listing members of MCPGroup %s/%s: %w", group.GetNamespace(), group.GetName(), err))
			return
		}
		for _, n := range names {
			enqueue(cache.NewObjectName(group.GetNamespace(), n))
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: handle, DeleteFunc: handle,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := framework.MetaFromObj(oldObj)
			n, ok2 := framework.MetaFromObj(newObj)
			if ok1 && ok2 && ((o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) || groupPhase(oldObj) != groupPhase(newObj)) {
				handle(newObj)
			}
		}}
}

// groupPhase is an MCPGroup's status.phase, "" for anything else.
func groupPhase(obj any) string {
	if g, ok := obj.(*thv1.MCPGroup); ok {
		return g.Status.Phase
	}
	return ""
}
