package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

// FieldManager is the field manager of every write, and the event source.
const FieldManager = "hivekeeper"

// PatchFunc is the Patch method of a generated typed client.
type PatchFunc[T any] func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)

// CreateFunc is the Create method of a generated typed client.
type CreateFunc[T any] func(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)

// DeleteFunc is the Delete method of a generated typed client.
type DeleteFunc func(ctx context.Context, name string, opts metav1.DeleteOptions) error

// Writer is the one path through which a controller writes. It asks the
// write gate before every write, counts every write by verb and outcome,
// skips empty patches, and remembers the last patch it sent to each child
// so that sending the same one again — a write that did not stick, the
// signature of a hot loop — is counted as churn.
//
// Its memory is kept per owner (the custom resource, by UID), so that
// forgetting an owner that is gone is one call, Forget, and cannot leave a
// child behind.
type Writer struct {
	controller string
	gate       WriteGate
	// onDrift, when set, is told every drift Drift counts.
	onDrift DriftObserver

	mu     sync.Mutex
	owners map[types.UID]*ownerMemory
}

// ownerMemory is what a Writer remembers of one owner: the hash of the last
// patch sent to each of its children ("<resource>/<ns>/<name>"), and its
// last status patch.
type ownerMemory struct {
	children map[string]uint64
	status   statusSent
}

// NewWriter returns a Writer that labels its metrics with controller and
// asks gate (nil: always allowed) before every write.
func NewWriter(controller string, gate WriteGate) *Writer {
	return &Writer{controller: controller, gate: gate, owners: map[types.UID]*ownerMemory{}}
}

// allow asks the write gate.
func (w *Writer) allow() error {
	if w.gate == nil {
		return nil
	}
	return w.gate()
}

// memory returns the owner's memory, creating it; w.mu must be held.
func (w *Writer) memory(owner types.UID) *ownerMemory {
	m := w.owners[owner]
	if m == nil {
		m = &ownerMemory{children: map[string]uint64{}}
		w.owners[owner] = m
	}
	return m
}

// Forget drops everything remembered of an owner. A controller calls it
// when its custom resource is deleted: garbage collection then removes the
// children without DeleteChild, and the memory must stay as large as the
// set of live owners.
func (w *Writer) Forget(owner types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.owners, owner)
}

func (w *Writer) count(ctx context.Context, resource, verb string, err error) {
	if t, ok := ctx.Value(tallyKey{}).(*writeTally); ok {
		t.n.Add(1)
	}
	CountWrite(w.controller, resource, verb, err)
}

// CountWrite counts one API write in hivekeeper_writes_total, by its
// outcome. Writers count their own; a write made outside any controller
// (the installation's instance id at start) calls it directly, so every
// write the process makes is counted.
func CountWrite(controller, resource, verb string, err error) {
	outcome := metrics.OutcomeSuccess
	switch {
	case err == nil:
	case apierrors.IsConflict(err):
		outcome = metrics.OutcomeConflict
	default:
		outcome = metrics.OutcomeError
	}
	metrics.Writes.WithLabelValues(controller, resource, verb, outcome).Inc()
}

// Skipped counts a write that was not needed.
func (w *Writer) Skipped(resource string) {
	metrics.WritesSkipped.WithLabelValues(w.controller, resource).Inc()
}

// MergePatch returns the JSON merge patch that turns original into modified,
// and whether it changes anything. Both are marshalled as they are, so
// callers pass deep copies they built for this purpose.
func MergePatch(original, modified any) ([]byte, bool, error) {
	o, err := json.Marshal(original)
	if err != nil {
		return nil, false, err
	}
	m, err := json.Marshal(modified)
	if err != nil {
		return nil, false, err
	}
	p, err := jsonpatch.CreateMergePatch(o, m)
	if err != nil {
		return nil, false, err
	}
	return p, string(p) != "{}", nil
}

// withResourceVersion adds metadata.resourceVersion to a merge patch so the
// API server rejects it with 409 Conflict when the object changed since it
// was read: a merge patch replaces whole arrays such as finalizers, so an
// unlocked patch computed from a stale cache could drop another writer's
// entry.
func withResourceVersion(patch []byte, rv string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(patch, &doc); err != nil {
		return nil, err
	}
	md, _ := doc["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		doc["metadata"] = md
	}
	md["resourceVersion"] = rv
	return json.Marshal(doc)
}

