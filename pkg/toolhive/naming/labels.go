package naming

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Label keys every child carries.
const (
	LabelApp          = "app"
	LabelName         = "app.kubernetes.io/name"
	LabelInstance     = "app.kubernetes.io/instance"
	LabelToolhive     = "toolhive"
	LabelToolhiveName = "toolhive-name"
)

// Labels are the workload labels of a child of the custom resource name of
// the given app (mcpserver, mcpremoteproxy, virtualmcpserver). They are also
// the Deployment selector, so they never change for a given resource.
func Labels(app, name string) map[string]string {
	return map[string]string{
		LabelApp:          app,
		LabelName:         app,
		LabelInstance:     name,
		LabelToolhive:     "true",
		LabelToolhiveName: name,
	}
}

// RunConfigLabels are the labels of a RunConfig ConfigMap, ToolHive's
// operator's: its component, the workload (keyed by its kind, kind being
// thv1.KindMCPServer or thv1.KindMCPRemoteProxy) and the managing operator. They
// enter the content checksum, so they are the same whichever operator
// writes the ConfigMap.
func RunConfigLabels(kind, name string) map[string]string {
	workloadKey := "toolhive.stacklok.io/mcp-server"
	if kind == thv1.KindMCPRemoteProxy {
		workloadKey = "toolhive.stacklok.io/mcp-remote-proxy"
	}
	return map[string]string{
		"toolhive.stacklok.io/component":  "run-config",
		workloadKey:                       name,
		"toolhive.stacklok.io/managed-by": "toolhive-operator",
	}
}

// MergeOperatorWins returns user keys overlaid by the controller's own
// keys: a user override can add keys but can never replace one hivekeeper
// sets (a checksum, a selector label).
func MergeOperatorWins(operator, user map[string]string) map[string]string {
	if len(operator) == 0 && len(user) == 0 {
		return nil
	}
	out := make(map[string]string, len(operator)+len(user))
	maps.Copy(out, user)
	maps.Copy(out, operator)
	return out
}

// OwnerRef is the controller owner reference every child carries, so that
// garbage collection deletes it with its custom resource.
func OwnerRef(owner metav1.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &t,
		BlockOwnerDeletion: &t,
	}
}

// ObjectMeta is the metadata of a child.
func ObjectMeta(name, namespace string, labels, annotations map[string]string, owner metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       namespace,
		Labels:          labels,
		Annotations:     annotations,
		OwnerReferences: []metav1.OwnerReference{owner},
	}
}

// Labels of the children of the two kinds whose children ToolHive's
// operator labels its own way. hivekeeper labels them the same way, and
// watches them by these selectors rather than toolhive=true: the same
// objects, whichever operator made them.
const (
	LabelComponent    = "app.kubernetes.io/component"
	LabelManagedBy    = "app.kubernetes.io/managed-by"
	LabelRegistryName = "toolhive.stacklok.io/registry-name"
	// ManagedByToolHive is the managed-by value of ToolHive's operator,
	// kept so that a child reads the same under either operator.
	ManagedByToolHive = "toolhive-operator"
	// EmbeddingServerSelector selects an EmbeddingServer's StatefulSet and
	// Service.
	EmbeddingServerSelector = LabelName + "=embeddingserver"
	// RegistrySelector selects an MCPRegistry's children (any registry).
	RegistrySelector = LabelRegistryName
	// WorkloadPodSelector selects the pods whose states a workload's status
	// reports: the proxy pods of the MCPServers and MCPRemoteProxies and
	// the vMCPs' pods. One selector, so that all of them share one
	// informer (each controller reads only its own app's pods).
	WorkloadPodSelector = LabelName + " in (" + AppMCPServer + "," + AppMCPRemoteProxy + "," + AppVirtualMCPServer + ")"
)

// EmbeddingServerLabels are the labels of an EmbeddingServer's children,
// and the StatefulSet's selector.
func EmbeddingServerLabels(name string) map[string]string {
	return map[string]string{
		LabelName:      "embeddingserver",
		LabelInstance:  name,
		LabelComponent: "embedding-server",
		LabelManagedBy: ManagedByToolHive,
	}
}

// RegistryLabels are the labels of an MCPRegistry's children; resource is
// the name of the child set they label (the API's, or its account's).
func RegistryLabels(registry, resource string) map[string]string {
	return map[string]string{
		LabelName:         resource,
		LabelComponent:    "registry-api",
		LabelManagedBy:    ManagedByToolHive,
		LabelRegistryName: registry,
	}
}

// RegistrySelectorLabels select the registry API's pods.
func RegistrySelectorLabels(registry string) map[string]string {
	return map[string]string{LabelName: RegistryAPIName(registry), LabelComponent: "registry-api"}
}

// VMCPConfigLabels are the labels of a VirtualMCPServer's configuration
// ConfigMap, ToolHive's. They feed the ConfigMap's content checksum, so
// they are exactly ToolHive's: the pod template annotation carrying it is
// then the same from either operator.
func VMCPConfigLabels(name string) map[string]string {
	return map[string]string{
		"toolhive.stacklok.io/component":          "vmcp-config",
		"toolhive.stacklok.io/virtual-mcp-server": name,
		"toolhive.stacklok.io/managed-by":         "toolhive-operator",
	}
}

// VMCPHMACSecretLabels are the labels of a VirtualMCPServer's session HMAC
// Secret, ToolHive's.
func VMCPHMACSecretLabels(name string) map[string]string {
	return map[string]string{
		LabelName:                      AppVirtualMCPServer,
		LabelInstance:                  name,
		"app.kubernetes.io/component":  "session-security",
		"app.kubernetes.io/managed-by": "toolhive-operator",
	}
}
