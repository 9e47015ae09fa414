package plugin

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// recordName is the ConfigMap, in hivekeeper's namespace, where switch
// keeps what switch --back needs: it lives in the cluster, so that anyone
// with the rights can go back, from any machine.
const recordName = "hivekeeper-switch"

// The record's keys.
const (
	recordKey = "switch.json"
	// crdsKey holds ToolHive's CRDs as they were, as gzipped JSON: the
	// CRDs of a release are larger than a ConfigMap may hold as text.
	crdsKey = "toolhive-crds.json.gz"
)

// The phases of a record.
const (
	// phaseSwitching: a switch to hivekeeper started and did not finish.
	phaseSwitching = "switching"
	// phaseSwitched: hivekeeper runs the workloads.
	phaseSwitched = "switched"
	// phaseGoingBack: a switch --back started and did not finish.
	phaseGoingBack = "going-back"
	// phaseBack: ToolHive's operator runs the workloads again; the record
	// stays as the trace of the last switch, and the next one replaces it.
	phaseBack = "back"
)

// fieldManager names the plugin's writes in managedFields.
const fieldManager = "kubectl-hivekeeper"

// switchRecord is what a switch changed, to undo it.
type switchRecord struct {
	// Phase is "switching" until hivekeeper runs the workloads, then
	// "switched"; "going-back" during a switch --back, then "back".
	Phase   string      `json:"phase"`
	Started metav1.Time `json:"started"`
	// Holder is the run of the plugin that holds the record, as a lock:
	// no other switch or switch --back starts while it does. nil when no
	// run does (it ended, done or failed).
	Holder *holder `json:"holder,omitempty"`
	// Step is the last step done.
	Step string `json:"step,omitempty"`
	// Failed is the error the last run stopped on, empty when it did not.
	Failed string `json:"failed,omitempty"`
	// Finished is when the last run ended.
	Finished *metav1.Time `json:"finished,omitempty"`
	// Operator is ToolHive's operator and the replicas it ran.
	Operator deploymentRef `json:"operator"`
	// Hivekeeper is hivekeeper's Deployment and what it was scaled to.
	Hivekeeper deploymentRef `json:"hivekeeper"`
	// Paused are the tools switch paused, with how to resume them.
	Paused []pausedOwner `json:"paused,omitempty"`
	// Restarted are the workloads the switch restarted: the ones whose
	// pod template ToolHive's operator may write back (its own output,
	// where hivekeeper's differs on purpose), so switch --back expects
	// their restarts and no others.
	Restarted []Change `json:"restarted,omitempty"`

	// rv is the resourceVersion of the record as this run last wrote or
	// read it: every write is conditional on it, so a run that lost the
	// record to another (--force) finds out at its next write.
	rv string
}

// holder is who runs a switch on the record.
type holder struct {
	// User is the kubeconfig's user (and whom it impersonates), or the
	// ServiceAccount in a pod.
	User string `json:"user"`
	Host string `json:"host"`
	// Version is the plugin's.
	Version string `json:"version"`
	// Command is "switch" or "switch --back".
	Command string      `json:"command"`
	Since   metav1.Time `json:"since"`
	// Renewed is when the holder last wrote the record: at every step.
	Renewed metav1.Time `json:"renewed"`
	// Timeout is how long the holder may go without renewing before
	// another run may take the record over with --force: longer than any
	// of its steps may wait.
	Timeout metav1.Duration `json:"timeout"`
}

// stale reports whether h has not renewed the record for longer than its
// timeout, at now.
func (h *holder) stale(now time.Time) bool {
	return now.Sub(h.Renewed.Time) > h.Timeout.Duration
}

func (h *holder) String() string {
	return fmt.Sprintf("%s on %s (kubectl-hivekeeper %s, %s) since %s", h.User, h.Host, h.Version, h.Command, h.Since.UTC().Format(time.RFC3339))
}

type deploymentRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Replicas  int32  `json:"replicas"`
}

// pausedOwner is an Argo CD Application or Flux object switch paused.
type pausedOwner struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Resume is the merge patch that puts back what switch changed.
	Resume json.RawMessage `json:"resume"`
}

func recordConfigMap(ns string, rec *switchRecord) (*corev1.ConfigMap, error) {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: recordName, Labels: map[string]string{
			"app.kubernetes.io/part-of": "hivekeeper", "app.kubernetes.io/managed-by": fieldManager}},
		Data: map[string]string{recordKey: string(b)},
	}, nil
}

