package mcpremoteproxy

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// proxyPod is a proxy pod of workload name whose one container is in
// state.
func proxyPod(name, pod string, phase corev1.PodPhase, state corev1.ContainerState) *corev1.Pod {
	return wt.ProxyPod(testNS, naming.AppMCPRemoteProxy, name, pod, phase, state)
}

var waiting = wt.Waiting

// The phase follows the proxy pods as ToolHive v0.63.0's operator
// classifies them: a container in CrashLoopBackOff, CreateContainerError
// or InvalidImageName, one that exited non-zero, or a Failed pod makes
// the proxy Failed (the reasons sorted, each once), unless a replica is
// ready; ImagePullBackOff is Pending, since the kubelet retries it; a
// pod being deleted is not counted; pods of another proxy are not read.
func TestPhaseFollowsProxyPods(t *testing.T) {
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	deleting := proxyPod("remote", "remote-gone", corev1.PodRunning, waiting("CrashLoopBackOff"))
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"example.com/hold"}
	for _, tc := range []struct {
		name      string
		pods      []*corev1.Pod
		ready     int32
		phase     string
		condition metav1.ConditionStatus
		message   string
	}{
		{"no pods", nil, 0, thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, "No pods found for remote proxy"},
		{"crash loop", []*corev1.Pod{proxyPod("remote", "a", corev1.PodRunning, waiting("CrashLoopBackOff"))}, 0,
			thv1.MCPRemoteProxyPhaseFailed, metav1.ConditionFalse, "Remote proxy failed to start: CrashLoopBackOff"},
		{"several failures", []*corev1.Pod{
			proxyPod("remote", "a", corev1.PodPending, waiting("InvalidImageName")),
			proxyPod("remote", "b", corev1.PodRunning, terminated),
			proxyPod("remote", "c", corev1.PodPending, waiting("InvalidImageName")),
			proxyPod("remote", "d", corev1.PodFailed, corev1.ContainerState{}),
			proxyPod("remote", "e", corev1.PodPending, waiting("CreateContainerError")),
		}, 0, thv1.MCPRemoteProxyPhaseFailed, metav1.ConditionFalse,
			"Remote proxy failed to start: ContainerTerminated, CreateContainerError, InvalidImageName, PodFailed"},
		{"image pull back-off", []*corev1.Pod{proxyPod("remote", "a", corev1.PodPending, waiting("ImagePullBackOff"))}, 0,
			thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, "Remote proxy is starting"},
		{"a ready replica wins", []*corev1.Pod{proxyPod("remote", "a", corev1.PodRunning, waiting("CrashLoopBackOff"))}, 1,
			thv1.MCPRemoteProxyPhaseReady, metav1.ConditionTrue, "Remote proxy is running"},
		{"a pod being deleted", []*corev1.Pod{deleting}, 0,
			thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, "No pods found for remote proxy"},
		{"another proxy's pod", []*corev1.Pod{proxyPod("remote-other", "a", corev1.PodRunning, waiting("CrashLoopBackOff"))}, 0,
			thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, "No pods found for remote proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newProxy("remote"))
			f.converge("remote")
			f.ProxyPodsAndReady(testNS, "remote", tc.ready, tc.pods...)
			f.converge("remote")
			p := f.get("remote")
			c := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionReady)
			if p.Status.Phase != tc.phase || c == nil || c.Status != tc.condition || p.Status.Message != tc.message || c.Message != tc.message {
				t.Fatalf("phase %q message %q, Ready %+v; want %q %q %s", p.Status.Phase, p.Status.Message, c, tc.phase, tc.message, tc.condition)
			}
			f.Refresh()
			if acts, _ := f.sync("remote"); len(acts) != 0 {
				t.Errorf("converged: %s", wt.Describe(acts))
			}
		})
	}
}

// The proxy pods are cached without their spec, and only what the status
// reads of them re-syncs the proxy: a new failure or a pod coming or going
// does, a probe's or a message's change does not.
func TestProxyPodEvents(t *testing.T) {
	f := newFixture(t, newProxy("remote"))
	pod := proxyPod("remote", "a", corev1.PodPending, waiting("ContainerCreating"))
	if _, err := f.Kube.CoreV1().Pods(testNS).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	cached := f.c.pods.Of(testNS, "remote")
	if len(cached) != 1 || len(cached[0].Spec.Containers) != 0 {
		t.Fatalf("cached pods: %+v", cached)
	}
	drain := func() []string { return wt.Drain(f.c.Queue) }
	drain()
	handler := f.c.pods.Handler()
	handler.OnAdd(pod, false)
	if keys := drain(); len(keys) != 1 || keys[0] != testNS+"/remote" {
		t.Fatalf("a new pod enqueued %v", keys)
	}
	// An MCPServer's proxy pod of the same name is in the same cache and
	// is not this controller's.
	server := pod.DeepCopy()
	server.Labels = naming.Labels(naming.AppMCPServer, "remote")
	handler.OnAdd(server, false)
	if keys := drain(); len(keys) != 0 {
		t.Fatalf("an MCPServer's pod enqueued %v", keys)
	}
	probed := pod.DeepCopy()
	probed.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	probed.Status.ContainerStatuses[0].State.Waiting.Message = "another message"
	handler.OnUpdate(pod, probed)
	if keys := drain(); len(keys) != 0 {
		t.Fatalf("a probe enqueued %v", keys)
	}
	crashing := probed.DeepCopy()
	crashing.Status.ContainerStatuses[0].State.Waiting.Reason = "CrashLoopBackOff"
	handler.OnUpdate(probed, crashing)
	if keys := drain(); len(keys) != 1 {
		t.Fatalf("a crash loop enqueued %v", keys)
	}
}

// ToolHive's advisory SessionStorageWarning is on every remote proxy whose
// spec passed the checks: True for several replicas without Redis.
func TestSessionStorageWarning(t *testing.T) {
	two := int32(2)
	for _, tc := range []struct {
		name           string
		mut            func(*thv1.MCPRemoteProxy)
		status, reason string
	}{
		{"one replica", func(*thv1.MCPRemoteProxy) {}, "False", thv1.ReasonSessionStorageNotApplicable},
		{"two replicas without Redis", func(p *thv1.MCPRemoteProxy) { p.Spec.Replicas = &two }, "True", thv1.ReasonSessionStorageMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newProxy("remote", tc.mut))
			f.converge("remote")
			c := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionSessionStorageWarning)
			if c == nil || string(c.Status) != tc.status || c.Reason != tc.reason {
				t.Fatalf("SessionStorageWarning = %+v, want %s %s", c, tc.status, tc.reason)
			}
		})
	}
}

// CABundleRefValidated follows the CA bundle ConfigMap of the proxy's
// inline OIDC configuration, as ToolHive v0.63.0's operator reports it.
func TestCABundleRefValidated(t *testing.T) {
	p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "auth", Audience: "mcp"}
	})
	f := newFixture(t, p, newOIDCConfig("auth", true, true))
	f.converge("remote")
	f.CheckOIDCCABundle(t, wt.CABundleCheck{Namespace: testNS, ConfigMap: "idp-ca", Handler: f.c.CABundleHandler(), Queue: f.c.Queue,
		Sync:       func() { f.converge("remote") },
		Conditions: func() []metav1.Condition { return f.get("remote").Status.Conditions }})
}
