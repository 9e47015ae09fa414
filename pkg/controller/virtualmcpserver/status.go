package virtualmcpserver

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// deploymentPhase derives phase and Ready from the Deployment and its pods
// as last observed, in ToolHive v0.63.0's operator's words where it has
// them (no pods, starting, failed to start, running). Degraded means
// "serving, but not as asked": fewer pods are ready than wanted. (A
// missing group never gets here: the server is Failed before anything is
// written.) pods are workload.ProxyPods.All's, those being deleted
// included, as that operator counts a vMCP's: with none ready, a vMCP
// with any pod is starting, one with none has no pods.
func deploymentPhase(dep *appsv1.Deployment, pods []*corev1.Pod) (phase string, ready metav1.ConditionStatus, reason, message string) {
	switch {
	case dep == nil:
		return thv1.VirtualMCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "No pods found for Virtual MCP server"
	case dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0:
		// Asked for no pod: one left failed says nothing of a server
		// not meant to run.
		return thv1.VirtualMCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonScaledToZero, "vMCP scaled to zero replicas"
	case failedToStart(pods):
		return thv1.VirtualMCPServerPhaseFailed, metav1.ConditionFalse, thv1.ReasonDeploymentFailed, "Virtual MCP server failed to start"
	case dep.Status.ReadyReplicas == 0 && len(pods) == 0:
		// By the pods, as ToolHive's operator tells "no pods" from
		// "starting": the Deployment's replicas leave terminating pods
		// out, which that operator counts as starting.
		return thv1.VirtualMCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "No pods found for Virtual MCP server"
	case dep.Status.ReadyReplicas == 0:
		return thv1.VirtualMCPServerPhasePending, metav1.ConditionFalse, thv1.ReasonDeploymentNotReady, "Virtual MCP server is starting"
	case dep.Status.ReadyReplicas < ptr.Deref(dep.Spec.Replicas, 1):
		return thv1.VirtualMCPServerPhaseDegraded, metav1.ConditionTrue, thv1.ReasonDeploymentDegraded,
			fmt.Sprintf("%d of %d vMCP pods ready", dep.Status.ReadyReplicas, ptr.Deref(dep.Spec.Replicas, 1))
	}
	return thv1.VirtualMCPServerPhaseReady, metav1.ConditionTrue, thv1.ReasonDeploymentReady, "Virtual MCP server is running"
}

// failedToStart is ToolHive v0.63.0's operator's test of a vMCP that
// failed to start: a pod in phase Failed and none ready (by its Ready
// condition; a Failed pod is not counted as ready). It is that
// operator's first check of the pods, before "starting" or "no pods". A
// container in CrashLoopBackOff leaves the pod Running, so the vMCP
// starting, as there: only a pod the kubelet gave up on (evicted, say)
// counts.
func failedToStart(pods []*corev1.Pod) bool {
	failed, ready := 0, 0
	for _, pod := range pods {
		switch {
		case pod.Status.Phase == corev1.PodFailed:
			failed++
		case workload.PodReady(pod):
			ready++
		}
	}
	return failed > 0 && ready == 0
}

