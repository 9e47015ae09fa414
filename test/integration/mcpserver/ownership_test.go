package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestChildWithoutLabelIsTakenBack: a child whose toolhive=true label was
// removed leaves the filtered informer's cache, so the next sync's create
// fails with AlreadyExists. The child is ours (its controller reference
// names the server's UID): it is read live and taken back, labels restored,
// the same object; the server does not fail.
func TestChildWithoutLabelIsTakenBack(t *testing.T) {
	env, ns := convergedServer(t, "fetch")
	ctx := context.Background()
	before, after := env.UnlabelChild(t, corev1.SchemeGroupVersion.WithResource("services"), ns, naming.MCPServerServiceName("fetch"), naming.LabelToolhive)
	if after != before {
		t.Errorf("the Service was replaced instead of taken back: UID %s -> %s", before, after)
	}
	s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cond := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionReady); s.Status.Phase == thv1.MCPServerPhaseFailed || cond == nil || strings.Contains(cond.Message, " exists and is ") || strings.Contains(cond.Message, "cannot ") {
		t.Errorf("server phase %q, Ready %+v after taking its Service back", s.Status.Phase, cond)
	}
}

// TestLongestNameConverges: an MCPServer with the longest name the CRD
// accepts gets every child, and the names the proxy runner will use for
// its Services are accepted by the API server too.
func TestLongestNameConverges(t *testing.T) {
	name := strings.Repeat("n", thv1.MaxMCPServerNameLength)
	env, ns := convergedServer(t, name)
	ctx := context.Background()
	if _, err := env.Kube.CoreV1().Services(ns).Get(ctx, naming.MCPServerServiceName(name), metav1.GetOptions{}); err != nil {
		t.Errorf("proxy Service: %v", err)
	}
	env.CreateRunnerObjects(t, ns, name, framework.RunnerLabels(name))
}
