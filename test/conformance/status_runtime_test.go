package conformance_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// statusStep is what a case of the status differential does once its
// manifests are created, on one API server: what the kubelet, the
// controller-manager, a proxy runner, vmcp or a user would do next, none
// of which the test servers run. It runs on both servers alike, each
// time on what that server's operator wrote, and returns when it is done
// (the comparison then waits for both sides to settle).
type statusStep func(ctx context.Context, e *framework.Env, ns string) error

// statusSteps are the steps of the cases that have one.
var statusSteps = map[string]statusStep{
	"pod-failures":       podFailures,
	"runner-statefulset": runnerStatefulSets,
	"backends-down":      backendsDown,
	"group-deleted":      groupDeleted,
}

// runStatusSteps runs every case's step on both servers at once and fails
// the test if one could not be played (an operator that never wrote the
// Deployment a pod belongs to, say).
func runStatusSteps(t *testing.T, sides map[string]*framework.Env, namespaces map[string]string) {
	t.Helper()
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for c, step := range statusSteps {
		ns, ok := namespaces[c]
		if !ok {
			continue
		}
		for who, e := range sides {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				if err := step(ctx, e, ns); err != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%s: the step on %s server: %v", c, who, err))
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	slices.Sort(failed)
	for _, f := range failed {
		t.Error(f)
	}
	if len(failed) > 0 {
		t.FailNow()
	}
}

// stepsShow is what ToolHive's operator must read off the objects once a
// step ran, by aspect (as surface keys them): that the step reached what
// it plays. A step that reached nothing would leave both surfaces as
// created, and the comparison would pass on them.
var stepsShow = map[string]string{
	"pod-failures MCPServer/crash-loop message":                             "MCP server pod failed: CrashLoopBackOff",
	"pod-failures MCPServer/image-pull-backoff message":                     "MCP server is starting",
	"pod-failures MCPServer/err-image-pull message":                         "MCP server is starting",
	"pod-failures MCPServer/exit-nonzero message":                           "MCP server pod failed: ContainerTerminated",
	"pod-failures MCPServer/create-container-error message":                 "MCP server pod failed: CreateContainerError",
	"pod-failures MCPServer/evicted message":                                "MCP server pod failed: ContainerTerminated",
	"pod-failures MCPServer/terminating message":                            "No healthy pods found",
	"pod-failures MCPRemoteProxy/remote-crash-loop message":                 "Remote proxy failed to start: CrashLoopBackOff",
	"pod-failures MCPRemoteProxy/remote-image-pull-backoff message":         "Remote proxy is starting",
	"pod-failures MCPRemoteProxy/remote-terminating message":                "No pods found for remote proxy",
	"pod-failures VirtualMCPServer/vmcp-crash-loop message":                 "Virtual MCP server is starting",
	"pod-failures VirtualMCPServer/vmcp-evicted condition Ready":            "False/DeploymentFailed",
	"pod-failures VirtualMCPServer/vmcp-terminating message":                "Virtual MCP server is starting",
	"runner-statefulset MCPServer/runner-up phase":                          "Ready",
	"runner-statefulset MCPServer/runner-gone phase":                        "Pending",
	"backends-down VirtualMCPServer/all-down condition Ready":               "False/BackendsUnavailable",
	"backends-down VirtualMCPServer/one-down condition Ready":               "False/BackendsDegraded",
	"group-deleted MCPGroup/doomed existence":                               "deleted",
	"group-deleted MCPServer/member-server condition GroupRefValidated":     "False/GroupRefNotFound",
	"group-deleted MCPRemoteProxy/member-proxy condition GroupRefValidated": "False/GroupRefNotFound",
	"group-deleted MCPServerEntry/member-entry condition GroupRefValidated": "False/GroupRefNotFound",
	"group-deleted VirtualMCPServer/member-vmcp phase":                      "Failed",
}

// checkStepsShow fails the test where ToolHive's operator's settled
// surface, theirs, does not show what stepsShow says.
func checkStepsShow(t *testing.T, theirs map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(stepsShow)) {
		if got := theirs[k]; got != stepsShow[k] {
			t.Errorf("%s: ToolHive's operator reads %q after the step, not %q: the step did not play what it should", k, got, stepsShow[k])
		}
	}
}

// podState is a pod of a workload's Deployment as the kubelet reports it:
// the pod's phase (and reason, for an evicted one) and the state of each
// of its containers.
type podState struct {
	phase        corev1.PodPhase
	reason       string
	container    corev1.ContainerState
	lastExitCode int32 // the container's last termination, 0 for none
	restarts     int32
	ready        bool
	// deleting: the pod is then deleted, and stays terminating (no
	// kubelet confirms it stopped), as the old pod of a rollout does.
	deleting bool
}

var began = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func waiting(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

func exited(code int32, reason string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: began, FinishedAt: began}}
}

