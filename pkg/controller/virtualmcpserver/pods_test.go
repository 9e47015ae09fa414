package virtualmcpserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// vmcpPod is a pod of the vMCP name in phase, its one container in state,
// and Ready per its Ready condition.
func vmcpPod(name, pod string, phase corev1.PodPhase, state corev1.ContainerState, ready bool) *corev1.Pod {
	p := wt.ProxyPod(testNS, naming.AppVirtualMCPServer, name, pod, phase, state)
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

// The phase takes the vMCP's pods into account as ToolHive v0.63.0's
// operator does: a pod in phase Failed with none ready (by the pods' Ready
// condition, not the Deployment's count) is Failed, Ready=False
// DeploymentFailed "Virtual MCP server failed to start", with no Warning
// event (that operator records none); a ready pod, a crash-looping
// container (the pod stays Running), another workload's pod or a vMCP
// scaled to zero is not Failed. One sync writes the status once (none
// for the vMCP scaled to zero, or with only other workloads' pods, which
// already said so), and the next writes nothing.
func TestPhaseFollowsPods(t *testing.T) {
	crashLoop := wt.Waiting("CrashLoopBackOff")
	evicted := func(pod string) *corev1.Pod {
		return vmcpPod("agg", pod, corev1.PodFailed, corev1.ContainerState{}, false)
	}
	deleting := evicted("agg-gone")
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"example.com/hold"}
	otherVMCP := vmcpPod("agg-other", "x", corev1.PodFailed, corev1.ContainerState{}, false)
	sameNamedProxy := wt.ProxyPod(testNS, naming.AppMCPServer, "agg", "y", corev1.PodFailed, corev1.ContainerState{})
	const (
		failed   = "Virtual MCP server failed to start"
		starting = "Virtual MCP server is starting"
		running  = "Virtual MCP server is running"
		noPods   = "No pods found for Virtual MCP server"
	)
	for _, tc := range []struct {
		name     string
		replicas *int32
		pods     []*corev1.Pod
		// readyReplicas is the Deployment's count, which may lag the pods.
		readyReplicas int32
		phase         string
		ready         metav1.ConditionStatus
		reason, msg   string
	}{
		{"a failed pod, none ready", nil, []*corev1.Pod{evicted("agg-a"), vmcpPod("agg", "agg-b", corev1.PodPending, corev1.ContainerState{}, false)}, 0,
			thv1.VirtualMCPServerPhaseFailed, metav1.ConditionFalse, thv1.ReasonDeploymentFailed, failed},
		{"a failed pod being deleted still counts", nil, []*corev1.Pod{deleting}, 0,
			thv1.VirtualMCPServerPhaseFailed, metav1.ConditionFalse, thv1.ReasonDeploymentFailed, failed},
		{"a ready pod wins", nil, []*corev1.Pod{evicted("agg-a"), vmcpPod("agg", "agg-b", corev1.PodRunning, corev1.ContainerState{}, true)}, 1,
			thv1.VirtualMCPServerPhaseReady, metav1.ConditionTrue, thv1.ReasonDeploymentReady, running},
		{"a ready pod the Deployment does not count yet", nil, []*corev1.Pod{evicted("agg-a"), vmcpPod("agg", "agg-b", corev1.PodRunning, corev1.ContainerState{}, true)}, 0,
			thv1.VirtualMCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, starting},
		{"a crash loop is starting", nil, []*corev1.Pod{vmcpPod("agg", "agg-a", corev1.PodRunning, crashLoop, false)}, 0,
			thv1.VirtualMCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, starting},
		{"other workloads' failed pods", nil, []*corev1.Pod{otherVMCP, sameNamedProxy}, 0,
			thv1.VirtualMCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, noPods},
		{"scaled to zero", ptr.To[int32](0), []*corev1.Pod{evicted("agg-a")}, 0,
			thv1.VirtualMCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonScaledToZero, "vMCP scaled to zero replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newVMCP("agg", func(v *thv1.VirtualMCPServer) { v.Spec.Replicas = tc.replicas }),
				toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
			f.converge("agg")
			f.Events()
			f.ProxyPodsAndReady(testNS, "agg", tc.readyReplicas, tc.pods...)
			acts, err := f.sync("agg")
			if err != nil {
				t.Fatal(err)
			}
			if tc.replicas != nil || tc.msg == noPods {
				// Scaled to zero before the pods came, or none of them
				// the vMCP's: they change nothing.
				wt.AssertActions(t, acts)
			} else {
				wt.AssertActions(t, acts, "patch virtualmcpservers/status")
			}
			v := f.get("agg")
			c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionReady)
			if v.Status.Phase != tc.phase || v.Status.Message != tc.msg || c == nil || c.Status != tc.ready || c.Reason != tc.reason || c.Message != tc.msg {
				t.Fatalf("phase %q message %q, Ready %+v; want %s %q, %s %s", v.Status.Phase, v.Status.Message, c, tc.phase, tc.msg, tc.ready, tc.reason)
			}
			if w := f.Warnings(); len(w) != 0 {
				t.Errorf("warnings %q", w)
			}
			f.Refresh()
			if acts, _ := f.sync("agg"); len(acts) != 0 {
				t.Errorf("steady state wrote: %s", wt.Describe(acts))
			}
		})
	}
}

