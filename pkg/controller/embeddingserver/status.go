package embeddingserver

import (
	appsv1 "k8s.io/api/apps/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// statefulSetPhase is the server's phase and message from its StatefulSet
// as last observed, as ToolHive's operator derives them: Ready once a
// replica is ready, Downloading while replicas exist but none is ready
// (the model is fetched before the server answers its probes), Pending
// before that.
func statefulSetPhase(sts *appsv1.StatefulSet) (phase, message string, readyReplicas int32) {
	switch {
	case sts == nil:
		return thv1.EmbeddingServerPhasePending, "Waiting for statefulset", 0
	case sts.Status.ReadyReplicas > 0:
		return thv1.EmbeddingServerPhaseReady, "Embedding server is running", sts.Status.ReadyReplicas
	case sts.Status.Replicas > 0:
		return thv1.EmbeddingServerPhaseDownloading, "Downloading embedding model", 0
	}
	return thv1.EmbeddingServerPhasePending, "Waiting for statefulset", 0
}