// errTaken is the error of a run that found the record taken by
// another.
var errTaken = errors.New("another run of kubectl hivekeeper took the record first")

// createRecord writes a new record with ToolHive's CRDs, as the lock of
// this run: over prev, the record read before (a switch that went back, a
// holder taken over), only if it did not change since; when prev is nil,
// only if there is none. Otherwise it returns errTaken: two runs cannot
// both take it.
func createRecord(ctx context.Context, kube kubernetes.Interface, rec *switchRecord, crds []*apiextensionsv1.CustomResourceDefinition, prev *corev1.ConfigMap) error {
	cm, err := recordConfigMap(rec.Hivekeeper.Namespace, rec)
	if err != nil {
		return err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if err := json.NewEncoder(zw).Encode(crds); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	cm.BinaryData = map[string][]byte{crdsKey: gz.Bytes()}
	var written *corev1.ConfigMap
	if prev == nil {
		written, err = kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
	} else {
		cm.ResourceVersion = prev.ResourceVersion
		written, err = kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: fieldManager})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return errTaken
	}
	if err != nil {
		return fmt.Errorf("recording the switch in ConfigMap %s/%s: %w", cm.Namespace, recordName, err)
	}
	rec.rv = written.ResourceVersion
	return nil
}

// restoreRecord puts back prev, the record as it was before this run
// took it (deletes it when there was none), conditional on this run
// still holding it: for a run that stopped before it changed anything.
func restoreRecord(ctx context.Context, kube kubernetes.Interface, rec *switchRecord, prev *corev1.ConfigMap) error {
	api := kube.CoreV1().ConfigMaps(rec.Hivekeeper.Namespace)
	var err error
	if prev == nil {
		err = api.Delete(ctx, recordName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: preconditionOf(rec.rv)}})
	} else {
		back := prev.DeepCopy()
		back.ResourceVersion = rec.rv
		_, err = api.Update(ctx, back, metav1.UpdateOptions{FieldManager: fieldManager})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("putting back the record %s/%s as it was: %w", rec.Hivekeeper.Namespace, recordName, err)
	}
	return nil
}

// preconditionOf is a resourceVersion precondition, nil for none.
func preconditionOf(rv string) *string {
	if rv == "" {
		return nil
	}
	return &rv
}

// saveRecord writes rec over the record, keeping the CRDs, if the record
// is still as this run last saw it: a record another run took over (with
// --force) is left to it, and the error says so.
func saveRecord(ctx context.Context, kube kubernetes.Interface, rec *switchRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	body := map[string]any{"data": map[string]string{recordKey: string(b)}}
	if rec.rv != "" {
		body["metadata"] = map[string]any{"resourceVersion": rec.rv}
	}
	patch, err := json.Marshal(body)
	if err != nil {
		return err
	}
	cm, err := kube.CoreV1().ConfigMaps(rec.Hivekeeper.Namespace).Patch(ctx, recordName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("the record %s/%s changed under this run (%w, with --force?): stopping here, to leave the cluster to it", rec.Hivekeeper.Namespace, recordName, errTaken)
	}
	if err != nil {
		return fmt.Errorf("updating the record %s/%s: %w", rec.Hivekeeper.Namespace, recordName, err)
	}
	rec.rv = cm.ResourceVersion
	return nil
}

// readRecord is the record in ns, nil when there is none.
func readRecord(ctx context.Context, kube kubernetes.Interface, ns string) (*switchRecord, error) {
	rec, _, err := readRecordObject(ctx, kube, ns)
	return rec, err
}

// readRecordObject is the record in ns and its ConfigMap, nils when there
// is none.
func readRecordObject(ctx context.Context, kube kubernetes.Interface, ns string) (*switchRecord, *corev1.ConfigMap, error) {
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, recordName, getOpts)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the record %s/%s: %w", ns, recordName, readError(err, "get", "configmaps", ns))
	}
	rec := &switchRecord{}
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), rec); err != nil {
		return nil, nil, fmt.Errorf("the record %s/%s: %s: %w", ns, recordName, recordKey, err)
	}
	rec.rv = cm.ResourceVersion
	return rec, cm, nil
}

