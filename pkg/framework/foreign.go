package framework

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// IsWorkloadChild reports whether obj may be a child of a ToolHive
// workload, hivekeeper's or ToolHive's operator's: it is labelled
// toolhive=true, or its controller is of a ToolHive kind. Everything else
// in a namespace (a user's ConfigMaps, the default ServiceAccount, other
// controllers' RoleBindings) is foreign.
func IsWorkloadChild(obj metav1.Object) bool {
	if obj.GetLabels()[naming.LabelToolhive] == "true" {
		return true
	}
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == thv1.GroupName
}

// TrimForeign is the transform of the unfiltered child informers
// (Scope.KubeAll): a workload's child is cached whole, a foreign object as
// a new object of its type holding only its name, namespace, UID,
// resourceVersion, labels and owner references, and a ConfigMap also the
// keys of its data, each with an empty value. That is all a sync reads of
// a foreign object (whether it is a conflict, see EnsureChild; whether a
// user's CA bundle ConfigMap has the key a reference names, as ToolHive
// v0.63.0's operator checks for a VirtualMCPServer), so the cache of every
// ConfigMap, ServiceAccount and RoleBinding of the watched namespaces
// costs a few hundred bytes per foreign object, whatever their data. It is
// idempotent, as a transform must be; anything without object metadata (a
// tombstone) passes unchanged.
func TrimForeign(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil || IsWorkloadChild(m) {
		return obj, nil
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return obj, nil
	}
	stub := reflect.New(v.Type().Elem()).Interface()
	s, err := meta.Accessor(stub)
	if err != nil {
		return obj, nil
	}
	s.SetName(m.GetName())
	s.SetNamespace(m.GetNamespace())
	s.SetUID(m.GetUID())
	s.SetResourceVersion(m.GetResourceVersion())
	s.SetLabels(m.GetLabels())
	s.SetOwnerReferences(m.GetOwnerReferences())
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		keep := stub.(*corev1.ConfigMap)
		keep.Data = keysOnly(cm.Data, "")
		keep.BinaryData = keysOnly(cm.BinaryData, nil)
	}
	return stub, nil
}

// keysOnly is m with every value replaced by empty; nil for nil.
func keysOnly[V any](m map[string]V, empty V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k := range m {
		out[k] = empty
	}
	return out
}