// The pod states the cases play.
var (
	podCrashLooping = podState{phase: corev1.PodRunning, container: waiting("CrashLoopBackOff", "back-off 40s restarting failed container"),
		lastExitCode: 1, restarts: 3}
	podImagePullBackOff = podState{phase: corev1.PodPending, container: waiting("ImagePullBackOff", "Back-off pulling image")}
	podErrImagePull     = podState{phase: corev1.PodPending, container: waiting("ErrImagePull", "failed to pull and unpack image: not found")}
	podExitedNonZero    = podState{phase: corev1.PodRunning, container: exited(2, "Error")}
	podCreateError      = podState{phase: corev1.PodPending, container: waiting("CreateContainerError", "failed to create containerd container")}
	podEvicted          = podState{phase: corev1.PodFailed, reason: "Evicted", container: exited(137, "ContainerStatusUnknown")}
	podTerminating      = podState{phase: corev1.PodRunning, container: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: began}},
		deleting: true}
	podReady = podState{phase: corev1.PodRunning, container: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: began}}, ready: true}
)

// podFailures gives each workload of pod-failures.yaml one pod in the
// state its name says.
func podFailures(ctx context.Context, e *framework.Env, ns string) error {
	for _, w := range []struct {
		app, name string
		state     podState
	}{
		{naming.AppMCPServer, "crash-loop", podCrashLooping},
		{naming.AppMCPServer, "image-pull-backoff", podImagePullBackOff},
		{naming.AppMCPServer, "err-image-pull", podErrImagePull},
		{naming.AppMCPServer, "exit-nonzero", podExitedNonZero},
		{naming.AppMCPServer, "create-container-error", podCreateError},
		{naming.AppMCPServer, "evicted", podEvicted},
		{naming.AppMCPServer, "terminating", podTerminating},
		{naming.AppMCPRemoteProxy, "remote-crash-loop", podCrashLooping},
		{naming.AppMCPRemoteProxy, "remote-image-pull-backoff", podImagePullBackOff},
		{naming.AppMCPRemoteProxy, "remote-terminating", podTerminating},
		{naming.AppVirtualMCPServer, "vmcp-crash-loop", podCrashLooping},
		{naming.AppVirtualMCPServer, "vmcp-evicted", podEvicted},
		{naming.AppVirtualMCPServer, "vmcp-terminating", podTerminating},
	} {
		if err := playPod(ctx, e, ns, w.app, w.name, w.state); err != nil {
			return err
		}
	}
	return nil
}

// runnerStatefulSets plays the proxy runner of both MCPServers of
// runner-statefulset.yaml: their proxy pod is ready and the StatefulSet
// of the MCP server exists; once each server reads Ready, runner-gone's
// StatefulSet is deleted, as by a user or a failed node drain.
func runnerStatefulSets(ctx context.Context, e *framework.Env, ns string) error {
	for _, name := range []string{"runner-up", "runner-gone"} {
		if err := createRunnerStatefulSet(ctx, e, ns, name); err != nil {
			return err
		}
		if err := playPod(ctx, e, ns, naming.AppMCPServer, name, podReady); err != nil {
			return err
		}
	}
	servers := e.Toolhive.ToolhiveV1beta1().MCPServers(ns)
	for _, name := range []string{"runner-up", "runner-gone"} {
		if err := poll(ctx, "MCPServer "+name+" to read Ready", func() (bool, error) {
			s, err := servers.Get(ctx, name, metav1.GetOptions{})
			return err == nil && s.Status.Phase == thv1.MCPServerPhaseReady, err
		}); err != nil {
			return err
		}
	}
	return e.Kube.AppsV1().StatefulSets(ns).Delete(ctx, naming.MCPServerRunnerStatefulSetName("runner-gone"), metav1.DeleteOptions{})
}

// createRunnerStatefulSet creates the StatefulSet the proxy runner of
// MCPServer name creates for the MCP server, labelled as the runner
// labels it (enough of it for ToolHive's operator to watch it).
func createRunnerStatefulSet(ctx context.Context, e *framework.Env, ns, name string) error {
	_, err := e.Kube.AppsV1().StatefulSets(ns).Create(ctx, framework.RunnerStatefulSet(ns, name, framework.RunnerLabels(name)), metav1.CreateOptions{})
	return err
}

