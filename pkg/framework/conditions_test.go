package framework

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestSetCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	clk := testingclock.NewFakePassiveClock(t0)
	other := metav1.Condition{
		Type: "Theirs", Status: metav1.ConditionFalse, Reason: "Other", Message: "set by someone else",
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(time.Unix(100, 0)),
	}
	conds := []metav1.Condition{other}

	SetCondition(&conds, clk, 2, "Ready", metav1.ConditionFalse, "Pending", "waiting")
	ready := meta.FindStatusCondition(conds, "Ready")
	if ready == nil {
		t.Fatal("Ready not set")
	}
	if !ready.LastTransitionTime.Time.Equal(t0.Truncate(time.Second)) {
		t.Fatalf("lastTransitionTime = %v, want %v (whole seconds, as the API server stores it)", ready.LastTransitionTime, t0.Truncate(time.Second))
	}
	if ready.ObservedGeneration != 2 {
		t.Fatalf("observedGeneration = %d, want 2", ready.ObservedGeneration)
	}
	firstTransition := ready.LastTransitionTime

	// Same status, different reason, message and generation: the
	// transition time stays.
	clk.SetTime(t0.Add(time.Hour))
	SetCondition(&conds, clk, 3, "Ready", metav1.ConditionFalse, "StillPending", "still waiting")
	ready = meta.FindStatusCondition(conds, "Ready")
	if !ready.LastTransitionTime.Equal(&firstTransition) {
		t.Fatalf("lastTransitionTime moved to %v without a status change", ready.LastTransitionTime)
	}
	if ready.Reason != "StillPending" || ready.Message != "still waiting" || ready.ObservedGeneration != 3 {
		t.Fatalf("reason/message/observedGeneration not updated: %+v", *ready)
	}

	// Re-asserting the identical condition leaves the slice semantically
	// equal, so the status patch is empty.
	before := append([]metav1.Condition(nil), conds...)
	clk.SetTime(t0.Add(2 * time.Hour))
	SetCondition(&conds, clk, 3, "Ready", metav1.ConditionFalse, "StillPending", "still waiting")
	if !equality.Semantic.DeepEqual(before, conds) {
		t.Fatalf("re-asserting an unchanged condition changed it:\n%v\n%v", before, conds)
	}

	// Status flips: the transition time moves.
	flip := t0.Add(3 * time.Hour)
	clk.SetTime(flip)
	SetCondition(&conds, clk, 4, "Ready", metav1.ConditionTrue, "Ready", "")
	ready = meta.FindStatusCondition(conds, "Ready")
	if !ready.LastTransitionTime.Time.Equal(flip.Truncate(time.Second)) {
		t.Fatalf("lastTransitionTime = %v after a flip, want %v", ready.LastTransitionTime, flip.Truncate(time.Second))
	}
	if ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != 4 {
		t.Fatalf("flip not applied: %+v", *ready)
	}

	// The other writer's condition is untouched, and in its place.
	if len(conds) != 2 {
		t.Fatalf("got %d conditions, want 2", len(conds))
	}
	if !equality.Semantic.DeepEqual(conds[0], other) {
		t.Fatalf("other condition changed: %+v", conds[0])
	}
}
