package framework

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
)

const resServers = "mcpservers"

func writes(controller, resource, verb, outcome string) float64 {
	return testutil.ToFloat64(metrics.Writes.WithLabelValues(controller, resource, verb, outcome))
}

func skipped(controller, resource string) float64 {
	return testutil.ToFloat64(metrics.WritesSkipped.WithLabelValues(controller, resource))
}

// testOwner owns the children the tests write.
const testOwner types.UID = "owner-uid"

func churn(controller, resource string) float64 {
	return testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues(controller, resource))
}

func newServer() *thv1.MCPServer {
	return &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "srv", ResourceVersion: "7", Generation: 3},
		Spec:       thv1.MCPServerSpec{Image: "example.com/mcp:1", Transport: "stdio"},
		Status: thv1.MCPServerStatus{
			Phase: thv1.MCPServerPhasePending,
			URL:   "http://mcp-srv-proxy.ns.svc.cluster.local:8080",
			Conditions: []metav1.Condition{{
				Type: "SomeoneElses", Status: metav1.ConditionTrue, Reason: "Theirs",
				LastTransitionTime: metav1.NewTime(time.Unix(1000, 0)),
			}},
		},
	}
}

// patchActions returns the patch actions the fake saw; it fails the test
// on any other write.
func patchActions(t *testing.T, actions []clienttesting.Action) []clienttesting.PatchAction {
	t.Helper()
	var out []clienttesting.PatchAction
	for _, a := range actions {
		switch a := a.(type) {
		case clienttesting.PatchAction:
			out = append(out, a)
		case clienttesting.GetAction, clienttesting.ListAction, clienttesting.WatchAction:
		default:
			t.Fatalf("unexpected action %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	return out
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("patch body %q is not JSON: %v", body, err)
	}
	return m
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestPatchStatusUnchangedSendsNothing(t *testing.T) {
	const ctrl = "test-writes-status-same"
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.ClearActions()
	w := NewWriter(ctrl, nil)
	skippedBefore := skipped(ctrl, resServers+"/status")
	patchedBefore := writes(ctrl, resServers+"/status", metrics.VerbPatch, metrics.OutcomeSuccess)

	newStatus := srv.DeepCopy().Status
	sent, err := PatchStatus(context.Background(), w, resServers, srv,
		cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv.Status, newStatus)
	if err != nil || sent {
		t.Fatalf("PatchStatus = %v, %v; want false, nil", sent, err)
	}
	if a := cs.Actions(); len(a) != 0 {
		t.Fatalf("unchanged status sent %d actions: %v", len(a), a)
	}
	if d := skipped(ctrl, resServers+"/status") - skippedBefore; d != 1 {
		t.Fatalf("writes_skipped_total grew by %v, want 1", d)
	}
	if d := writes(ctrl, resServers+"/status", metrics.VerbPatch, metrics.OutcomeSuccess) - patchedBefore; d != 0 {
		t.Fatalf("writes_total counted %v patches for a skipped write", d)
	}
}

func TestPatchStatusChangedSendsOnlyChangedFields(t *testing.T) {
	const ctrl = "test-writes-status-changed"
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.ClearActions()
	w := NewWriter(ctrl, nil)
	before := writes(ctrl, resServers+"/status", metrics.VerbPatch, metrics.OutcomeSuccess)

	newStatus := srv.DeepCopy().Status
	newStatus.Phase = thv1.MCPServerPhaseReady
	newStatus.ReadyReplicas = 1
	sent, err := PatchStatus(context.Background(), w, resServers, srv,
		cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv.Status, newStatus)
	if err != nil || !sent {
		t.Fatalf("PatchStatus = %v, %v; want true, nil", sent, err)
	}
	patches := patchActions(t, cs.Actions())
	if len(patches) != 1 {
		t.Fatalf("got %d patches, want 1", len(patches))
	}
	p := patches[0]
	if p.GetSubresource() != "status" || p.GetPatchType() != types.MergePatchType || p.GetName() != srv.Name {
		t.Fatalf("patch went to subresource %q as %s for %q; want status merge patch for %q",
			p.GetSubresource(), p.GetPatchType(), p.GetName(), srv.Name)
	}
	body := decode(t, p.GetPatch())
	if ks := keysOf(body); !slices.Equal(ks, []string{"status"}) {
		t.Fatalf("patch top-level keys %v, want [status]; body %s", ks, p.GetPatch())
	}
	status := body["status"].(map[string]any)
	if ks := keysOf(status); !slices.Equal(ks, []string{"phase", "readyReplicas"}) {
		t.Fatalf("status keys %v, want [phase readyReplicas]; body %s", ks, p.GetPatch())
	}
	if status["phase"] != thv1.MCPServerPhaseReady {
		t.Fatalf("phase = %v", status["phase"])
	}
	if d := writes(ctrl, resServers+"/status", metrics.VerbPatch, metrics.OutcomeSuccess) - before; d != 1 {
		t.Fatalf("writes_total{patch,success} grew by %v, want 1", d)
	}
}

func TestPatchStatusCarriesForeignConditions(t *testing.T) {
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.ClearActions()
	clk := testingclock.NewFakePassiveClock(time.Unix(5000, 0))

	newStatus := srv.DeepCopy().Status
	SetCondition(&newStatus.Conditions, clk, srv.Generation, thv1.ConditionOIDCConfigRefValidated, metav1.ConditionTrue, "Valid", "")
	if _, err := PatchStatus(context.Background(), NewWriter("test-writes-status-conds", nil), resServers, srv,
		cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv.Status, newStatus); err != nil {
		t.Fatal(err)
	}
	patches := patchActions(t, cs.Actions())
	if len(patches) != 1 {
		t.Fatalf("got %d patches, want 1", len(patches))
	}
	var body struct {
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(patches[0].GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	var condTypes []string
	for _, c := range body.Status.Conditions {
		condTypes = append(condTypes, c.Type)
	}
	// A merge patch replaces the array, so the other writer's condition must
	// be in it.
	if !slices.Equal(condTypes, []string{"SomeoneElses", thv1.ConditionOIDCConfigRefValidated}) {
		t.Fatalf("conditions in patch = %v", condTypes)
	}
	got, err := cs.ToolhiveV1beta1().MCPServers("ns").Get(context.Background(), "srv", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 2 {
		t.Fatalf("stored conditions = %v", got.Status.Conditions)
	}
}

func TestPatchObjectAddFinalizer(t *testing.T) {
	const ctrl = "test-writes-object"
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.ClearActions()
	w := NewWriter(ctrl, nil)
	before := writes(ctrl, resServers, metrics.VerbPatch, metrics.OutcomeSuccess)

	modified := srv.DeepCopy()
	modified.Finalizers = append(modified.Finalizers, "toolhive.stacklok.dev/finalizer")
	// Status changes do not belong in a patch of the main resource.
	modified.Status.Phase = thv1.MCPServerPhaseReady
	sent, err := PatchObject(context.Background(), w, resServers, cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv, modified)
	if err != nil || !sent {
		t.Fatalf("PatchObject = %v, %v; want true, nil", sent, err)
	}
	patches := patchActions(t, cs.Actions())
	if len(patches) != 1 {
		t.Fatalf("got %d patches, want 1", len(patches))
	}
	p := patches[0]
	if p.GetSubresource() != "" || p.GetPatchType() != types.MergePatchType {
		t.Fatalf("patch to subresource %q as %s, want main resource merge patch", p.GetSubresource(), p.GetPatchType())
	}
	body := decode(t, p.GetPatch())
	if ks := keysOf(body); !slices.Equal(ks, []string{"metadata"}) {
		t.Fatalf("patch top-level keys %v, want [metadata]; body %s", ks, p.GetPatch())
	}
	md := body["metadata"].(map[string]any)
	if ks := keysOf(md); !slices.Equal(ks, []string{"finalizers", "resourceVersion"}) {
		t.Fatalf("metadata keys %v, want [finalizers resourceVersion]; body %s", ks, p.GetPatch())
	}
	if md["resourceVersion"] != "7" {
		t.Fatalf("resourceVersion in patch = %v, want the original's 7", md["resourceVersion"])
	}
	if d := writes(ctrl, resServers, metrics.VerbPatch, metrics.OutcomeSuccess) - before; d != 1 {
		t.Fatalf("writes_total{patch,success} grew by %v, want 1", d)
	}
}

func TestPatchObjectSpecChangeOnlyCarriesChangedField(t *testing.T) {
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.ClearActions()
	modified := srv.DeepCopy()
	modified.Spec.Image = "example.com/mcp:2"
	if _, err := PatchObject(context.Background(), NewWriter("test-writes-object-spec", nil), resServers,
		cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv, modified); err != nil {
		t.Fatal(err)
	}
	patches := patchActions(t, cs.Actions())
	if len(patches) != 1 {
		t.Fatalf("got %d patches, want 1", len(patches))
	}
	body := decode(t, patches[0].GetPatch())
	spec, _ := body["spec"].(map[string]any)
	if ks := keysOf(spec); !slices.Equal(ks, []string{"image"}) {
		t.Fatalf("spec keys %v, want [image]; body %s", ks, patches[0].GetPatch())
	}
	md, _ := body["metadata"].(map[string]any)
	if ks := keysOf(md); !slices.Equal(ks, []string{"resourceVersion"}) {
		t.Fatalf("metadata keys %v, want [resourceVersion]", ks)
	}
}

func TestPatchObjectUnchangedSendsNothing(t *testing.T) {
	const ctrl = "test-writes-object-same"
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.ClearActions()
	w := NewWriter(ctrl, nil)
	skippedBefore := skipped(ctrl, resServers)

	modified := srv.DeepCopy()
	modified.Status.Phase = thv1.MCPServerPhaseReady // ignored by PatchObject
	sent, err := PatchObject(context.Background(), w, resServers, cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv, modified)
	if err != nil || sent {
		t.Fatalf("PatchObject = %v, %v; want false, nil", sent, err)
	}
	if a := cs.Actions(); len(a) != 0 {
		t.Fatalf("unchanged object sent %d actions: %v", len(a), a)
	}
	if d := skipped(ctrl, resServers) - skippedBefore; d != 1 {
		t.Fatalf("writes_skipped_total grew by %v, want 1", d)
	}
}

func conflictReactor(resource string) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		name := a.(clienttesting.PatchAction).GetName()
		return true, nil, apierrors.NewConflict(thv1.Resource(resource), name, errors.New("the object has been modified"))
	}
}

func TestPatchObjectConflict(t *testing.T) {
	const ctrl = "test-writes-object-conflict"
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.PrependReactor("patch", resServers, conflictReactor(resServers))
	w := NewWriter(ctrl, nil)
	conflictsBefore := writes(ctrl, resServers, metrics.VerbPatch, metrics.OutcomeConflict)
	okBefore := writes(ctrl, resServers, metrics.VerbPatch, metrics.OutcomeSuccess)

	modified := srv.DeepCopy()
	modified.Finalizers = []string{"toolhive.stacklok.dev/finalizer"}
	sent, err := PatchObject(context.Background(), w, resServers, cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv, modified)
	if err == nil || sent {
		t.Fatalf("PatchObject = %v, %v; want false and a conflict", sent, err)
	}
	if !apierrors.IsConflict(err) {
		t.Fatalf("error %v is not a conflict (must wrap with %%w)", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("error %v does not wrap the API status", err)
	}
	if d := writes(ctrl, resServers, metrics.VerbPatch, metrics.OutcomeConflict) - conflictsBefore; d != 1 {
		t.Fatalf("writes_total{outcome=conflict} grew by %v, want 1", d)
	}
	if d := writes(ctrl, resServers, metrics.VerbPatch, metrics.OutcomeSuccess) - okBefore; d != 0 {
		t.Fatalf("writes_total{outcome=success} grew by %v, want 0", d)
	}
}

func TestPatchStatusConflictAndError(t *testing.T) {
	const ctrl = "test-writes-status-errors"
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.PrependReactor("patch", resServers, conflictReactor(resServers))
	w := NewWriter(ctrl, nil)
	res := resServers + "/status"
	conflictsBefore := writes(ctrl, res, metrics.VerbPatch, metrics.OutcomeConflict)

	newStatus := srv.DeepCopy().Status
	newStatus.Phase = thv1.MCPServerPhaseFailed
	_, err := PatchStatus(context.Background(), w, resServers, srv, cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv.Status, newStatus)
	if !apierrors.IsConflict(err) {
		t.Fatalf("error %v is not a conflict", err)
	}
	if d := writes(ctrl, res, metrics.VerbPatch, metrics.OutcomeConflict) - conflictsBefore; d != 1 {
		t.Fatalf("writes_total{outcome=conflict} grew by %v, want 1", d)
	}

	cs2 := fake.NewSimpleClientset(srv)
	cs2.PrependReactor("patch", resServers, func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd down"))
	})
	errBefore := writes(ctrl, res, metrics.VerbPatch, metrics.OutcomeError)
	_, err = PatchStatus(context.Background(), w, resServers, srv, cs2.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv.Status, newStatus)
	if err == nil || apierrors.IsConflict(err) || !apierrors.IsInternalError(err) {
		t.Fatalf("error %v, want a wrapped internal error", err)
	}
	if d := writes(ctrl, res, metrics.VerbPatch, metrics.OutcomeError) - errBefore; d != 1 {
		t.Fatalf("writes_total{outcome=error} grew by %v, want 1", d)
	}
}

func newConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "11"}}
}

// alwaysPatched makes every configmap patch succeed, whether or not the
// object is in the tracker, so that churn memory can be tested around
// creates and deletes independently.
func alwaysPatched(a clienttesting.Action) (bool, runtime.Object, error) {
	return true, newConfigMap(a.(clienttesting.PatchAction).GetName()), nil
}

func TestPatchChildChurn(t *testing.T) {
	const ctrl = "test-writes-child-churn"
	const res = "configmaps"
	ctx := context.Background()
	cs := kubefake.NewSimpleClientset(newConfigMap("c1"))
	cs.ClearActions()
	cms := cs.CoreV1().ConfigMaps("ns")
	w := NewWriter(ctrl, nil)
	bodyA := []byte(`{"data":{"k":"a"}}`)
	bodyB := []byte(`{"data":{"k":"b"}}`)

	patch := func(name string, body []byte) {
		t.Helper()
		if err := PatchChild(ctx, w, testOwner, res, "ns", name, "11", cms.Patch, body); err != nil {
			t.Fatalf("PatchChild %s: %v", name, err)
		}
	}
	expectChurn := func(step string, want float64, base float64) {
		t.Helper()
		if d := churn(ctrl, res) - base; d != want {
			t.Fatalf("%s: churn_writes_total grew by %v, want %v", step, d, want)
		}
	}

	base := churn(ctrl, res)
	patch("c1", bodyA)
	expectChurn("first write", 0, base)
	patch("c1", bodyB)
	expectChurn("different body", 0, base)
	patch("c1", bodyB)
	expectChurn("same body twice", 1, base)

	// The lock travels with the body.
	patches := patchActions(t, cs.Actions())
	if len(patches) != 3 {
		t.Fatalf("got %d patches, want 3", len(patches))
	}
	body := decode(t, patches[0].GetPatch())
	md, _ := body["metadata"].(map[string]any)
	if md["resourceVersion"] != "11" || body["data"] == nil {
		t.Fatalf("child patch body %s lacks data or resourceVersion 11", patches[0].GetPatch())
	}
	if patches[0].GetPatchType() != types.MergePatchType {
		t.Fatalf("child patch type %s", patches[0].GetPatchType())
	}

	// Same body to another child is not churn.
	cs.Tracker().Add(newConfigMap("c2"))
	base = churn(ctrl, res)
	patch("c2", bodyB)
	expectChurn("same body, other child", 0, base)

	t.Run("create resets", func(t *testing.T) {
		cs := kubefake.NewSimpleClientset()
		cs.PrependReactor("patch", res, alwaysPatched)
		cms := cs.CoreV1().ConfigMaps("ns")
		w := NewWriter(ctrl, nil)
		base := churn(ctrl, res)
		if err := PatchChild(ctx, w, testOwner, res, "ns", "c3", "11", cms.Patch, bodyA); err != nil {
			t.Fatal(err)
		}
		if _, err := CreateChild(ctx, w, testOwner, res, cms.Create, newConfigMap("c3")); err != nil {
			t.Fatal(err)
		}
		if err := PatchChild(ctx, w, testOwner, res, "ns", "c3", "11", cms.Patch, bodyA); err != nil {
			t.Fatal(err)
		}
		if d := churn(ctrl, res) - base; d != 0 {
			t.Fatalf("churn after create grew by %v, want 0", d)
		}
	})

	t.Run("delete resets", func(t *testing.T) {
		cs := kubefake.NewSimpleClientset()
		cs.PrependReactor("patch", res, alwaysPatched)
		cms := cs.CoreV1().ConfigMaps("ns")
		w := NewWriter(ctrl, nil)
		base := churn(ctrl, res)
		if err := PatchChild(ctx, w, testOwner, res, "ns", "c4", "11", cms.Patch, bodyA); err != nil {
			t.Fatal(err)
		}
		if err := DeleteChild(ctx, w, testOwner, res, "ns", "c4", cms.Delete, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := PatchChild(ctx, w, testOwner, res, "ns", "c4", "11", cms.Patch, bodyA); err != nil {
			t.Fatal(err)
		}
		if d := churn(ctrl, res) - base; d != 0 {
			t.Fatalf("churn after delete grew by %v, want 0", d)
		}
		// The memory works again after the reset.
		if err := PatchChild(ctx, w, testOwner, res, "ns", "c4", "11", cms.Patch, bodyA); err != nil {
			t.Fatal(err)
		}
		if d := churn(ctrl, res) - base; d != 1 {
			t.Fatalf("churn after a repeated write grew by %v, want 1", d)
		}
	})
}

func TestPatchChildConflict(t *testing.T) {
	const ctrl = "test-writes-child-conflict"
	const res = "configmaps"
	cs := kubefake.NewSimpleClientset(newConfigMap("c1"))
	cs.PrependReactor("patch", res, func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(corev1.Resource(res), "c1", errors.New("modified"))
	})
	w := NewWriter(ctrl, nil)
	before := writes(ctrl, res, metrics.VerbPatch, metrics.OutcomeConflict)
	churnBefore := churn(ctrl, res)
	body := []byte(`{"data":{"k":"a"}}`)
	for range 2 {
		err := PatchChild(context.Background(), w, testOwner, res, "ns", "c1", "11", cs.CoreV1().ConfigMaps("ns").Patch, body)
		if !apierrors.IsConflict(err) {
			t.Fatalf("error %v is not a conflict", err)
		}
	}
	if d := writes(ctrl, res, metrics.VerbPatch, metrics.OutcomeConflict) - before; d != 2 {
		t.Fatalf("writes_total{outcome=conflict} grew by %v, want 2", d)
	}
	// A write that failed did not land, so retrying it is not churn.
	if d := churn(ctrl, res) - churnBefore; d != 0 {
		t.Fatalf("failed writes counted as churn: %v", d)
	}
}

func TestCreateAndDeleteChild(t *testing.T) {
	const ctrl = "test-writes-child-create-delete"
	const res = "configmaps"
	ctx := context.Background()
	cs := kubefake.NewSimpleClientset()
	cms := cs.CoreV1().ConfigMaps("ns")
	w := NewWriter(ctrl, nil)

	createdBefore := writes(ctrl, res, metrics.VerbCreate, metrics.OutcomeSuccess)
	if _, err := CreateChild(ctx, w, testOwner, res, cms.Create, newConfigMap("c1")); err != nil {
		t.Fatal(err)
	}
	if d := writes(ctrl, res, metrics.VerbCreate, metrics.OutcomeSuccess) - createdBefore; d != 1 {
		t.Fatalf("writes_total{create,success} grew by %v, want 1", d)
	}
	createErrBefore := writes(ctrl, res, metrics.VerbCreate, metrics.OutcomeError)
	_, err := CreateChild(ctx, w, testOwner, res, cms.Create, newConfigMap("c1"))
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want a wrapped AlreadyExists", err)
	}
	if d := writes(ctrl, res, metrics.VerbCreate, metrics.OutcomeError) - createErrBefore; d != 1 {
		t.Fatalf("writes_total{create,error} grew by %v, want 1", d)
	}

	deletedBefore := writes(ctrl, res, metrics.VerbDelete, metrics.OutcomeSuccess)
	if err := DeleteChild(ctx, w, testOwner, res, "ns", "c1", cms.Delete, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	// Already gone: NotFound is success.
	if err := DeleteChild(ctx, w, testOwner, res, "ns", "c1", cms.Delete, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete of a missing child: %v, want nil", err)
	}
	if d := writes(ctrl, res, metrics.VerbDelete, metrics.OutcomeSuccess) - deletedBefore; d != 2 {
		t.Fatalf("writes_total{delete,success} grew by %v, want 2", d)
	}

	cs.PrependReactor("delete", res, func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource(res), "c1", errors.New("rbac"))
	})
	delErrBefore := writes(ctrl, res, metrics.VerbDelete, metrics.OutcomeError)
	if err := DeleteChild(ctx, w, testOwner, res, "ns", "c1", cms.Delete, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete error %v, want a wrapped Forbidden", err)
	}
	if d := writes(ctrl, res, metrics.VerbDelete, metrics.OutcomeError) - delErrBefore; d != 1 {
		t.Fatalf("writes_total{delete,error} grew by %v, want 1", d)
	}
}

