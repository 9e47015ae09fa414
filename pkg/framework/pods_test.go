package framework

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrimPod keeps what a status reads of a pod and nothing of its spec (an
// environment value may be a credential); it is idempotent and leaves
// other objects alone.
func TestTrimPod(t *testing.T) {
	now := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p", ResourceVersion: "4", DeletionTimestamp: &now,
			Labels: map[string]string{"app": "mcpremoteproxy"}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "TOKEN", Value: "secret"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Message: "m", Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, Reason: "r", Message: "probe", LastProbeTime: now},
		}, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "c", Ready: true, Image: "img", RestartCount: 3,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}}},
			{Name: "d", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}},
		}},
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p", ResourceVersion: "4", DeletionTimestamp: &now, Labels: pod.Labels},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "c", Ready: true, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
			{Name: "d", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}},
		}},
	}
	got, err := TrimPod(pod)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("TrimPod = %#v, %v; want %#v", got, err, want)
	}
	if again, _ := TrimPod(got); !reflect.DeepEqual(again, want) {
		t.Errorf("TrimPod is not idempotent: %#v", again)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"k": "v"}}
	if other, _ := TrimPod(cm); other != cm {
		t.Errorf("TrimPod changed a ConfigMap: %#v", other)
	}
}
