package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// ChildOps tells EnsureChild how to read, write and compare one kind of
// child. Get reads the informer cache; Diff and PatchBody are the pure
// comparator and owned-field patch of the kind.
type ChildOps[T metav1.Object] struct {
	// Resource names the kind in metrics and logs ("deployments").
	Resource string
	Get      func(namespace, name string) (T, error)
	// Client returns the typed client of a namespace.
	Client func(namespace string) ChildClient[T]
	// Diff returns the names of the owned fields that differ.
	Diff func(want, have T) []string
	// NeedsRecreate reports drift in an immutable field; optional.
	NeedsRecreate func(want, have T) bool
	// PatchBody is the merge patch of the owned fields; adopt adds the
	// controller owner reference to an orphan.
	PatchBody func(want, have T, adopt bool) ([]byte, error)
	// Written, optional, is given every child EnsureChild patched, as the
	// API server answered (see FreshReads). Creates are not given: a read
	// of a child the cache has not seen yet finds it missing all the same,
	// and the create's AlreadyExists path reads it live.
	Written func(T)
}

// ChildClient is the subset of a generated typed client EnsureChild uses;
// kube.CoreV1().ConfigMaps(ns) and its siblings satisfy it as they are.
type ChildClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// ChildConflictError reports a child that exists under another controller,
// or (Owner empty) without the labels and owner reference that would make
// it hivekeeper's. hivekeeper adopts nothing that has another controller
// owner.
type ChildConflictError struct {
	Resource, Namespace, Name, Owner string
}

func newConflict(resource string, obj metav1.Object) *ChildConflictError {
	e := &ChildConflictError{Resource: resource, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if ref := metav1.GetControllerOf(obj); ref != nil {
		e.Owner = ref.Kind + "/" + ref.Name
	}
	return e
}

func (e *ChildConflictError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("%s %s/%s exists and is not hivekeeper's: it has no controller and no toolhive=true label", e.Resource, e.Namespace, e.Name)
	}
	return fmt.Sprintf("%s %s/%s exists and is controlled by %s", e.Resource, e.Namespace, e.Name, e.Owner)
}

// Drift counts one comparison that fired, logs it at verbosity 2 and
// tells the Deps' DriftObserver, if any.
func (w *Writer) Drift(ctx context.Context, resource string, obj klog.ObjectRef, fields []string) {
	for _, f := range fields {
		metrics.DriftDetections.WithLabelValues(w.controller, resource, f).Inc()
	}
	if w.onDrift != nil {
		w.onDrift(w.controller, resource, obj, fields)
	}
	klog.FromContext(ctx).V(2).Info("Drift detected", "resource", resource, "object", obj, "fields", fields)
}