func TestMergePatch(t *testing.T) {
	type doc struct {
		A string   `json:"a,omitempty"`
		B []string `json:"b,omitempty"`
	}
	p, changed, err := MergePatch(doc{A: "x", B: []string{"1"}}, doc{A: "x", B: []string{"1"}})
	if err != nil || changed || string(p) != "{}" {
		t.Fatalf("equal docs: %s %v %v", p, changed, err)
	}
	p, changed, err = MergePatch(doc{A: "x"}, doc{A: "x", B: []string{"1"}})
	if err != nil || !changed || string(p) != `{"b":["1"]}` {
		t.Fatalf("added field: %s %v %v", p, changed, err)
	}
	p, changed, err = MergePatch(doc{A: "x"}, doc{})
	if err != nil || !changed || string(p) != `{"a":null}` {
		t.Fatalf("removed field: %s %v %v", p, changed, err)
	}
}

// TestForgetResetsExactlyTheOwner: forgetting an owner drops the memory
// of its children only.
func TestForgetResetsExactlyTheOwner(t *testing.T) {
	const ctrl = "test-writes-forget"
	const res = "configmaps"
	ctx := context.Background()
	cs := kubefake.NewSimpleClientset()
	cs.PrependReactor("patch", res, alwaysPatched)
	cms := cs.CoreV1().ConfigMaps("ns")
	w := NewWriter(ctrl, nil)
	body := []byte(`{"data":{"k":"a"}}`)
	owners := map[string]types.UID{"c": "uid-c", "c-other": "uid-other"}
	for _, name := range []string{"c", "c-other"} {
		if err := PatchChild(ctx, w, owners[name], res, "ns", name, "1", cms.Patch, body); err != nil {
			t.Fatal(err)
		}
	}
	base := churn(ctrl, res)
	w.Forget(owners["c"])
	for _, name := range []string{"c", "c-other"} {
		if err := PatchChild(ctx, w, owners[name], res, "ns", name, "1", cms.Patch, body); err != nil {
			t.Fatal(err)
		}
	}
	// c's owner was forgotten; c-other's still remembers its last write.
	if d := churn(ctrl, res) - base; d != 1 {
		t.Fatalf("churn grew by %v, want 1 (only c-other)", d)
	}
}

