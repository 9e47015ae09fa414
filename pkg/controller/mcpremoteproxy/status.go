package mcpremoteproxy

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// deploymentPhase derives phase and Ready from the proxy Deployment and
// its pods as last observed, with ToolHive v0.63.0's operator's messages.
// A ready replica makes the proxy Ready, even while another replica
// fails; with none, a pod that failed (workload.PodFailure) makes it
// Failed, naming the failures, as that operator does (v0.47.0 read the
// pods' phase only); else it is Pending, "starting" while a pod exists
// (an image that cannot be pulled yet included, as ToolHive counts it)
// and "no pods" before. pods are workload.ProxyPods.Of's: those being
// deleted are not counted.
func deploymentPhase(dep *appsv1.Deployment, pods []*corev1.Pod) (phase string, ready metav1.ConditionStatus, reason, message string) {
	switch {
	case dep == nil:
		return thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "No pods found for remote proxy"
	case dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0:
		return thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, thv1.ReasonScaledToZero, "proxy scaled to zero replicas"
	case dep.Status.ReadyReplicas > 0:
		return thv1.MCPRemoteProxyPhaseReady, metav1.ConditionTrue, thv1.ReasonDeploymentReady, "Remote proxy is running"
	}
	var failures []string
	for _, pod := range pods {
		if f := workload.PodFailure(pod); f != "" {
			failures = append(failures, f)
		}
	}
	if len(failures) > 0 {
		slices.Sort(failures)
		return thv1.MCPRemoteProxyPhaseFailed, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady,
			"Remote proxy failed to start: " + strings.Join(slices.Compact(failures), ", ")
	}
	if len(pods) > 0 {
		return thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "Remote proxy is starting"
	}
	return thv1.MCPRemoteProxyPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "No pods found for remote proxy"
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
