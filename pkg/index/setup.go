package index

import (
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
)

// InformerFor returns the shared informer of a workload kind.
func InformerFor(f informers.SharedInformerFactory, kind string) cache.SharedIndexInformer {
	switch kind {
	case thv1.KindMCPServer:
		return f.Toolhive().V1beta1().MCPServers().Informer()
	case thv1.KindMCPRemoteProxy:
		return f.Toolhive().V1beta1().MCPRemoteProxies().Informer()
	case thv1.KindVirtualMCPServer:
		return f.Toolhive().V1beta1().VirtualMCPServers().Informer()
	case thv1.KindMCPServerEntry:
		return f.Toolhive().V1beta1().MCPServerEntries().Informer()
	case thv1.KindEmbeddingServer:
		return f.Toolhive().V1beta1().EmbeddingServers().Informer()
	case thv1.KindMCPRegistry:
		return f.Toolhive().V1beta1().MCPRegistries().Informer()
	}
	return nil
}

// AddToInformers adds the reference indexers to every workload informer of
// the factory. It must run before the factory starts.
func AddToInformers(f informers.SharedInformerFactory) error {
	for _, w := range Workloads {
		idx, err := Indexers(w.Kind)
		if err != nil {
			return err
		}
		if err := InformerFor(f, w.Kind).AddIndexers(idx); err != nil {
			return err
		}
	}
	return nil
}
