package mcpremoteproxy

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// deploymentPhase derives phase and Ready from the proxy Deployment and
// its pods as last observed. A ready replica makes the proxy Ready, even
// while another replica fails; with none, a pod that failed (podFailure)
// makes it Failed, naming the failures, as ToolHive v0.63.0's operator
// does (v0.47.0 read the pods' phase only); else it is Pending, which
// includes an image that cannot be pulled yet, as ToolHive counts it.
func deploymentPhase(dep *appsv1.Deployment, pods []*corev1.Pod) (phase string, ready metav1.ConditionStatus, reason, message string) {
	switch {
	case dep == nil:
		return thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "proxy Deployment not created yet"
	case dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0:
		return thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, thv1.ReasonScaledToZero, "proxy scaled to zero replicas"
	case dep.Status.ReadyReplicas > 0:
		return thv1.MCPRemoteProxyPhaseReady, metav1.ConditionTrue, thv1.ReasonDeploymentReady, "proxy is ready"
	}
	var failures []string
	for _, pod := range pods {
		if f := podFailure(pod); f != "" {
			failures = append(failures, f)
		}
	}
	if len(failures) > 0 {
		slices.Sort(failures)
		return thv1.MCPRemoteProxyPhaseFailed, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady,
			"Remote proxy failed to start: " + strings.Join(slices.Compact(failures), ", ")
	}
	return thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "waiting for proxy pods to become ready"
}

// failedWaitingReasons are the container waiting reasons ToolHive v0.63.0
// counts as a failed pod; the others, such as ImagePullBackOff, it
// counts as pending, since the kubelet retries them and they may pass.
var failedWaitingReasons = []string{"CrashLoopBackOff", "CreateContainerError", "InvalidImageName"}

// podFailure is why a proxy pod failed, as ToolHive v0.63.0's operator
// classifies it: a container waiting for one of failedWaitingReasons, a
// container that exited non-zero (ContainerTerminated), or a pod in phase
// Failed (PodFailed); "" for a pod that has not failed, or is being
// deleted (it is not counted at all).
func podFailure(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return ""
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && slices.Contains(failedWaitingReasons, w.Reason) {
			return w.Reason
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return "ContainerTerminated"
		}
	}
	if pod.Status.Phase == corev1.PodFailed {
		return "PodFailed"
	}
	return ""
}

// checkSpec runs the checks nothing may be deployed without, in
// ToolHive's order: the remote URL gate, the inline Cedar policies, then
// spec.headerForward. It returns the ConfigurationValid reason and
// message of the first failure, or two empty strings.
func checkSpec(p *thv1.MCPRemoteProxy) (reason, message string) {
	if err := wiring.CheckRemoteURL(p.Spec.RemoteURL, p.Spec.AllowPrivateEndpoint); err != nil {
		return thv1.ReasonRemoteURLInvalid, "spec." + err.Error()
	}
	if err := wiring.CheckRemoteProxyCedar(p.Spec.AuthzConfig); err != nil {
		return thv1.ReasonAuthzPolicySyntaxInvalid, err.Error()
	}
	if hf := p.Spec.HeaderForward; hf != nil {
		if err := wiring.CheckHeaderForward(p.Name, hf); err != nil {
			return thv1.ReasonHeaderForwardInvalid, err.Error()
		}
	}
	return "", ""
}