// EnsureChild converges one child: it creates the child when missing,
// patches the owned fields when they drifted, and does nothing at all when
// the live child already matches. It returns the live (or created) child.
// An orphan of the same name labelled toolhive=true is adopted; anything
// else of that name, controlled by another owner or an unlabelled orphan,
// is left alone and reported as a ChildConflictError.
//
// A kind whose cache holds only children labelled toolhive=true
// (Scope.Kube) misses one that lost the label (someone edited it), so the
// create fails with AlreadyExists; the child is then read from the API
// server and taken back, labels restored, when its controller reference is
// this owner's. The kinds ToolHive's operator writes without that label
// are cached whole (Scope.KubeAll): a child it wrote is found here, so
// taking over from it costs no write where the bytes already match.
func EnsureChild[T metav1.Object](ctx context.Context, w *Writer, ops ChildOps[T], want T, ownerUID types.UID) (T, error) {
	var zero T
	ns, name := want.GetNamespace(), want.GetName()
	have, err := ops.Get(ns, name)
	if apierrors.IsNotFound(err) {
		created, err := CreateChild(ctx, w, ownerUID, ops.Resource, ops.Client(ns).Create, want)
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		live, getErr := ops.Client(ns).Get(ctx, name, metav1.GetOptions{})
		if getErr != nil {
			return zero, err
		}
		if ref := metav1.GetControllerOf(live); ref == nil || ref.UID != ownerUID {
			return zero, newConflict(ops.Resource, live)
		}
		have = live
	} else if err != nil {
		return zero, err
	}
	ref := metav1.GetControllerOf(have)
	if (ref != nil && ref.UID != ownerUID) || (ref == nil && have.GetLabels()[naming.LabelToolhive] != "true") {
		return zero, newConflict(ops.Resource, have)
	}
	adopt := ref == nil
	fields := ops.Diff(want, have)
	if adopt {
		fields = append(fields, "metadata.ownerReferences")
	}
	if len(fields) == 0 {
		w.Skipped(ops.Resource)
		return have, nil
	}
	w.Drift(ctx, ops.Resource, klog.KRef(ns, name), fields)
	if ops.NeedsRecreate != nil && ops.NeedsRecreate(want, have) {
		// An immutable field differs: delete now, the delete event brings
		// the owner back and the next sync creates the child afresh.
		uid := have.GetUID()
		return zero, DeleteChild(ctx, w, ownerUID, ops.Resource, ns, name, ops.Client(ns).Delete, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	}
	body, err := ops.PatchBody(want, have, adopt)
	if err != nil {
		return zero, fmt.Errorf("building patch for %s %s/%s: %w", ops.Resource, ns, name, err)
	}
	patch := ops.Client(ns).Patch
	if ops.Written != nil {
		patch = func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (T, error) {
			out, err := ops.Client(ns).Patch(ctx, name, pt, data, opts, sub...)
			if err == nil {
				ops.Written(out)
			}
			return out, err
		}
	}
	if err := PatchChild(ctx, w, ownerUID, ops.Resource, ns, name, have.GetResourceVersion(), patch, body); err != nil {
		return zero, err
	}
	return have, nil
}

// DeleteCollection deletes every object of a resource matching selector in
// one request (used to restart proxy pods immediately).
func DeleteCollection(ctx context.Context, w *Writer, resource, namespace string, del func(context.Context, metav1.DeleteOptions, metav1.ListOptions) error, selector string) error {
	if err := w.allow(); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Deleting collection", "resource", resource, "namespace", namespace, "selector", selector)
	err := del(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
	w.count(ctx, resource, metrics.VerbDelete, err)
	if err != nil {
		return fmt.Errorf("deleting %s in %s matching %s: %w", resource, namespace, selector, err)
	}
	return nil
}

// DeleteStaleChild deletes a child the owner created earlier but no longer
// wants (for example the runner RBAC once the spec names its own service
// account), so that no permissions are left granted to an account no pod
// uses. It reads the cache first and sends nothing when the child is
// absent, and it never deletes an object it does not control.
func DeleteStaleChild[T metav1.Object](ctx context.Context, w *Writer, ops ChildOps[T], namespace, name string, ownerUID types.UID) error {
	have, err := ops.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOf(have); ref == nil || ref.UID != ownerUID {
		return nil
	}
	uid := have.GetUID()
	return DeleteChild(ctx, w, ownerUID, ops.Resource, namespace, name, ops.Client(namespace).Delete,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// GetFunc is the Get method of a generated typed client.
type GetFunc[T any] func(ctx context.Context, name string, opts metav1.GetOptions) (T, error)

// DeleteLabelled deletes an object hivekeeper holds no owner reference to
// (what the proxy runner creates for a workload), and only when it carries
// every label of want: a name alone does not say whose an object is. The
// object is read from the API server, not a cache, and deleted with its UID
// as a precondition, so an object created under the same name in between
// is not deleted either. When the object is left alone, why says what it
// lacks; an absent object is no error.
func DeleteLabelled[T metav1.Object](ctx context.Context, w *Writer, owner types.UID, resource, namespace, name string, get GetFunc[T], del DeleteFunc, want map[string]string) (why string, err error) {
	obj, err := get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s %s/%s: %w", resource, namespace, name, err)
	}
	var missing []string
	for k, v := range want {
		if have, ok := obj.GetLabels()[k]; !ok || have != v {
			missing = append(missing, k+"="+v)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return "it lacks the label " + strings.Join(missing, ", "), nil
	}
	uid := obj.GetUID()
	return "", DeleteChild(ctx, w, owner, resource, namespace, name, del, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}
