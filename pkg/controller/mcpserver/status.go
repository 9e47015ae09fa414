package mcpserver

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// deploymentPhase derives phase, Ready and readyReplicas from the proxy
// Deployment and its pods as last observed, in ToolHive v0.63.0's
// operator's words: Ready's reason is only ever Ready or NotReady, and the
// message says where the server is. A ready replica makes the server
// Ready, even while another replica fails; with none, a pod that failed
// (workload.PodFailure) makes it Failed, "MCP server pod failed: " and the
// first failure in the order that operator lists the pods (by name); else
// it is Pending, "starting" while a pod exists (which includes an image
// that cannot be pulled yet) and "being created" before. pods are
// workload.ProxyPods.All's: those being deleted are not counted, as
// there, but they are listed, so that a proxy whose only pods are
// terminating (the old pod of a rollout) reads "No healthy pods found",
// as there, not "being created".
//
// A ready proxy whose runner StatefulSet is missing (runnerMissing) is
// Pending, not Ready, as ToolHive v0.63.0's operator reports it: the
// proxy answers, but the MCP server behind it is gone. hivekeeper does not
// restart the proxy to have the runner create the StatefulSet again, and
// its message says what does.
func deploymentPhase(dep *appsv1.Deployment, pods []*corev1.Pod, runnerMissing bool) (phase string, ready metav1.ConditionStatus, reason, message string, readyReplicas int32) {
	if dep == nil {
		return thv1.MCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonNotReady, "MCP server is being created", 0
	}
	readyReplicas = dep.Status.ReadyReplicas
	if dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0 {
		return thv1.MCPServerPhaseStopped, metav1.ConditionFalse, thv1.ReasonNotReady, "MCP server is stopped (scaled to zero)", readyReplicas
	}
	if readyReplicas > 0 && runnerMissing {
		return thv1.MCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonNotReady, msgRunnerMissing, readyReplicas
	}
	if readyReplicas > 0 {
		return thv1.MCPServerPhaseReady, metav1.ConditionTrue, thv1.ReasonReady, "MCP server is running", readyReplicas
	}
	if len(pods) == 0 {
		return thv1.MCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonNotReady, "MCP server is being created", readyReplicas
	}
	counted := slices.SortedFunc(slices.Values(workload.Counted(pods)), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, pod := range counted {
		if f := workload.PodFailure(pod); f != "" {
			return thv1.MCPServerPhaseFailed, metav1.ConditionFalse, thv1.ReasonNotReady, "MCP server pod failed: " + f, readyReplicas
		}
	}
	if len(counted) > 0 {
		return thv1.MCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonNotReady, "MCP server is starting", readyReplicas
	}
	return thv1.MCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonNotReady, "No healthy pods found", readyReplicas
}

// msgRunnerMissing is the status message of a ready proxy whose runner
// StatefulSet is missing.
const msgRunnerMissing = "MCP server proxy is running; its workload StatefulSet is missing " +
	"(the runner creates it when the proxy restarts: kubectl rollout restart deployment, or the restarted-at annotation)"

// advisories sets the conditions ToolHive v0.63.0's operator writes on
// every MCPServer from its spec alone, before it resolves a single
// reference, in its words: StdioReplicaCapped, SessionStorageWarning,
// AuthzPrimaryUpstreamProviderIgnored and RateLimitConfigValid. None changes what is deployed.
func advisories(r *workload.Report, s *thv1.MCPServer) {
	if naming.MCPServerTransport(s) == thv1.TransportStdio && s.Spec.Replicas != nil && *s.Spec.Replicas > 1 {
		r.Set(thv1.ConditionStdioReplicaCapped, metav1.ConditionTrue, thv1.ReasonStdioReplicaCapped,
			"stdio transport requires exactly 1 replica; deployment will use 1 regardless of spec.replicas")
	} else {
		r.Set(thv1.ConditionStdioReplicaCapped, metav1.ConditionFalse, thv1.ReasonStdioReplicaCapNotActive, "stdio replica cap is not active")
	}
	workload.SessionStorageWarning(r, s.Spec.Replicas, s.Spec.SessionStorage)
	workload.PrimaryUpstreamIgnored(r, thv1.KindMCPServer, s.Spec.AuthzConfig)
	rl := s.Spec.RateLimiting
	if rl == nil {
		r.Set(thv1.ConditionRateLimitConfigValid, metav1.ConditionTrue, thv1.ReasonRateLimitNotApplicable, "rate limiting is not configured")
		return
	}
	perUser := rl.PerUser != nil || slices.ContainsFunc(rl.Tools, func(t thv1.ToolRateLimitConfig) bool { return t.PerUser != nil })
	if perUser && s.Spec.OIDCConfigRef == nil && s.Spec.ExternalAuthConfigRef == nil {
		// The schema refuses this; kept for objects stored before it did.
		r.Set(thv1.ConditionRateLimitConfigValid, metav1.ConditionFalse, thv1.ReasonRateLimitPerUserRequiresAuth,
			"perUser rate limiting requires authentication to be enabled (oidcConfigRef or externalAuthConfigRef)")
		return
	}
	r.Set(thv1.ConditionRateLimitConfigValid, metav1.ConditionTrue, thv1.ReasonRateLimitConfigValid, "rate limit configuration is valid")
}