// PatchObject writes the spec and metadata changes between original and
// modified (a changed deep copy of original) to a custom resource as a JSON
// merge patch carrying original's resourceVersion. Status changes are not
// sent (the main resource ignores them). Nothing is sent when nothing
// changed. A 409 is returned as an error so the key is retried from a fresh
// lister read. It never sends a full object: a PUT would zero the fields
// hivekeeper does not model.
func PatchObject[T any](ctx context.Context, w *Writer, resource string, patch PatchFunc[T], original, modified T) (bool, error) {
	om, err := meta.Accessor(original)
	if err != nil {
		return false, err
	}
	o, m, err := withoutStatus(original, modified)
	if err != nil {
		return false, err
	}
	body, changed, err := MergePatch(o, m)
	if err != nil {
		return false, fmt.Errorf("computing patch for %s %s: %w", resource, om.GetName(), err)
	}
	if !changed {
		w.Skipped(resource)
		return false, nil
	}
	body, err = withResourceVersion(body, om.GetResourceVersion())
	if err != nil {
		return false, err
	}
	if err := w.allow(); err != nil {
		return false, err
	}
	klog.FromContext(ctx).V(4).Info("Patching", "resource", resource, "object", klog.KObj(om), "patch", string(body))
	_, err = patch(ctx, om.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	w.count(ctx, resource, metrics.VerbPatch, err)
	if err != nil {
		return false, fmt.Errorf("patching %s %s: %w", resource, om.GetName(), err)
	}
	return true, nil
}

// withoutStatus marshals both objects to generic maps without their status.
func withoutStatus(objs ...any) (map[string]any, map[string]any, error) {
	out := make([]map[string]any, len(objs))
	for i, obj := range objs {
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, nil, err
		}
		delete(out[i], "status")
	}
	return out[0], out[1], nil
}

// PatchStatus writes the difference between oldStatus and newStatus (the
// status structs of base, as read and as desired) to the status
// subresource as a JSON merge patch. It sends nothing when they are equal.
// A merge patch replaces the whole conditions array, so newStatus must be
// built from the object as read, changing only this controller's condition
// types.
//
// It also sends nothing when this exact patch was already sent from this
// exact base resourceVersion: the informer has not delivered our own write
// yet (a child's event re-synced the object first), and repeating it would
// be a write that changes nothing.
func PatchStatus[T any](ctx context.Context, w *Writer, resource string, base metav1.Object, patch PatchFunc[T], oldStatus, newStatus any) (bool, error) {
	name := base.GetName()
	body, changed, err := MergePatch(map[string]any{"status": oldStatus}, map[string]any{"status": newStatus})
	if err != nil {
		return false, fmt.Errorf("computing status patch for %s %s: %w", resource, name, err)
	}
	if !changed {
		w.Skipped(resource + "/status")
		return false, nil
	}
	owner := base.GetUID()
	sent := statusSent{baseRV: base.GetResourceVersion(), sum: hashOf(body)}
	w.mu.Lock()
	repeat := false
	if m := w.owners[owner]; m != nil && sent.baseRV != "" {
		repeat = m.status.baseRV == sent.baseRV && m.status.sum == sent.sum
	}
	w.mu.Unlock()
	if repeat {
		w.Skipped(resource + "/status")
		return false, nil
	}
	if err := w.allow(); err != nil {
		return false, err
	}
	klog.FromContext(ctx).V(4).Info("Patching status", "resource", resource, "name", name, "patch", string(body))
	out, err := patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	w.count(ctx, resource+"/status", metrics.VerbPatch, err)
	if err != nil {
		return false, fmt.Errorf("patching status of %s %s: %w", resource, name, err)
	}
	if m, err := meta.Accessor(out); err == nil {
		sent.writtenRV = m.GetResourceVersion()
	}
	w.mu.Lock()
	w.memory(owner).status = sent
	w.mu.Unlock()
	return true, nil
}