// backendsDown plays the two vMCPs of backends-down.yaml: each pod is
// ready, and vmcp reports what its health checks found in status.runtime,
// the part of the status only vmcp writes: all-down's two backends
// unavailable, one-down's one of two.
func backendsDown(ctx context.Context, e *framework.Env, ns string) error {
	for _, name := range []string{"all-down", "one-down"} {
		if err := playPod(ctx, e, ns, naming.AppVirtualMCPServer, name, podReady); err != nil {
			return err
		}
	}
	if err := reportRuntime(ctx, e, ns, "all-down", thv1.VirtualMCPServerPhaseFailed, "No routable backends available",
		backendSeen("alpha", thv1.BackendStatusUnavailable), backendSeen("beta", thv1.BackendStatusUnavailable)); err != nil {
		return err
	}
	return reportRuntime(ctx, e, ns, "one-down", thv1.VirtualMCPServerPhaseDegraded, "1/2 backends routable",
		backendSeen("alpha", thv1.BackendStatusReady), backendSeen("beta", thv1.BackendStatusUnavailable))
}

func backendSeen(name, status string) map[string]any {
	b := map[string]any{"name": name, "status": status, "lastHealthCheck": began.UTC().Format(time.RFC3339),
		"url": fmt.Sprintf("http://mcp-%s-proxy:8080/mcp", name)}
	if status != thv1.BackendStatusReady {
		b["message"] = "Connection failed"
		b["consecutiveFailures"] = int64(3)
	}
	return b
}

// reportRuntime writes status.runtime of VirtualMCPServer name as vmcp's
// status reporter writes it: a read of the object, then an update of the
// status subresource with its own snapshot (phase, message, the backends
// and its Ready and BackendsDiscovered conditions), retried on a
// conflict.
func reportRuntime(ctx context.Context, e *framework.Env, ns, name, phase, message string, backends ...map[string]any) error {
	routable := 0
	list := make([]any, 0, len(backends))
	for _, b := range backends {
		list = append(list, b)
		if b["status"] == thv1.BackendStatusReady {
			routable++
		}
	}
	readyReason := "NoRoutableBackends"
	if routable > 0 {
		readyReason = "SomeBackendsUnhealthy"
	}
	condition := func(typ, status, reason, msg string) any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
			"lastTransitionTime": began.UTC().Format(time.RFC3339)}
	}
	runtime := map[string]any{
		"phase": phase, "message": message, "backendCount": int64(routable), "discoveredBackends": list,
		"conditions": []any{
			condition(thv1.ConditionReady, "False", readyReason, message),
			condition(thv1.ConditionBackendsDiscovered, "True", "BackendsDiscovered", fmt.Sprintf("Discovered %d backends", len(backends))),
		},
	}
	res := e.Dynamic.Resource(thv1.SchemeGroupVersion.WithResource("virtualmcpservers")).Namespace(ns)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		v, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(v.Object, runtime, "status", "runtime"); err != nil {
			return err
		}
		_, err = res.UpdateStatus(ctx, v, metav1.UpdateOptions{})
		return err
	})
}