// projectRuntime copies what vmcp reports of itself (status.runtime,
// which vmcp writes and the controller never does) into the fields
// ToolHive's operator projects it into: discoveredBackends, backendCount
// (the "Backends" column: ready and unauthenticated backends) and vmcp's
// conditions other than Ready, whose Degraded and BackendsDiscovered go
// when vmcp no longer reports them. Ready stays the controller's verdict
// (backendHealth). Without a report nothing is touched, as there.
func projectRuntime(r *workload.Report, status *thv1.VirtualMCPServerStatus) {
	rt := status.Runtime
	if rt == nil {
		return
	}
	status.DiscoveredBackends = slices.Clone(rt.DiscoveredBackends)
	status.BackendCount = 0
	for _, b := range rt.DiscoveredBackends {
		if routable(b.Status) {
			status.BackendCount++
		}
	}
	reported := map[string]bool{}
	for _, c := range rt.Conditions {
		reported[c.Type] = true
		if c.Type != thv1.ConditionReady {
			r.Set(c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, t := range []string{thv1.ConditionDegraded, thv1.ConditionBackendsDiscovered} {
		if !reported[t] {
			r.Remove(t)
		}
	}
}

// routable: a backend vmcp can send requests to. An unauthenticated one
// answers only with a user's token, which vmcp's probes do not carry.
func routable(status string) bool {
	return status == thv1.BackendStatusReady || status == thv1.BackendStatusUnauthenticated
}

// backendHealth turns a serving vMCP's phase by its backends' health as
// vmcp last reported it (status.discoveredBackends, which projectRuntime
// has already brought up to date), as ToolHive's operator does: with
// every backend down it is Degraded and not Ready, so that a gateway
// answering nothing useful does not read Ready. Some down is Degraded and
// not Ready too. No backends leaves the Deployment's verdict.
func backendHealth(status *thv1.VirtualMCPServerStatus, phase string, ready metav1.ConditionStatus, reason, message string) (string, metav1.ConditionStatus, string, string) {
	backends := status.DiscoveredBackends
	up := 0
	for _, b := range backends {
		if routable(b.Status) {
			up++
		}
	}
	switch down := len(backends) - up; {
	case down == 0:
		return phase, ready, reason, message
	case up == 0:
		return thv1.VirtualMCPServerPhaseDegraded, metav1.ConditionFalse, thv1.ReasonBackendsUnavailable,
			fmt.Sprintf("Virtual MCP server is running but all %d backends are unhealthy", down)
	default:
		return thv1.VirtualMCPServerPhaseDegraded, metav1.ConditionFalse, thv1.ReasonBackendsDegraded,
			fmt.Sprintf("Virtual MCP server is running with %d/%d backends available", up, len(backends))
	}
}

// authServerCondition keeps AuthServerConfigValidated as ToolHive's
// operator does: absent without spec.authServerConfig, True once the
// server was built with it. A refusal sets it False through
// workload.Base.Settle; another build error leaves it as it was. An
// upstream filter without a server is such a refusal (ToolHive v0.63.0
// reports it on this condition), so the condition is not removed then.
func authServerCondition(r *workload.Report, v *thv1.VirtualMCPServer, buildErr error) {
	switch {
	case v.Spec.AuthServerConfig == nil && v.Spec.AuthServerUpstreamFilter == nil:
		r.Remove(thv1.ConditionAuthServerConfigValidated)
	case v.Spec.AuthServerConfig == nil:
		// The filter alone: Settle reports its refusal.
	case buildErr == nil:
		r.Set(thv1.ConditionAuthServerConfigValidated, metav1.ConditionTrue, thv1.ReasonAuthServerConfigValid, "AuthServerConfig is valid")
	}
}

// embeddingReady is ToolHive's test of an EmbeddingServer a vMCP may use:
// phase Ready with a ready replica.
func embeddingReady(e *thv1.EmbeddingServer) bool {
	return e.Status.Phase == thv1.EmbeddingServerPhaseReady && e.Status.ReadyReplicas > 0
}

// embeddingService resolves spec.embeddingServerRef as ToolHive's operator
// does: without a reference there is nothing to wait for; a missing
// EmbeddingServer fails the vMCP (EmbeddingServerNotFound, one Warning
// event); one not ready yet, or failed, keeps it Pending with nothing
// written (EmbeddingServerNotReady); a ready one is its URL, which
// config.yaml's optimizer calls. Its events re-sync the vMCP through the
// index, so the wait is not polled.
func embeddingService(r *workload.Report, v *thv1.VirtualMCPServer, e *thv1.EmbeddingServer) (url string, ok bool) {
	ref := v.Spec.EmbeddingServerRef
	switch {
	case ref == nil:
		r.Remove(thv1.ConditionEmbeddingServerReady)
		return "", true
	case e == nil:
		msg := fmt.Sprintf("Referenced EmbeddingServer %s not found", ref.Name)
		r.Set(thv1.ConditionEmbeddingServerReady, metav1.ConditionFalse, thv1.ReasonEmbeddingServerNotFound, msg)
		r.Fail(thv1.ReasonEmbeddingServerNotFound, msg)
		return "", false
	case e.Status.Phase == thv1.EmbeddingServerPhaseFailed:
		msg := fmt.Sprintf("EmbeddingServer %s has failed", ref.Name)
		r.Set(thv1.ConditionEmbeddingServerReady, metav1.ConditionFalse, thv1.ReasonEmbeddingServerNotReady, msg)
		r.Pending(thv1.ReasonEmbeddingServerNotReady, msg)
		return "", false
	case !embeddingReady(e):
		r.Set(thv1.ConditionEmbeddingServerReady, metav1.ConditionFalse, thv1.ReasonEmbeddingServerNotReady, "EmbeddingServer is not yet ready")
		r.Pending(thv1.ReasonEmbeddingServerNotReady, "Waiting for EmbeddingServer to become ready")
		return "", false
	}
	r.Set(thv1.ConditionEmbeddingServerReady, metav1.ConditionTrue, thv1.ReasonEmbeddingServerReady, "EmbeddingServer is ready")
	return e.Status.URL, true
}

// primaryUpstreamAdvisories are what ToolHive's operator says about the
// upstream a VirtualMCPServer's inline or ConfigMap authorization reads
// its claims from: a Warning event, once per spec change, while it is
// named in the deprecated spec.incomingAuth.authzConfig.inline field;
// and the AuthzUpstreamSelectionWarning condition while the first of
// several upstreams is chosen because none is named. A spec that is
// refused for its primary upstream (render/vmcp) gets neither condition.
func primaryUpstreamAdvisories(r *workload.Report, v *thv1.VirtualMCPServer, recorder record.EventRecorder) {
	as := v.Spec.AuthServerConfig
	if v.Spec.IncomingAuth.AuthzConfig == nil || (as != nil && len(as.UpstreamProviders) == 0) {
		r.Remove(thv1.ConditionAuthzUpstreamSelectionWarning)
		return
	}
	explicit, deprecated := wiring.PrimaryUpstreamProvider(v)
	if deprecated && v.Generation != v.Status.ObservedGeneration {
		recorder.Event(v, corev1.EventTypeWarning, thv1.ReasonAuthzPrimaryUpstreamProviderDeprecated,
			"spec.incomingAuth.authzConfig.inline.primaryUpstreamProvider is deprecated; move the value to spec.authServerConfig.primaryUpstreamProvider")
	}
	if as == nil || len(as.UpstreamProviders) < 2 || explicit != "" {
		r.Remove(thv1.ConditionAuthzUpstreamSelectionWarning)
		return
	}
	r.Set(thv1.ConditionAuthzUpstreamSelectionWarning, metav1.ConditionTrue, thv1.ReasonAuthzUpstreamAutoSelected,
		fmt.Sprintf("multiple upstreamProviders configured; Cedar policies will evaluate claims from the first upstream (%q). "+
			"If another upstream should be authoritative, set spec.incomingAuth.authzConfig.inline.primaryUpstreamProvider explicitly, "+
			"or remove or reorder the list.", as.UpstreamProviders[0].Name))
}

// inboundGrantAdvisory is DeprecatedInboundGrantConfiguration, which
// ToolHive's operator sets on every sync of a VirtualMCPServer with its
// own authorization server, before any check (the legacy grant fields
// set, with their replacements, or False), with one Warning event when it
// turns True; without a server it is removed.
func inboundGrantAdvisory(r *workload.Report, v *thv1.VirtualMCPServer, recorder record.EventRecorder) {
	if v.Spec.AuthServerConfig == nil {
		r.Remove(wiring.ConditionDeprecatedInboundGrantConfig)
		return
	}
	a := wiring.DeprecatedInboundGrants(v.Spec.AuthServerConfig, "spec.authServerConfig")
	r.Set(a.Type, a.Status, a.Reason, a.Message)
	if a.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(v.Status.Conditions, a.Type) {
		recorder.Event(v, corev1.EventTypeWarning, a.Event, a.EventMessage)
	}
}

// identityAdvisory is IdentitySynthesized, which ToolHive's operator sets
// on a VirtualMCPServer with its own authorization server once its group
// is found, whether the server is then valid or not, and removes without
// a server.
func identityAdvisory(r *workload.Report, v *thv1.VirtualMCPServer) {
	if v.Spec.AuthServerConfig == nil {
		r.Remove(wiring.ConditionIdentitySynthesized)
		return
	}
	a := wiring.IdentitySynthesized(v.Spec.AuthServerConfig)
	r.Set(a.Type, a.Status, a.Reason, a.Message)
}