// StatusBehind reports whether obj, as the informer has it, is the very
// version this Writer's last status patch of it was computed from. That
// patch succeeded, so the API server holds a newer object whose status the
// informer has not delivered yet: a child's event re-synced the object
// first. A sync from obj would rebuild the status from one the server no
// longer has — a condition that already turned turns again, with a new
// transition time — and write it a second time (or repeat an event meant
// once per change). The caller waits for the informer instead
// (Loop.DeferBehind).
func (w *Writer) StatusBehind(obj metav1.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.owners[obj.GetUID()]
	if m == nil || m.status.baseRV == "" {
		return false
	}
	// A write that answered with the version it started from moved
	// nothing (a fake clientset answers so); only an answered newer
	// version proves the cached object stale.
	return m.status.baseRV == obj.GetResourceVersion() && m.status.writtenRV != m.status.baseRV
}

// statusSent identifies a status patch: the resourceVersion it was computed
// from, a hash of its body, and the resourceVersion the API server
// answered with.
type statusSent struct {
	baseRV, writtenRV string
	sum               uint64
}

func hashOf(b []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}

func childKey(resource, namespace, name string) string {
	return resource + "/" + namespace + "/" + name
}

// CreateChild creates a child object of owner.
func CreateChild[T any](ctx context.Context, w *Writer, owner types.UID, resource string, create CreateFunc[T], obj T) (T, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		var zero T
		return zero, err
	}
	if err := w.allow(); err != nil {
		var zero T
		return zero, err
	}
	klog.FromContext(ctx).V(2).Info("Creating child", "resource", resource, "object", klog.KObj(m))
	out, err := create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
	w.count(ctx, resource, metrics.VerbCreate, err)
	w.forget(owner, childKey(resource, m.GetNamespace(), m.GetName()))
	if err != nil {
		return out, &ChildWriteError{Verb: metrics.VerbCreate, Resource: resource, Object: klog.KObj(m), Err: err}
	}
	return out, nil
}

// PatchChild sends a JSON merge patch to a child of owner. body holds only
// what this controller owns; it is sent with resourceVersion rv as an
// optimistic lock. Sending the same body to the same child twice in a row
// is counted as churn: the previous write did not converge the object.
func PatchChild[T any](ctx context.Context, w *Writer, owner types.UID, resource, namespace, name, rv string, patch PatchFunc[T], body []byte) error {
	key := childKey(resource, namespace, name)
	h := hashOf(body)
	locked, err := withResourceVersion(body, rv)
	if err != nil {
		return err
	}
	if err := w.allow(); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Patching child", "resource", resource, "object", klog.KRef(namespace, name), "patch", string(body))
	_, err = patch(ctx, name, types.MergePatchType, locked, metav1.PatchOptions{FieldManager: FieldManager})
	w.count(ctx, resource, metrics.VerbPatch, err)
	if err != nil {
		return &ChildWriteError{Verb: metrics.VerbPatch, Resource: resource, Object: klog.KRef(namespace, name), Err: err}
	}
	w.mu.Lock()
	children := w.memory(owner).children
	prev, seen := children[key]
	children[key] = h
	w.mu.Unlock()
	if seen && prev == h {
		metrics.ChurnWrites.WithLabelValues(w.controller, resource).Inc()
		klog.FromContext(ctx).Info("Churn: wrote the same desired state twice", "resource", resource, "object", klog.KRef(namespace, name))
	}
	return nil
}

// DeleteChild deletes an object of owner; NotFound counts as done.
func DeleteChild(ctx context.Context, w *Writer, owner types.UID, resource, namespace, name string, del DeleteFunc, opts metav1.DeleteOptions) error {
	if err := w.allow(); err != nil {
		return err
	}
	err := del(ctx, name, opts)
	if apierrors.IsNotFound(err) {
		err = nil
	}
	w.count(ctx, resource, metrics.VerbDelete, err)
	w.forget(owner, childKey(resource, namespace, name))
	if err != nil {
		return &ChildWriteError{Verb: metrics.VerbDelete, Resource: resource, Object: klog.KRef(namespace, name), Err: err}
	}
	return nil
}

// ChildWriteError is a failed write to a child. Its Error names the child
// and carries the API server's message. Summary leaves that message out:
// the message can change from one attempt to the next (an exceeded quota
// reports the namespace's current usage), and a condition quoting it would
// then change, and be written again, with every retry.
type ChildWriteError struct {
	// Verb is the verb of hivekeeper_writes_total: create, patch or delete.
	Verb     string
	Resource string
	Object   klog.ObjectRef
	Err      error
}