// recordedCRDs are ToolHive's CRDs as the record keeps them.
func recordedCRDs(ctx context.Context, kube kubernetes.Interface, ns string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, recordName, getOpts)
	if err != nil {
		return nil, fmt.Errorf("reading the record %s/%s: %w", ns, recordName, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(cm.BinaryData[crdsKey]))
	if err != nil {
		return nil, fmt.Errorf("the record %s/%s: %s: %w", ns, recordName, crdsKey, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("the record %s/%s: %s: %w", ns, recordName, crdsKey, err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(b, &crds); err != nil {
		return nil, fmt.Errorf("the record %s/%s: %s: %w", ns, recordName, crdsKey, err)
	}
	return crds, nil
}

// pausable are the kinds of tool switch can pause, and how.
var pausable = map[string]struct {
	gvr schema.GroupVersionResource
	// pause is the merge patch that pauses it; resume reads the object and
	// returns the patch that undoes pause, nil when it is paused already.
	pause  string
	resume func(obj *unstructured.Unstructured) ([]byte, error)
}{
	"Argo CD Application": {
		gvr:   schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"},
		pause: `{"spec":{"syncPolicy":{"automated":null}}}`,
		resume: func(obj *unstructured.Unstructured) ([]byte, error) {
			auto, found, err := unstructured.NestedFieldCopy(obj.Object, "spec", "syncPolicy", "automated")
			if err != nil || !found || auto == nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"spec": map[string]any{"syncPolicy": map[string]any{"automated": auto}}})
		},
	},
	// An ApplicationSet rewrites the Applications it generates (their
	// automated sync among the rest) unless its policy only creates them.
	"Argo CD ApplicationSet": {
		gvr:   schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"},
		pause: `{"spec":{"syncPolicy":{"applicationsSync":"create-only"}}}`,
		resume: func(obj *unstructured.Unstructured) ([]byte, error) {
			policy, found, err := unstructured.NestedString(obj.Object, "spec", "syncPolicy", "applicationsSync")
			if err != nil || policy == "create-only" {
				return nil, err
			}
			var was any
			if found {
				was = policy
			}
			return json.Marshal(map[string]any{"spec": map[string]any{"syncPolicy": map[string]any{"applicationsSync": was}}})
		},
	},
	"Flux HelmRelease": {
		gvr:   schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"},
		pause: `{"spec":{"suspend":true}}`,
		resume: func(obj *unstructured.Unstructured) ([]byte, error) {
			return suspendResume(obj)
		},
	},
	"Flux Kustomization": {
		gvr:   schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"},
		pause: `{"spec":{"suspend":true}}`,
		resume: func(obj *unstructured.Unstructured) ([]byte, error) {
			return suspendResume(obj)
		},
	},
}

// suspendResume is the patch that undoes suspending a Flux object: its
// spec.suspend as it was, or none when it was suspended already.
func suspendResume(obj *unstructured.Unstructured) ([]byte, error) {
	suspended, found, err := unstructured.NestedBool(obj.Object, "spec", "suspend")
	if err != nil || suspended {
		return nil, err
	}
	if !found {
		return []byte(`{"spec":{"suspend":null}}`), nil
	}
	return []byte(`{"spec":{"suspend":false}}`), nil
}

// keeper is a tool that keeps ToolHive's operator or its CRDs, and what.
type keeper struct {
	Owner
	// what it keeps: "ToolHive's operator", "ToolHive's CRDs",
	// hivekeeper's Deployment, or an Application it generates.
	what string
	// optional: read from a mark that does not prove a keeper exists
	// (Argo CD's default tracking label, which a chart may set itself)
	// on an object other than ToolHive's operator; one not found is none.
	optional bool
}

// whatHivekeeper is what a keeper of hivekeeper's own Deployment keeps:
// it installed hivekeeper scaled to 0, and its next sync would scale it
// back to 0.
const whatHivekeeper = "hivekeeper's Deployment"

// keepers are the tools that keep ToolHive's operator and its CRDs, and
// hivekeeper's Deployment hk (nil: none), each once.
func keepers(op *Operator, crds []*apiextensionsv1.CustomResourceDefinition, hk metav1.Object) []keeper {
	var out []keeper
	seen := map[string]bool{}
	add := func(o Owner, what string) {
		k := o.Kind + "/" + o.Namespace + "/" + o.Name
		if !seen[k] {
			seen[k] = true
			out = append(out, keeper{Owner: o, what: what, optional: what == whatHivekeeper && o.Via == labelInstance})
		}
	}
	for _, o := range op.Owners {
		add(o, "ToolHive's operator")
	}
	for _, c := range crds {
		for _, o := range owners(c) {
			add(o, "ToolHive's CRDs")
		}
	}
	if hk != nil {
		for _, o := range owners(hk) {
			add(o, whatHivekeeper)
		}
	}
	return out
}

// pauseOwners pauses each tool that keeps ToolHive's operator and would
// scale it back up, recording how to resume it first. A Helm release
// cannot be paused: a note says what its next upgrade must set. With
// leave, nothing is touched and the user is reminded.
func pauseOwners(ctx context.Context, c clients, rec *switchRecord, keepers []keeper, leave bool, p *progress) error {
	for _, k := range keepers {
		o := k.Owner
		switch {
		case o.Kind == "Helm release" && k.what == "ToolHive's operator":
			p.note("Helm release %s/%s installed ToolHive's operator: its next `helm upgrade` scales the operator back up unless it sets operator.replicaCount=0", o.Namespace, o.Name)
			continue
		case o.Kind == "Helm release" && k.what == whatHivekeeper:
			p.note("Helm release %s/%s installed hivekeeper: its next `helm upgrade` scales hivekeeper back to 0 unless it sets replicaCount", o.Namespace, o.Name)
			continue
		case o.Kind == "Helm release":
			p.note("Helm release %s/%s installed ToolHive's CRDs: its next `helm upgrade` puts them back over hivekeeper's; run none while hivekeeper runs", o.Namespace, o.Name)
			continue
		}
		kind, ok := pausable[o.Kind]
		if !ok {
			continue
		}
		// locateOwners found it, in this namespace, before any write.
		ns := o.Namespace
		if leave {
			p.note("%s %s/%s keeps %s: left as it is (--leave-owners)", o.Kind, ns, o.Name, k.what)
			continue
		}
		obj, err := c.dyn.Resource(kind.gvr).Namespace(ns).Get(ctx, o.Name, getOpts)
		if apierrors.IsNotFound(err) {
			p.note("no %s %s/%s, which the operator's %s names: nothing paused", o.Kind, ns, o.Name, o.Via)
			continue
		}
		if err != nil {
			// Not exitBlocked: the record exists and other tools may be
			// paused already, so this is a failed step for --back to undo.
			return fmt.Errorf("reading %s %s/%s, which keeps %s: %w; run switch --back to undo the record, then pause it by hand and run switch --leave-owners", o.Kind, ns, o.Name, k.what, err)
		}
		resume, err := kind.resume(obj)
		if err != nil {
			return err
		}
		if resume == nil {
			p.note("%s %s/%s is paused already", o.Kind, ns, o.Name)
			continue
		}
		rec.Paused = append(rec.Paused, pausedOwner{Kind: o.Kind, Namespace: ns, Name: o.Name, Resume: resume})
		if err := saveRecord(ctx, c.kube, rec); err != nil {
			return err
		}
		if _, err := c.dyn.Resource(kind.gvr).Namespace(ns).Patch(ctx, o.Name, types.MergePatchType, []byte(kind.pause), metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("pausing %s %s/%s: %w", o.Kind, ns, o.Name, err)
		}
		p.step("paused %s %s/%s, which keeps %s", o.Kind, ns, o.Name, k.what)
		if k.what == whatHivekeeper {
			p.note("%s %s/%s installed hivekeeper scaled to 0: set its replica count in what it syncs before you resume it, or it scales hivekeeper back to 0", o.Kind, ns, o.Name)
		}
	}
	return nil
}

// resumeOwners undoes pauseOwners from the record.
func resumeOwners(ctx context.Context, c clients, rec *switchRecord, leave bool, p *progress) error {
	for _, o := range rec.Paused {
		if leave {
			p.note("%s %s/%s was paused by switch and is left paused (--leave-owners)", o.Kind, o.Namespace, o.Name)
			continue
		}
		kind, ok := pausable[o.Kind]
		if !ok {
			return fmt.Errorf("the record names %s %s/%s, a kind this plugin cannot resume", o.Kind, o.Namespace, o.Name)
		}
		_, err := c.dyn.Resource(kind.gvr).Namespace(o.Namespace).Patch(ctx, o.Name, types.MergePatchType, o.Resume, metav1.PatchOptions{FieldManager: fieldManager})
		if apierrors.IsNotFound(err) {
			p.note("%s %s/%s, paused by switch, is gone", o.Kind, o.Namespace, o.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("resuming %s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
		}
		p.step("resumed %s %s/%s", o.Kind, o.Namespace, o.Name)
	}
	return nil
}
