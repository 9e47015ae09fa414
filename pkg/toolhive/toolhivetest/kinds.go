package toolhivetest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// NewEmbeddingServer returns an EmbeddingServer with the schema's
// defaults applied, as the API server hands it to a client.
func NewEmbeddingServer(ns, name string, mut ...func(*thv1.EmbeddingServer)) *thv1.EmbeddingServer {
	e := &thv1.EmbeddingServer{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindEmbeddingServer},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: k8stypes.UID("emb-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: thv1.EmbeddingServerSpec{
			Model:           "BAAI/bge-small-en-v1.5",
			Image:           "ghcr.io/huggingface/text-embeddings-inference:cpu-latest",
			ImagePullPolicy: "IfNotPresent",
			Port:            8080,
			Replicas:        ptr.To[int32](1),
		},
	}
	for _, m := range mut {
		m(e)
	}
	return e
}

// WithModelCache gives the server a model cache of size (the schema's
// defaults for the rest).
func WithModelCache(size string) func(*thv1.EmbeddingServer) {
	return func(e *thv1.EmbeddingServer) {
		e.Spec.ModelCache = &thv1.ModelCacheConfig{Enabled: true, Size: size, AccessMode: "ReadWriteOnce"}
	}
}

// EmbeddingFullTemplate is a podTemplateSpec as ToolHive's advanced example
// writes it: pod annotations, scheduling, a pod security context and the
// embedding container's own.
const EmbeddingFullTemplate = `{"metadata":{"annotations":{"prometheus.io/scrape":"true"}},"spec":{` +
	`"nodeSelector":{"workload":"ml-inference"},` +
	`"tolerations":[{"key":"ml-workload","operator":"Equal","value":"true","effect":"NoSchedule"}],` +
	`"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"labelSelector":{"matchExpressions":[{"key":"app.kubernetes.io/name","operator":"In","values":["mcpembedding"]}]},"topologyKey":"kubernetes.io/hostname"}}]}},` +
	`"securityContext":{"runAsNonRoot":true,"runAsUser":1000,"fsGroup":1000},` +
	`"initContainers":[{"name":"warm","image":"busybox:1","command":["true"]}],` +
	`"containers":[{"name":"embedding","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}`

// NewMCPRegistry returns an MCPRegistry with a minimal configuration.
func NewMCPRegistry(ns, name string, mut ...func(*thv1.MCPRegistry)) *thv1.MCPRegistry {
	r := &thv1.MCPRegistry{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPRegistry},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: k8stypes.UID("reg-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: thv1.MCPRegistrySpec{
			ConfigYAML: "sources:\n  - name: k8s\n    kubernetes: {}\nregistries:\n  - name: default\n    sources: [\"k8s\"]\nauth:\n  mode: anonymous\n",
		},
	}
	for _, m := range mut {
		m(r)
	}
	return r
}

// RegistryFullTemplate is a registry podTemplateSpec that sets scheduling,
// a sidecar, the API container's resources and a volume of its own.
const RegistryFullTemplate = `{"metadata":{"labels":{"team":"platform"}},"spec":{` +
	`"nodeSelector":{"pool":"infra"},` +
	`"tolerations":[{"key":"infra","operator":"Exists","effect":"NoSchedule"}],` +
	`"volumes":[{"name":"extra","emptyDir":{}}],` +
	`"containers":[{"name":"registry-api","resources":{"requests":{"cpu":"200m"}},"volumeMounts":[{"name":"extra","mountPath":"/extra"}]},` +
	`{"name":"sidecar","image":"busybox:1","args":["sleep","3600"]}]}}`
