package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestChildWithoutLabelIsTakenBack: a child whose toolhive=true label was
// removed leaves the filtered informer's cache, so the next sync's create
// fails with AlreadyExists. The child is ours (its controller reference
// names the server's UID): it is read live and taken back, labels restored,
// the same object; the server does not fail.
func TestChildWithoutLabelIsTakenBack(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	ctx := context.Background()
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, newServerObj(ns, "fetch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, "fetch")
	name := mcpserver.ServiceName("fetch")
	before, err := env.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unlabel := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, workload.LabelToolhive)
	if _, err := env.Kube.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, []byte(unlabel), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 20*time.Second, func() (bool, error) {
		svc, err := env.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return svc.Labels[workload.LabelToolhive] == "true", fmt.Errorf("labels %v", svc.Labels)
	}, "the toolhive=true label to be restored")
	after, err := env.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID {
		t.Errorf("the Service was replaced instead of taken back: UID %s -> %s", before.UID, after.UID)
	}
	s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cond := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionReady); s.Status.Phase == thv1.MCPServerPhaseFailed || cond == nil || cond.Reason == mcpserver.ReasonChildConflict || cond.Reason == mcpserver.ReasonChildWriteFailed {
		t.Errorf("server phase %q, Ready %+v after taking its Service back", s.Status.Phase, cond)
	}
}

// TestLongestNameConverges: an MCPServer with the longest name the CRD
// accepts gets every child, and the names the proxy runner will use for
// its Services are accepted by the API server too.
func TestLongestNameConverges(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	ctx := context.Background()
	name := strings.Repeat("n", thv1.MaxMCPServerNameLength)
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, newServerObj(ns, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, name)
	if _, err := env.Kube.CoreV1().Services(ns).Get(ctx, mcpserver.ServiceName(name), metav1.GetOptions{}); err != nil {
		t.Errorf("proxy Service: %v", err)
	}
	env.CreateRunnerObjects(t, ns, name, framework.RunnerLabels(name))
}