var gerunds = map[string]string{metrics.VerbCreate: "creating", metrics.VerbPatch: "patching", metrics.VerbDelete: "deleting"}

func (e *ChildWriteError) Error() string {
	return fmt.Sprintf("%s %s %s: %v", gerunds[e.Verb], e.Resource, e.Object, e.Err)
}

func (e *ChildWriteError) Unwrap() error { return e.Err }

// Summary says which write to which child failed and the reason code of the
// API server's answer (Forbidden for an exceeded quota, InternalError for
// an exhausted Service range, Invalid, ...), never its message.
func (e *ChildWriteError) Summary() string {
	why := string(apierrors.ReasonForError(e.Err))
	if why == "" {
		var status apierrors.APIStatus
		if errors.As(e.Err, &status) {
			why = fmt.Sprintf("HTTP %d", status.Status().Code)
		} else {
			why = "no answer from the API server"
		}
	}
	return fmt.Sprintf("cannot %s %s %s: %s; the API server's message is in the events", e.Verb, e.Resource, e.Object.Name, why)
}

// StableMessage is the condition message for err, a failed sync step: the
// Summary of a failed child write, else a fixed sentence. The error itself
// belongs in the log and an event.
func StableMessage(err error) string {
	var we *ChildWriteError
	if errors.As(err, &we) {
		return we.Summary()
	}
	return "a write to a child failed; the error is in the events"
}

func (w *Writer) forget(owner types.UID, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.owners[owner]; m != nil {
		delete(m.children, key)
	}
}

// remembered reports how many owners the memory holds (tests).
func (w *Writer) remembered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.owners)
}

// Finalized is a custom resource whose finalizers the write helpers
// manage: a generated API type (a pointer), which deep-copies itself.
type Finalized interface {
	metav1.Object
	runtime.Object
}

// EnsureFinalizer adds finalizer to obj when obj lacks it, with
// PatchObject's merge patch locked to obj's resourceVersion (a merge patch
// replaces the whole finalizers array, so it must not be computed from a
// stale read). It reports whether it wrote; an object that already holds
// the finalizer costs no request.
//
// The answer's resourceVersion is not returned: a status patch that
// follows is not locked, so a sync goes on from obj as read.
func EnsureFinalizer[T Finalized](ctx context.Context, w *Writer, resource string, patch PatchFunc[T], obj T, finalizer string) (bool, error) {
	if slices.Contains(obj.GetFinalizers(), finalizer) {
		return false, nil
	}
	mod := obj.DeepCopyObject().(T)
	mod.SetFinalizers(append(slices.Clone(obj.GetFinalizers()), finalizer))
	return PatchObject(ctx, w, resource, patch, obj, mod)
}

// ReleaseFinalizer is the last step of an object being deleted: it writes
// the status change from oldStatus to newStatus (none when newStatus is
// nil or equal; the object's Terminating phase, say), runs cleanup (nil:
// none), and then removes finalizer with a merge patch locked to the
// resourceVersion the status write answered. Taking it from the answer
// keeps the release in the same sync instead of waiting for the status
// write's watch event to bring the object back with its new version. A
// status write that finds the object gone is not an error.
//
// It reports whether it released the finalizer; an object that does not
// hold it costs no request.
func ReleaseFinalizer[T Finalized](ctx context.Context, w *Writer, resource string, patch PatchFunc[T], obj T, finalizer string,
	oldStatus, newStatus any, cleanup func(context.Context) error) (bool, error) {
	if !slices.Contains(obj.GetFinalizers(), finalizer) {
		return false, nil
	}
	current := obj
	if newStatus != nil {
		answered := func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (T, error) {
			out, err := patch(ctx, name, pt, data, opts, sub...)
			if err == nil {
				current = out
			}
			return out, err
		}
		if _, err := PatchStatus(ctx, w, resource, obj, answered, oldStatus, newStatus); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	if cleanup != nil {
		if err := cleanup(ctx); err != nil {
			return false, err
		}
	}
	mod := current.DeepCopyObject().(T)
	mod.SetFinalizers(slices.DeleteFunc(slices.Clone(current.GetFinalizers()), func(f string) bool { return f == finalizer }))
	if _, err := PatchObject(ctx, w, resource, patch, current, mod); err != nil {
		return false, err
	}
	return true, nil
}
