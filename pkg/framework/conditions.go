package framework

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// SetCondition sets one condition in conds, stamped with generation.
// lastTransitionTime changes only when the status changes, so re-asserting
// an unchanged condition leaves the status byte-for-byte equal and the status
// patch empty. Conditions of other types (other writers') are untouched.
func SetCondition(conds *[]metav1.Condition, clk clock.PassiveClock, generation int64, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(clk.Now().Truncate(1e9)),
	})
}
