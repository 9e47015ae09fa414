package mcpserver

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// deploymentPhase derives phase, Ready and readyReplicas from the proxy
// Deployment and its pods as last observed. A ready replica makes the
// server Ready, even while another replica fails; with none, a pod that
// failed (workload.PodFailure) makes it Failed, "MCP server pod failed: "
// and the first failure in the order ToolHive v0.63.0's operator lists
// the pods (by name), as that operator reports it; else it is Pending,
// which includes an image that cannot be pulled yet.
func deploymentPhase(dep *appsv1.Deployment, pods []*corev1.Pod) (phase string, ready metav1.ConditionStatus, reason, message string, readyReplicas int32) {
	if dep == nil {
		return thv1.MCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "proxy Deployment not created yet", 0
	}
	readyReplicas = dep.Status.ReadyReplicas
	if dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0 {
		return thv1.MCPServerPhaseStopped, metav1.ConditionFalse, thv1.ReasonScaledToZero, "proxy scaled to zero replicas", readyReplicas
	}
	if readyReplicas > 0 {
		return thv1.MCPServerPhaseReady, metav1.ConditionTrue, thv1.ReasonDeploymentReady, "proxy is ready", readyReplicas
	}
	pods = slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, pod := range pods {
		if f := workload.PodFailure(pod); f != "" {
			return thv1.MCPServerPhaseFailed, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "MCP server pod failed: " + f, readyReplicas
		}
	}
	return thv1.MCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "waiting for proxy pods to become ready", readyReplicas
}
