package mcpserver

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// deploymentPhase derives phase, Ready and readyReplicas from the proxy
// Deployment as last observed.
func deploymentPhase(dep *appsv1.Deployment) (phase string, ready metav1.ConditionStatus, reason, message string, readyReplicas int32) {
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
	return thv1.MCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "waiting for proxy pods to become ready", readyReplicas
}
