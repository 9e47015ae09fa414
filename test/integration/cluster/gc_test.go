package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
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
	// The runner's StatefulSet and two Services of each MCPServer (the
	// test created them as the runner would) carry no owner reference:
	// hivekeeper deletes those itself, and nothing else.
	runnerDeletes := map[string]float64{"mcpserver statefulsets delete success": 2, "mcpserver services delete success": 4}
	for k, v := range delta {
		if strings.Contains(k, " delete ") && runnerDeletes[k] != v {
			t.Errorf("hivekeeper deleted children itself: %s = %v (the runner's objects: %v)", k, v, runnerDeletes[k])
		}
	}
	t.Logf("children before the delete: %v; hivekeeper's writes: %v", children, delta)
}

// Deleting a namespace removes its MCPGroups, ToolHive's finalizer
// included: the namespace controller deletes each group, hivekeeper
// releases the finalizer its operator or ToolHive's added, and the
// namespace goes away instead of hanging in Terminating.
func TestNamespaceWithGroupsIsDeleted(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, appOptions(ns))
	ctx := testCtx(t)
	th := env.Toolhive.ToolhiveV1beta1()
	for _, g := range []*thv1.MCPGroup{
		{ObjectMeta: metav1.ObjectMeta{Name: "from-toolhive", Finalizers: []string{thv1.MCPGroupFinalizer}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "from-hivekeeper"}},
	} {
		_, err := th.MCPGroups(ns).Create(ctx, g, metav1.CreateOptions{})
		must(t, err)
	}
	framework.Eventually(t, timeout, func() (bool, error) {
		g, err := th.MCPGroups(ns).Get(ctx, "from-hivekeeper", metav1.GetOptions{})
		return err == nil && slices.Contains(g.Finalizers, thv1.MCPGroupFinalizer), fmt.Errorf("finalizers: %v (%v)", g.GetFinalizers(), err)
	}, "hivekeeper to add ToolHive's finalizer")
	must(t, env.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	framework.Eventually(t, timeout, func() (bool, error) {
		_, err := env.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		left, lerr := th.MCPGroups(ns).List(ctx, metav1.ListOptions{})
		return false, fmt.Errorf("namespace still there (%v); groups %v (%v)", err, left, lerr)
	}, "the namespace and its groups to be gone")
}