// "No pods found" and "starting" are told apart by the vMCP's pods, as
// ToolHive v0.63.0's operator tells them: a vMCP whose only pod is
// terminating (the old pod of a rollout), which its Deployment no longer
// counts in status.replicas, is starting; with no pod at all, though the
// Deployment (its cache lagging) counts one, it has no pods.
func TestNoPodsOrStarting(t *testing.T) {
	terminating := vmcpPod("agg", "agg-old", corev1.PodRunning, corev1.ContainerState{}, false)
	terminating.DeletionTimestamp = &metav1.Time{}
	terminating.Finalizers = []string{"example.com/hold"}
	for _, tc := range []struct {
		name     string
		pods     []*corev1.Pod
		replicas int32 // the Deployment's status.replicas
		msg      string
	}{
		{"only a terminating pod", []*corev1.Pod{terminating}, 0, "Virtual MCP server is starting"},
		{"no pod, the Deployment counting one", nil, 1, "No pods found for Virtual MCP server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newVMCP("agg"), toolhivetest.NewGroup(testNS, testGroup), newMember("member", testGroup))
			f.converge("agg")
			f.ProxyPodsAndReady(testNS, "agg", 0, tc.pods...)
			deps := f.Kube.AppsV1().Deployments(testNS)
			dep, err := deps.Get(context.Background(), "agg", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dep.Status.Replicas = tc.replicas
			if _, err := deps.UpdateStatus(context.Background(), dep, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.Refresh()
			if _, err := f.sync("agg"); err != nil {
				t.Fatal(err)
			}
			v := f.get("agg")
			c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionReady)
			if v.Status.Phase != thv1.VirtualMCPServerPhasePending || v.Status.Message != tc.msg || c == nil || c.Reason != thv1.ReasonDeploymentNotReady {
				t.Fatalf("phase %q message %q, Ready %+v; want Pending %q, DeploymentNotReady", v.Status.Phase, v.Status.Message, c, tc.msg)
			}
		})
	}
}

// The vMCP's pods are cached without their spec but with their Ready
// condition, and what its phase reads of them re-syncs it: a pod turning
// Failed or ready does; a probe's message, or another workload's pod,
// does not.
func TestPodEvents(t *testing.T) {
	f := newFixture(t, newVMCP("agg"))
	pod := vmcpPod("agg", "agg-a", corev1.PodRunning, corev1.ContainerState{}, false)
	if _, err := f.Kube.CoreV1().Pods(testNS).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	cached := f.c.pods.All(testNS, "agg")
	if len(cached) != 1 || len(cached[0].Spec.Containers) != 0 || len(cached[0].Status.Conditions) != 1 {
		t.Fatalf("cached pods: %+v", cached)
	}
	drain := func() []string { return wt.Drain(f.c.Queue) }
	drain()
	handler := f.c.pods.Handler()
	handler.OnAdd(pod, false)
	if keys := drain(); len(keys) != 1 || keys[0] != testNS+"/agg" {
		t.Fatalf("a new pod enqueued %v", keys)
	}
	proxy := pod.DeepCopy()
	proxy.Labels = naming.Labels(naming.AppMCPRemoteProxy, "agg")
	handler.OnAdd(proxy, false)
	if keys := drain(); len(keys) != 0 {
		t.Fatalf("a remote proxy's pod enqueued %v", keys)
	}
	probed := pod.DeepCopy()
	probed.Status.Conditions[0].Message = "readiness probe failed"
	handler.OnUpdate(pod, probed)
	if keys := drain(); len(keys) != 0 {
		t.Fatalf("a probe's message enqueued %v", keys)
	}
	ready := probed.DeepCopy()
	ready.Status.Conditions[0].Status = corev1.ConditionTrue
	handler.OnUpdate(probed, ready)
	if keys := drain(); len(keys) != 1 {
		t.Fatalf("a pod turning ready enqueued %v", keys)
	}
	// A container that exited non-zero already reads as a proxy's
	// failure; the pod turning Failed after it is news to a vMCP alone.
	exited := ready.DeepCopy()
	exited.Status.Conditions[0].Status = corev1.ConditionFalse
	exited.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	handler.OnUpdate(ready, exited)
	if keys := drain(); len(keys) != 1 {
		t.Fatalf("a container exiting enqueued %v", keys)
	}
	failed := exited.DeepCopy()
	failed.Status.Phase = corev1.PodFailed
	handler.OnUpdate(exited, failed)
	if keys := drain(); len(keys) != 1 {
		t.Fatalf("a pod turning Failed enqueued %v", keys)
	}
}
