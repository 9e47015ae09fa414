package plugin

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Prediction is what a switch would do to the children, as hivekeeper's
// controllers did it to the in-memory copy.
type Prediction struct {
	// Settled is false when the controllers were still writing at the
	// timeout: what follows is then what they had done by then.
	Settled bool `json:"settled"`
	// Restarts are the Deployments and StatefulSets whose pods the switch
	// replaces: their pod template changes, or they are recreated.
	Restarts []Restart `json:"restarts"`
	// Recreated are children deleted and created again: a field that
	// cannot change in place differs.
	Recreated []Change `json:"recreated"`
	// Rewritten are the ConfigMaps whose data changes.
	Rewritten []Change `json:"rewritten"`
	// Created are children that do not exist yet.
	Created []Change `json:"created"`
	// Deleted are children hivekeeper removes and does not create again.
	Deleted []Change `json:"deleted"`
	// Patched are the other children written, which restart nothing.
	Patched []Change `json:"patched"`
	// CustomResources counts the writes to ToolHive's custom resources.
	CustomResources ResourceWrites `json:"customResources"`
}

// Restart is a Deployment or StatefulSet whose pods a switch replaces.
type Restart struct {
	Change
	// Replicas is the count the workload runs (spec.replicas).
	Replicas int32 `json:"replicas"`
	// Pods are its pods now, the ones that would be replaced.
	Pods []string `json:"pods,omitempty"`
}

// pods is how many pods r restarts: the ones running, or the count it
// asks for when none is (yet) listed.
func (r Restart) pods() int {
	if len(r.Pods) > 0 {
		return len(r.Pods)
	}
	return int(r.Replicas)
}

// Change is one child a switch writes.
type Change struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Owner is the custom resource that controls it, "Kind name".
	Owner string `json:"owner,omitempty"`
	// Field is the first field hivekeeper's comparator found different.
	Field string `json:"field,omitempty"`
	// Detail shows that field's values, where there is something short to
	// show.
	Detail string `json:"detail,omitempty"`
}

// ResourceWrites counts the writes to ToolHive's custom resources by what
// they change.
type ResourceWrites struct {
	// Statuses are status subresource writes: hivekeeper words statuses
	// its own way.
	Statuses int `json:"statuses"`
	// Finalizers are finalizers added or removed.
	Finalizers int `json:"finalizers"`
	// Other are the remaining writes (annotations that record a restart
	// request as processed).
	Other int `json:"other"`
}

// kinds names the resources the controllers write.
var kinds = map[string]string{
	"deployments": "Deployment", "statefulsets": "StatefulSet", "configmaps": "ConfigMap", "services": "Service",
	"serviceaccounts": "ServiceAccount", "rolebindings": "RoleBinding", "secrets": "Secret", "pods": "Pod",
}

