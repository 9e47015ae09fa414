package toolhive

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Group is the API group of ToolHive's custom resources.
const Group = "toolhive.stacklok.dev"

// ChildResources are the kinds of object ToolHive's operator creates for
// its custom resources (the namespaced write rules of its chart's role),
// and hivekeeper a subset of them.
var ChildResources = []schema.GroupVersionResource{
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// Objects are the objects of one namespace by Key.
type Objects map[string]*unstructured.Unstructured

// Key names an object within its namespace: "Kind/name".
func Key(o *unstructured.Unstructured) string { return o.GetKind() + "/" + o.GetName() }

// List reads every object of resources in ns ("" for every namespace), as
// the API server returns it (after its defaulting), by namespace and Key.
// A resource the server does not serve is skipped.
func List(ctx context.Context, dyn dynamic.Interface, ns string, resources []schema.GroupVersionResource) (map[string]Objects, error) {
	out := map[string]Objects{}
	for _, r := range resources {
		list, err := dyn.Resource(r).Namespace(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", r.Resource, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			if out[o.GetNamespace()] == nil {
				out[o.GetNamespace()] = Objects{}
			}
			out[o.GetNamespace()][Key(o)] = o
		}
	}
	return out, nil
}

// Owner returns the ToolHive custom resource that controls o, as
// "Kind/name", or "" when none does.
func Owner(o *unstructured.Unstructured) string {
	for _, ref := range o.GetOwnerReferences() {
		if strings.HasPrefix(ref.APIVersion, Group+"/") {
			return ref.Kind + "/" + ref.Name
		}
	}
	return ""
}

// Keys returns the map's keys in order.
func (objs Objects) Keys() []string {
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// serverSet are the metadata fields the API server sets, never an
// operator: they differ between any two servers and any two writes.
var serverSet = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// Clean returns o as the suites compare it: what an operator sets,
// after the API server's defaulting, without what the server sets
// (serverSet, each ownerReference's uid, a Service's allocated cluster
// IPs, not a headless one's None), without status, and with a Secret's
// values replaced by their lengths. o is not changed.
func Clean(o *unstructured.Unstructured) map[string]any {
	c := o.DeepCopy().Object
	if md, ok := c["metadata"].(map[string]any); ok {
		for _, f := range serverSet {
			delete(md, f)
		}
		if refs, ok := md["ownerReferences"].([]any); ok {
			for _, r := range refs {
				if m, ok := r.(map[string]any); ok {
					delete(m, "uid")
				}
			}
		}
	}
	delete(c, "status")
	if o.GetKind() == "Secret" {
		// An operator's Secret holds what it generated (a session HMAC
		// key): random, and not for a test's log or a golden file.
		for _, field := range []string{"data", "stringData"} {
			if data, ok := c[field].(map[string]any); ok {
				for k, v := range data {
					s, _ := v.(string)
					data[k] = fmt.Sprintf("(%d bytes)", len(s))
				}
			}
		}
	}
	if o.GetKind() == "Service" {
		// An allocated address, not a headless Service's "None".
		if spec, ok := c["spec"].(map[string]any); ok && spec["clusterIP"] != "None" {
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
		}
	}
	return c
}
