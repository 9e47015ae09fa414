package cluster

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// Deleting the workloads leaves their children to the garbage collector:
// hivekeeper removes its finalizer and deletes none of them itself, and
// kube-controller-manager's garbage collector removes every child through
// its owner reference, the ReplicaSets and pods of the Deployments after
// them.
func TestDeletedWorkloadsChildrenAreCollected(t *testing.T) {
	env, ns := start(t)
	ctx := testCtx(t)
	for _, k := range kinds {
		for i := range 2 {
			k.create(ctx, t, env, ns, fmt.Sprintf("g-%s-%d", strings.ToLower(k.kind), i))
		}
	}
	for _, k := range kinds {
		for i := range 2 {
			waitReady(ctx, t, env, k, ns, fmt.Sprintf("g-%s-%d", strings.ToLower(k.kind), i))
		}
	}
	resources := []schema.GroupVersionResource{
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Group: "apps", Version: "v1", Resource: "replicasets"},
		{Version: "v1", Resource: "pods"},
		{Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "services"},
		{Version: "v1", Resource: "serviceaccounts"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	}
	// count is how many objects of the resources above the workloads
	// own, directly or through a Deployment and a ReplicaSet.
	count := func() (map[string]int, error) {
		out := map[string]int{}
		for _, r := range resources {
			list, err := env.Dynamic.Resource(r).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			for _, o := range list.Items {
				if len(o.GetOwnerReferences()) > 0 {
					out[r.Resource]++
				}
			}
		}
		return out, nil
	}
	children, err := count()
	must(t, err)
	for _, r := range resources {
		if children[r.Resource] == 0 {
			t.Fatalf("no %s owned by the workloads before the delete: %v", r.Resource, children)
		}
	}
	writes := workloadtest.WritesTotal(t, workloadControllers...)

	th := env.Toolhive.ToolhiveV1beta1()
	all := metav1.ListOptions{}
	must(t, th.MCPServers(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	must(t, th.MCPRemoteProxies(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	must(t, th.VirtualMCPServers(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	framework.Eventually(t, timeout, func() (bool, error) {
		left, err := count()
		return err == nil && len(left) == 0, fmt.Errorf("left: %v (%v)", left, err)
	}, "the garbage collector to remove every child")
	delta := workloadtest.WritesBetween(writes, workloadtest.Quiesce(t, resync*3, timeout, workloadControllers...))
	for k, v := range delta {
		if strings.Contains(k, " delete ") {
			t.Errorf("hivekeeper deleted children itself: %s = %v", k, v)
		}
	}
	t.Logf("children before the delete: %v; hivekeeper's writes: %v", children, delta)
}
