package mcpgroup

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller"
	listers "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// GroupRefCondition answers, for a workload controller, whether the MCPGroup
// named by a workload's spec.groupRef exists, as the status, reason and
// message of the workload's GroupRefValidated condition: True/GroupRefValid
// when the group is in the lister, False/GroupRefNotFound otherwise. A
// missing group is reported, never fatal: the workload is served normally.
// A group that exists but has not been synced yet counts as valid, because
// membership is declared by the workload, not granted by the group.
//
// Callers set the condition only when spec.groupRef is set. The lister must
// come from the same watch scope as the workload (groups are namespaced), and
// the workload controller should register MemberHandler on the MCPGroup
// informer so the condition follows the group appearing and disappearing.
func GroupRefCondition(lister listers.MCPGroupLister, namespace, groupName string) (status metav1.ConditionStatus, reason, message string) {
	if _, err := lister.MCPGroups(namespace).Get(groupName); err != nil {
		// A lister only fails with NotFound; anything else also means the
		// group cannot be confirmed, which is the same answer for the user.
		return metav1.ConditionFalse, thv1.ReasonGroupRefNotFound,
			fmt.Sprintf("MCPGroup %q not found in namespace %q", groupName, namespace)
	}
	return metav1.ConditionTrue, thv1.ReasonGroupRefValid,
		fmt.Sprintf("MCPGroup %q exists", groupName)
}

// MemberHandler returns an event handler for the MCPGroup informer that
// calls enqueue with the "<ns>/<name>" key of every member of a group when
// the group is added or deleted (tombstones included), so that a workload
// controller re-evaluates GroupRefCondition exactly for the workloads whose
// answer changed. indexer is that controller's workload informer indexer and
// must carry the index.ByGroup index. Group updates are ignored: they change
// neither the group's existence nor its membership, which only workloads
// declare.
func MemberHandler(indexer cache.Indexer, enqueue func(key string)) cache.ResourceEventHandler {
	handle := func(obj any) {
		group, ok := controller.MetaFromObj(obj)
		if !ok {
			return
		}
		names, err := index.Referrers(indexer, index.ByGroup, index.Key(group.GetNamespace(), group.GetName()))
		if err != nil {
			utilruntime.HandleError(fmt.Errorf("listing members of MCPGroup %s/%s: %w", group.GetNamespace(), group.GetName(), err))
			return
		}
		for _, n := range names {
			enqueue(index.Key(group.GetNamespace(), n))
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: handle, DeleteFunc: handle}
}
