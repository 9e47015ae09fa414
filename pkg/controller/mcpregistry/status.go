package mcpregistry

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// deploymentPhase is the registry's phase and Ready condition from its
// Deployment as last observed, as ToolHive's operator derives them: Ready
// once a replica is ready, Pending before.
func deploymentPhase(dep *appsv1.Deployment) (phase string, ready metav1.ConditionStatus, reason, message string) {
	if dep != nil && dep.Status.ReadyReplicas > 0 {
		return thv1.MCPRegistryPhaseReady, metav1.ConditionTrue, thv1.ReasonRegistryReady, "Registry API is ready and serving requests"
	}
	return thv1.MCPRegistryPhasePending, metav1.ConditionFalse, thv1.ReasonRegistryNotReady, "Registry API deployment is not ready yet"
}

// childReason is ToolHive's Ready reason for a child that could not be
// written.
func childReason(resource string) string {
	switch resource {
	case "configmaps":
		return thv1.ReasonRegistryConfigMapFailed
	case "serviceaccounts", "rolebindings":
		return thv1.ReasonRegistryRBACFailed
	case "deployments":
		return thv1.ReasonRegistryDeploymentFailed
	case "services":
		return thv1.ReasonRegistryServiceFailed
	}
	return thv1.ReasonChildWriteFailed
}
