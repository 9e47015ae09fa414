package plugin

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"

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
	phaseSwitching = "switching"
	phaseSwitched  = "switched"
)

// fieldManager names the plugin's writes in managedFields.
const fieldManager = "kubectl-hivekeeper"

// switchRecord is what a switch changed, to undo it.
type switchRecord struct {
	// Phase is "switching" until hivekeeper runs the workloads, then
	// "switched".
	Phase   string      `json:"phase"`
	Started metav1.Time `json:"started"`
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

// createRecord writes a new record with ToolHive's CRDs; it fails when one
// exists, so two switches cannot run at once.
func createRecord(ctx context.Context, kube kubernetes.Interface, rec *switchRecord, crds []*apiextensionsv1.CustomResourceDefinition) error {
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
	if _, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("recording the switch in ConfigMap %s/%s: %w", cm.Namespace, recordName, err)
	}
	return nil
}

// saveRecord writes rec over the record, keeping the CRDs.
func saveRecord(ctx context.Context, kube kubernetes.Interface, rec *switchRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{recordKey: string(b)}})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().ConfigMaps(rec.Hivekeeper.Namespace).Patch(ctx, recordName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("updating the record %s/%s: %w", rec.Hivekeeper.Namespace, recordName, err)
	}
	return nil
}

// readRecord is the record in ns, nil when there is none.
func readRecord(ctx context.Context, kube kubernetes.Interface, ns string) (*switchRecord, error) {
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, recordName, getOpts)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record %s/%s: %w", ns, recordName, err)
	}
	rec := &switchRecord{}
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), rec); err != nil {
		return nil, fmt.Errorf("the record %s/%s: %s: %w", ns, recordName, recordKey, err)
	}
	return rec, nil
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

func deleteRecord(ctx context.Context, kube kubernetes.Interface, ns string) error {
	err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, recordName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the record %s/%s: %w", ns, recordName, err)
	}
	return nil
}

// pausable are the kinds of tool switch can pause, and how.
var pausable = map[string]struct {
	gvr schema.GroupVersionResource
	// defaultNamespace is where the object lives when the mark on the
	// operator does not say.
	defaultNamespace string
	// pause is the merge patch that pauses it; resume reads the object and
	// returns the patch that undoes pause, nil when it is paused already.
	pause  string
	resume func(obj *unstructured.Unstructured) ([]byte, error)
}{
	"Argo CD Application": {
		gvr:              schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"},
		defaultNamespace: "argocd",
		pause:            `{"spec":{"syncPolicy":{"automated":null}}}`,
		resume: func(obj *unstructured.Unstructured) ([]byte, error) {
			auto, found, err := unstructured.NestedFieldCopy(obj.Object, "spec", "syncPolicy", "automated")
			if err != nil || !found || auto == nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"spec": map[string]any{"syncPolicy": map[string]any{"automated": auto}}})
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
	// what it keeps: "ToolHive's operator" or "ToolHive's CRDs".
	what string
}

// keepers are the tools that keep ToolHive's operator and its CRDs, each
// once.
func keepers(op *Operator, crds []*apiextensionsv1.CustomResourceDefinition) []keeper {
	var out []keeper
	seen := map[string]bool{}
	add := func(o Owner, what string) {
		k := o.Kind + "/" + o.Namespace + "/" + o.Name
		if !seen[k] {
			seen[k] = true
			out = append(out, keeper{o, what})
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
		case o.Kind == "Helm release":
			p.note("Helm release %s/%s installed ToolHive's CRDs: its next `helm upgrade` puts them back over hivekeeper's; run none while hivekeeper runs", o.Namespace, o.Name)
			continue
		}
		kind, ok := pausable[o.Kind]
		if !ok {
			continue
		}
		ns := o.Namespace
		if ns == "" {
			ns = kind.defaultNamespace
		}
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
