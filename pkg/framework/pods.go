package framework

import (
	corev1 "k8s.io/api/core/v1"
)

// TrimPod is the transform of the pod informers: a pod is cached as a new
// pod holding only what a status reads of it — its name, namespace, UID,
// resourceVersion, labels and deletion time, its phase, its Ready
// condition's status (a vMCP counts its ready pods by it), and of each
// container its name, readiness, waiting reason and exit code. The spec
// (and with it every environment value) is never kept. It is idempotent,
// as a transform must be; anything else passes unchanged.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{}
	out.Name, out.Namespace, out.UID, out.ResourceVersion = pod.Name, pod.Namespace, pod.UID, pod.ResourceVersion
	out.Labels, out.DeletionTimestamp = pod.Labels, pod.DeletionTimestamp
	out.Status.Phase = pod.Status.Phase
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		kept := corev1.ContainerStatus{Name: cs.Name, Ready: cs.Ready}
		if w := cs.State.Waiting; w != nil {
			kept.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
		}
		if t := cs.State.Terminated; t != nil {
			kept.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode}
		}
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, kept)
	}
	return out, nil
}