// TestForgetBoundsChurnMemory: children garbage-collected with their owner
// never pass through DeleteChild; forgetting the owner drops them all in
// one call, so the memory stays as large as the set of live owners, and a
// later write of the same body to a recreated child is not churn.
func TestForgetBoundsChurnMemory(t *testing.T) {
	kube := kubefake.NewClientset()
	w := NewWriter("test-forget-children", nil)
	ctx := context.Background()
	for _, n := range []string{"a", "a-runconfig"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "ns"}}
		if _, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := PatchChild(ctx, w, testOwner, "configmaps", "ns", n, "1", kube.CoreV1().ConfigMaps("ns").Patch, []byte(`{"data":{"k":"v"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.remembered(); got != 1 {
		t.Fatalf("remembered %d owners, want 1", got)
	}
	w.Forget(testOwner)
	w.Forget("never-written")
	if got := w.remembered(); got != 0 {
		t.Fatalf("remembered %d owners after Forget, want 0", got)
	}
	before := testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues("test-forget-children", "configmaps"))
	if err := PatchChild(ctx, w, testOwner, "configmaps", "ns", "a", "1", kube.CoreV1().ConfigMaps("ns").Patch, []byte(`{"data":{"k":"v"}}`)); err != nil {
		t.Fatal(err)
	}
	if after := testutil.ToFloat64(metrics.ChurnWrites.WithLabelValues("test-forget-children", "configmaps")); after != before {
		t.Errorf("a write after Forget counted as churn")
	}
}

// TestPatchStatusRepeatFromStaleCacheSendsNothing: a sync woken by a child
// event before the informer delivered our own status write computes the
// same patch from the same base; sending it again would change nothing.
// Once the base moves on, a change is sent again.
func TestPatchStatusRepeatFromStaleCacheSendsNothing(t *testing.T) {
	const ctrl = "test-writes-status-repeat"
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	cs.ClearActions()
	w := NewWriter(ctrl, nil)
	newStatus := srv.DeepCopy().Status
	newStatus.Phase = thv1.MCPServerPhaseReady
	patch := cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch
	for i, want := range []bool{true, false} {
		sent, err := PatchStatus(context.Background(), w, resServers, srv, patch, srv.Status, newStatus)
		if err != nil || sent != want {
			t.Fatalf("call %d: PatchStatus = %v, %v; want %v", i, sent, err, want)
		}
	}
	if n := len(cs.Actions()); n != 1 {
		t.Fatalf("sent %d actions, want 1", n)
	}
	moved := srv.DeepCopy()
	moved.ResourceVersion = "2"
	newStatus.Phase = thv1.MCPServerPhaseFailed
	if sent, err := PatchStatus(context.Background(), w, resServers, moved, patch, moved.Status, newStatus); err != nil || !sent {
		t.Fatalf("a change from a new base was not sent: %v, %v", sent, err)
	}
}

// TestClosedWriteGateBlocksEveryWrite: with the gate closed (a replica
// that lost its lease), no helper sends anything.
func TestClosedWriteGateBlocksEveryWrite(t *testing.T) {
	srv := newServer()
	cs := fake.NewSimpleClientset(srv)
	kube := kubefake.NewClientset()
	cs.ClearActions()
	closed := errors.New("not leading")
	w := NewWriter("test-write-gate", func() error { return closed })
	ctx := context.Background()

	mod := srv.DeepCopy()
	mod.Finalizers = append(mod.Finalizers, "x")
	if _, err := PatchObject(ctx, w, resServers, cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv, mod); !errors.Is(err, closed) {
		t.Errorf("PatchObject: %v", err)
	}
	st := srv.Status.DeepCopy()
	st.Phase = thv1.MCPServerPhaseReady
	if _, err := PatchStatus(ctx, w, resServers, srv, cs.ToolhiveV1beta1().MCPServers(srv.Namespace).Patch, srv.Status, st); !errors.Is(err, closed) {
		t.Errorf("PatchStatus: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	if _, err := CreateChild(ctx, w, testOwner, "configmaps", kube.CoreV1().ConfigMaps("ns").Create, cm); !errors.Is(err, closed) {
		t.Errorf("CreateChild: %v", err)
	}
	if err := PatchChild(ctx, w, testOwner, "configmaps", "ns", "c", "1", kube.CoreV1().ConfigMaps("ns").Patch, []byte(`{}`)); !errors.Is(err, closed) {
		t.Errorf("PatchChild: %v", err)
	}
	if err := DeleteChild(ctx, w, testOwner, "configmaps", "ns", "c", kube.CoreV1().ConfigMaps("ns").Delete, metav1.DeleteOptions{}); !errors.Is(err, closed) {
		t.Errorf("DeleteChild: %v", err)
	}
	if err := DeleteCollection(ctx, w, "pods", "ns", kube.CoreV1().Pods("ns").DeleteCollection, "a=b"); !errors.Is(err, closed) {
		t.Errorf("DeleteCollection: %v", err)
	}
	if n := len(cs.Actions()) + len(kube.Actions()); n != 0 {
		t.Fatalf("%d actions sent through a closed gate", n)
	}
}

// recordingPatch is a PatchFunc that records each call (subresource and
// body) and answers with the server at the next resourceVersion, as the
// API server does.
type recordingPatch struct {
	srv   *thv1.MCPServer
	calls []string
	fail  error
}

func (r *recordingPatch) patch(_ context.Context, _ string, _ types.PatchType, data []byte, _ metav1.PatchOptions, sub ...string) (*thv1.MCPServer, error) {
	r.calls = append(r.calls, strings.Join(sub, "")+" "+string(data))
	if r.fail != nil {
		return nil, r.fail
	}
	out := r.srv.DeepCopy()
	out.ResourceVersion = "8"
	return out, nil
}

// EnsureFinalizer adds a missing finalizer with one patch locked to the
// object's resourceVersion, keeping the finalizers of others, and sends
// nothing when the finalizer is there.
func TestEnsureFinalizer(t *testing.T) {
	srv := newServer()
	srv.Finalizers = []string{"other.example.com/keep"}
	rec := &recordingPatch{srv: srv}
	w := NewWriter("test-ensure-finalizer", nil)
	wrote, err := EnsureFinalizer(context.Background(), w, resServers, rec.patch, srv, "a.example.com/finalizer")
	if err != nil || !wrote {
		t.Fatalf("EnsureFinalizer = %v, %v; want true, nil", wrote, err)
	}
	want := []string{` {"metadata":{"finalizers":["other.example.com/keep","a.example.com/finalizer"],"resourceVersion":"7"}}`}
	if !slices.Equal(rec.calls, want) {
		t.Fatalf("calls %q, want %q", rec.calls, want)
	}
	if !slices.Equal(srv.Finalizers, []string{"other.example.com/keep"}) {
		t.Errorf("the object as read was changed: %v", srv.Finalizers)
	}
	rec.calls = nil
	srv.Finalizers = append(srv.Finalizers, "a.example.com/finalizer")
	if wrote, err := EnsureFinalizer(context.Background(), w, resServers, rec.patch, srv, "a.example.com/finalizer"); err != nil || wrote || rec.calls != nil {
		t.Fatalf("with the finalizer present: %v, %v, calls %q; want no write", wrote, err, rec.calls)
	}
}

// ReleaseFinalizer writes the status first, then cleans up, then removes
// only its finalizer with a patch locked to the resourceVersion the status
// write answered; nothing without the finalizer; no status write when
// there is no status to write; and no release when the cleanup failed.
func TestReleaseFinalizer(t *testing.T) {
	ctx := context.Background()
	const fin = "a.example.com/finalizer"
	srv := newServer()
	srv.Finalizers = []string{fin, "other.example.com/keep"}
	status := srv.Status.DeepCopy()
	status.Phase = thv1.MCPServerPhaseTerminating
	rec := &recordingPatch{srv: srv}
	w := NewWriter("test-release-finalizer", nil)
	var order []string
	cleanup := func(context.Context) error {
		order = append(order, "cleanup after "+string(rune('0'+len(rec.calls))))
		return nil
	}
	released, err := ReleaseFinalizer(ctx, w, resServers, rec.patch, srv, fin, srv.Status, status, cleanup)
	if err != nil || !released {
		t.Fatalf("ReleaseFinalizer = %v, %v; want true, nil", released, err)
	}
	want := []string{
		`status {"status":{"phase":"Terminating"}}`,
		` {"metadata":{"finalizers":["other.example.com/keep"],"resourceVersion":"8"}}`,
	}
	if !slices.Equal(rec.calls, want) {
		t.Fatalf("calls %q, want %q", rec.calls, want)
	}
	if !slices.Equal(order, []string{"cleanup after 1"}) {
		t.Errorf("cleanup ran %q, want once between the two writes", order)
	}

	rec.calls = nil
	if released, err := ReleaseFinalizer(ctx, w, resServers, rec.patch, srv, fin, nil, nil, nil); err != nil || !released {
		t.Fatalf("without status: %v, %v", released, err)
	}
	if want := []string{` {"metadata":{"finalizers":["other.example.com/keep"],"resourceVersion":"7"}}`}; !slices.Equal(rec.calls, want) {
		t.Fatalf("without status: calls %q, want %q", rec.calls, want)
	}

	rec.calls = nil
	failed := errors.New("cleanup failed")
	if released, err := ReleaseFinalizer(ctx, w, resServers, rec.patch, srv, fin, nil, nil, func(context.Context) error { return failed }); !errors.Is(err, failed) || released {
		t.Fatalf("failed cleanup: %v, %v; want false and its error", released, err)
	}
	if rec.calls != nil {
		t.Fatalf("failed cleanup released: %q", rec.calls)
	}

	srv.Finalizers = []string{"other.example.com/keep"}
	if released, err := ReleaseFinalizer(ctx, w, resServers, rec.patch, srv, fin, srv.Status, status, cleanup); err != nil || released || rec.calls != nil {
		t.Fatalf("without the finalizer: %v, %v, calls %q; want nothing", released, err, rec.calls)
	}
}

// StatusBehind: an object is behind this Writer's status write of it only
// while the cache still has the version the write started from and the
// API server answered with a newer one; an answer with the same version
// (a fake clientset's) and a cache that caught up are not behind.
func TestStatusBehind(t *testing.T) {
	for _, c := range []struct {
		name             string
		answered, cached string
		want             bool
	}{
		{"cache still at the write's base", "8", "7", true},
		{"cache caught up", "8", "8", false},
		{"cache moved past the write", "8", "9", false},
		{"answer without a new version", "7", "7", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer()
			srv.UID = "uid-srv"
			w := NewWriter("test-writes-status-behind", nil)
			patch := func(_ context.Context, _ string, _ types.PatchType, _ []byte, _ metav1.PatchOptions, _ ...string) (*thv1.MCPServer, error) {
				out := srv.DeepCopy()
				out.ResourceVersion = c.answered
				return out, nil
			}
			if w.StatusBehind(srv) {
				t.Fatal("behind before any write")
			}
			newStatus := srv.DeepCopy().Status
			newStatus.Phase = thv1.MCPServerPhaseReady
			if sent, err := PatchStatus(context.Background(), w, resServers, srv, patch, srv.Status, newStatus); err != nil || !sent {
				t.Fatalf("PatchStatus = %v, %v", sent, err)
			}
			cached := srv.DeepCopy()
			cached.ResourceVersion = c.cached
			if got := w.StatusBehind(cached); got != c.want {
				t.Errorf("StatusBehind = %v, want %v", got, c.want)
			}
		})
	}
}

// A Writer made by Deps tells the Deps' DriftObserver each drift it
// counts, with its controller's name; without one it tells nobody.
func TestDriftObserver(t *testing.T) {
	var got []string
	d := &Deps{Drift: func(controller, resource string, obj klog.ObjectRef, fields []string) {
		got = append(got, controller+" "+resource+" "+obj.String()+" "+strings.Join(fields, ","))
	}}
	d.NewWriter("mcpserver").Drift(context.Background(), "deployments", klog.KRef("ns", "srv"), []string{"spec.replicas", "spec.template.metadata.annotations"})
	if want := []string{"mcpserver deployments ns/srv spec.replicas,spec.template.metadata.annotations"}; !slices.Equal(got, want) {
		t.Errorf("observed %q, want %q", got, want)
	}
	(&Deps{}).NewWriter("mcpserver").Drift(context.Background(), "deployments", klog.KRef("ns", "srv"), []string{"spec.replicas"})
}