// groupDeleted deletes the MCPGroup of group-deleted.yaml once the
// operator holds its finalizer on it, lists its members and has reported
// on each workload member, then waits for it to go.
func groupDeleted(ctx context.Context, e *framework.Env, ns string) error {
	th := e.Toolhive.ToolhiveV1beta1()
	if err := poll(ctx, "MCPGroup doomed to hold the finalizer and list its members", func() (bool, error) {
		g, err := th.MCPGroups(ns).Get(ctx, "doomed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Contains(g.Finalizers, thv1.MCPGroupFinalizer) && g.Status.Phase == thv1.MCPGroupPhaseReady &&
			slices.Contains(g.Status.Servers, "member-server") && slices.Contains(g.Status.RemoteProxies, "member-proxy"), nil
	}); err != nil {
		return err
	}
	if err := poll(ctx, "the members to report on their group", func() (bool, error) {
		s, err := th.MCPServers(ns).Get(ctx, "member-server", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p, err := th.MCPRemoteProxies(ns).Get(ctx, "member-proxy", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v, err := th.VirtualMCPServers(ns).Get(ctx, "member-vmcp", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return hasCondition(s.Status.Conditions, thv1.ConditionGroupRefValidated) &&
			hasCondition(p.Status.Conditions, thv1.ConditionGroupRefValidated) && v.Status.Phase != "", nil
	}); err != nil {
		return err
	}
	if err := th.MCPGroups(ns).Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := poll(ctx, "MCPGroup doomed to go", func() (bool, error) {
		_, err := th.MCPGroups(ns).Get(ctx, "doomed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return err
	}
	// ToolHive's operator does not watch groups from its MCPServers and
	// MCPRemoteProxies: a member's sync set off by the finalizer's own
	// status write can read the group still there (being deleted, which
	// it does not check) and write GroupRefValidated True again, and
	// nothing syncs it once the group is gone. An edit of the members (as
	// its periodic resync would) lets it report what it reports of a
	// missing group, so that what is compared is where both operators
	// end, not that race (docs/compatibility.md, An MCPGroup's deletion
	// is reported by its members).
	touch := []byte(`{"metadata":{"annotations":{"conformance.hivekeeper.dev/group-deleted":"true"}}}`)
	if _, err := th.MCPServers(ns).Patch(ctx, "member-server", types.MergePatchType, touch, metav1.PatchOptions{}); err != nil {
		return err
	}
	if _, err := th.MCPRemoteProxies(ns).Patch(ctx, "member-proxy", types.MergePatchType, touch, metav1.PatchOptions{}); err != nil {
		return err
	}
	_, err := th.MCPServerEntries(ns).Patch(ctx, "member-entry", types.MergePatchType, touch, metav1.PatchOptions{})
	return err
}

func hasCondition(conds []metav1.Condition, typ string) bool {
	return slices.ContainsFunc(conds, func(c metav1.Condition) bool { return c.Type == typ })
}

// playPod waits for the Deployment of the workload name (app being its
// naming.App*), creates the pod its ReplicaSet would (from the pod
// template, on a node), writes the pod's status as the kubelet would
// report state, then the Deployment's status as the controller-manager
// would count that pod. The pod comes first: ToolHive's operator does
// not watch pods, and reads them when the Deployment's status re-syncs
// the workload.
func playPod(ctx context.Context, e *framework.Env, ns, app, name string, state podState) error {
	deps := e.Kube.AppsV1().Deployments(ns)
	var dep *appsv1.Deployment
	if err := poll(ctx, "the Deployment of "+app+" "+name, func() (bool, error) {
		var err error
		dep, err = deps.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		return err
	}
	want := naming.Labels(app, name)
	for k, v := range want {
		if dep.Spec.Template.Labels[k] != v {
			return fmt.Errorf("Deployment %s: its pod template is not labelled %s=%s, which the status reads pods by", name, k, v)
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-6d4b9c7f8-q2x7z", Labels: dep.Spec.Template.Labels, Annotations: dep.Spec.Template.Annotations},
		Spec:       *dep.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = "node-1"
	pods := e.Kube.CoreV1().Pods(ns)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the pod of %s %s: %w", app, name, err)
	}
	created.Status = kubeletStatus(created, state)
	if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of the pod of %s %s: %w", app, name, err)
	}
	// The Deployment counts the pods that are not terminating.
	replicas, ready := int32(1), int32(0)
	if state.ready {
		ready = 1
	}
	if state.deleting {
		// A pod on a node is deleted gracefully: it stays, terminating,
		// until its kubelet confirms it stopped.
		if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting the pod of %s %s: %w", app, name, err)
		}
		if err := poll(ctx, "the pod of "+app+" "+name+" to be terminating", func() (bool, error) {
			p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && p.DeletionTimestamp != nil, err
		}); err != nil {
			return err
		}
		replicas = 0
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: 1 - ready,
		}
		_, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	})
}

// kubeletStatus is the status the kubelet reports for pod in state.
func kubeletStatus(pod *corev1.Pod, state podState) corev1.PodStatus {
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: began}
	}
	status := corev1.PodStatus{
		Phase:     state.phase,
		Reason:    state.reason,
		HostIP:    "10.0.0.1",
		StartTime: &began,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodScheduled, true), cond(corev1.PodInitialized, true),
			cond(corev1.ContainersReady, state.ready), cond(corev1.PodReady, state.ready),
		},
	}
	if state.phase == corev1.PodRunning {
		status.PodIP = "10.1.0.7"
	}
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: state.container, Ready: state.ready,
			RestartCount: state.restarts, Started: ptr.To(state.container.Running != nil)}
		if state.lastExitCode != 0 {
			cs.LastTerminationState = exited(state.lastExitCode, "Error")
		}
		status.ContainerStatuses = append(status.ContainerStatuses, cs)
	}
	return status
}

// poll calls cond every half second until it holds or ctx ends.
func poll(ctx context.Context, what string, cond func() (bool, error)) error {
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