// predict reads what r did to the copy of snap, object by object, in the
// order of their first writes.
func predict(snap *snapshot, r *run) Prediction {
	p := Prediction{Settled: r.settled, Restarts: []Restart{}, Recreated: []Change{}, Rewritten: []Change{},
		Created: []Change{}, Deleted: []Change{}, Patched: []Change{}}
	var order []string
	byKey := map[string][]write{}
	for _, w := range r.writes {
		if w.gvr.Group == "toolhive.stacklok.dev" {
			countResourceWrite(&p.CustomResources, w)
			continue
		}
		if w.verb == "delete-collection" {
			// Deleting a workload's pods is a restart request acted on.
			p.Restarts = append(p.Restarts, Restart{Change: Change{Kind: kinds[w.gvr.Resource], Namespace: w.namespace, Name: w.selector,
				Field: "a restart request (" + w.gvr.Resource + " matching " + w.selector + " deleted)"}})
			continue
		}
		k := w.key()
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], w)
	}
	for _, k := range order {
		ws := byKey[k]
		w := ws[0]
		live := snap.live[k]
		final, _ := r.kube.Tracker().Get(w.gvr, w.namespace, w.name)
		c := Change{Kind: kinds[w.gvr.Resource], Namespace: w.namespace, Name: w.name, Owner: ownerOf(final, live)}
		if c.Kind == "" {
			c.Kind = w.gvr.Resource
		}
		fields := r.drift[k]
		if len(fields) > 0 {
			c.Field = fields[0]
		}
		deleted := slices.ContainsFunc(ws, func(w write) bool { return w.verb == "delete" })
		podOwner := w.gvr.Resource == "deployments" || w.gvr.Resource == "statefulsets"
		switch {
		case deleted && live != nil && final != nil:
			c.Detail = describe(c.Field, live, final)
			p.Recreated = append(p.Recreated, c)
			if podOwner {
				p.Restarts = append(p.Restarts, restartOf(c, live))
			}
		case deleted && live != nil:
			p.Deleted = append(p.Deleted, c)
		case live == nil:
			if final != nil {
				p.Created = append(p.Created, c)
			}
		case podOwner && (restarting(fields) || (len(fields) == 0 && templateChanged(live, final))):
			if i := slices.IndexFunc(fields, restartField); i >= 0 {
				c.Field = fields[i]
			}
			if c.Field == "" {
				c.Field = "spec.template"
			}
			c.Detail = describe(c.Field, live, final)
			p.Restarts = append(p.Restarts, restartOf(c, live))
		case w.gvr.Resource == "configmaps" && dataChanged(live, final):
			c.Field = "data"
			c.Detail = describe(c.Field, live, final)
			p.Rewritten = append(p.Rewritten, c)
		default:
			c.Detail = describe(c.Field, live, final)
			p.Patched = append(p.Patched, c)
		}
	}
	return p
}

// restartField reports whether a drift field, when it fires, changes the
// pod template: a field of it, or a hash annotation that stands for a
// part of it (a podTemplateSpec, the volumes) the comparator does not
// compare by value.
func restartField(f string) bool {
	return strings.HasPrefix(f, "spec.template") || (strings.HasPrefix(f, "metadata.annotations[") && strings.Contains(f, "hash"))
}

func restarting(fields []string) bool { return slices.ContainsFunc(fields, restartField) }

func restartOf(c Change, live runtime.Object) Restart {
	r := Restart{Change: c, Replicas: 1}
	switch o := live.(type) {
	case *appsv1.Deployment:
		r.Replicas = ptr.Deref(o.Spec.Replicas, 1)
	case *appsv1.StatefulSet:
		r.Replicas = ptr.Deref(o.Spec.Replicas, 1)
	}
	return r
}

// templateChanged compares the pod templates of a workload written
// without a comparator (a restart request stamped on it).
func templateChanged(live, final runtime.Object) bool {
	lt, ft := podTemplate(live), podTemplate(final)
	return lt != nil && ft != nil && !reflect.DeepEqual(lt.Annotations, ft.Annotations)
}

func dataChanged(live, final runtime.Object) bool {
	ld, fd := configMapData(live), configMapData(final)
	return !reflect.DeepEqual(ld, fd) && (len(ld) > 0 || len(fd) > 0)
}

// ownerOf names the controller of the child, "Kind name".
func ownerOf(objs ...runtime.Object) string {
	for _, o := range objs {
		if o == nil || reflect.ValueOf(o).IsNil() {
			continue
		}
		if m, ok := o.(metav1.Object); ok {
			if ref := metav1.GetControllerOf(m); ref != nil {
				return ref.Kind + " " + ref.Name
			}
		}
	}
	return ""
}

// countResourceWrite sorts a write to a custom resource.
func countResourceWrite(c *ResourceWrites, w write) {
	switch {
	case w.subresource == "status":
		c.Statuses++
	case w.verb == "patch" && patchTouches(w.patch, "metadata", "finalizers"):
		c.Finalizers++
	default:
		c.Other++
	}
}

// patchTouches reports whether a merge patch sets the field at path.
func patchTouches(patch []byte, path ...string) bool {
	var doc any
	if json.Unmarshal(patch, &doc) != nil {
		return false
	}
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return false
		}
		if doc, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

// kindOf is the Go type name of obj, its kind for the types here.
func kindOf(obj runtime.Object) string {
	t := reflect.TypeOf(obj)
	if t == nil {
		return ""
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
