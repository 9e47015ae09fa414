package mcpremoteproxy

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phases of an MCPRemoteProxy (the status.phase enum of the API). There is
// no Stopped phase: a proxy scaled to zero is Pending with Ready=False
// reason ScaledToZero.
const (
	PhasePending     = "Pending"
	PhaseReady       = "Ready"
	PhaseFailed      = "Failed"
	PhaseTerminating = "Terminating"
)

// deploymentPhase derives phase and Ready from the proxy Deployment as
// last observed.
func deploymentPhase(dep *appsv1.Deployment) (phase string, ready metav1.ConditionStatus, reason, message string) {
	switch {
	case dep == nil:
		return PhasePending, metav1.ConditionFalse, ReasonDeploymentNotReady, "proxy Deployment not created yet"
	case dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0:
		return PhasePending, metav1.ConditionFalse, ReasonScaledToZero, "proxy scaled to zero replicas"
	case dep.Status.ReadyReplicas > 0:
		return PhaseReady, metav1.ConditionTrue, ReasonDeploymentReady, "proxy is ready"
	}
	return PhasePending, metav1.ConditionFalse, ReasonDeploymentNotReady, "waiting for proxy pods to become ready"
}
