package workload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Report is what one sync says about a workload, written into the status
// being built (a deep copy of the status as read): its conditions, phase
// and message. Conditions of other types, other writers', are kept: the
// status merge patch replaces the whole conditions array.
//
// Warning events are recorded when a condition turns False (or changes
// reason while False), so a lasting problem is one event, not one per
// sync.
type Report struct {
	conditions     *[]metav1.Condition
	phase, message *string
	old            []metav1.Condition
	obj            Object
	clock          clock.PassiveClock
	recorder       record.EventRecorder
	phases         Phases
}

// Set sets one condition, stamped with the workload's generation. For a
// kind with Phases.ReadyReasons, Ready's reason is "Ready" or "NotReady".
func (r *Report) Set(condType string, status metav1.ConditionStatus, reason, message string) {
	if condType == thv1.ConditionReady && r.phases.ReadyReasons {
		reason = thv1.ReasonNotReady
		if status == metav1.ConditionTrue {
			reason = thv1.ReasonReady
		}
	}
	meta.SetStatusCondition(r.conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: r.obj.GetGeneration(),
		LastTransitionTime: metav1.NewTime(r.clock.Now().Truncate(1e9)),
	})
}

// SetFalse sets condType False and records a Warning event if it just
// turned False.
func (r *Report) SetFalse(condType, reason, message string) {
	r.Set(condType, metav1.ConditionFalse, reason, message)
	if ConditionFlippedTo(r.old, *r.conditions, condType, metav1.ConditionFalse) || r.readyCauseChanged(condType, message) {
		r.event(reason, message)
	}
}

// readyCauseChanged reports, for a kind with Phases.ReadyReasons, whether
// Ready was False already with another message: its reason, NotReady,
// no longer names the cause, so a new cause shows as a new message only.
func (r *Report) readyCauseChanged(condType, message string) bool {
	if condType != thv1.ConditionReady || !r.phases.ReadyReasons {
		return false
	}
	o := meta.FindStatusCondition(r.old, condType)
	return o != nil && o.Status == metav1.ConditionFalse && o.Message != message
}

// Remove drops a condition that no longer applies (its reference was
// removed from the spec).
func (r *Report) Remove(condType string) { meta.RemoveStatusCondition(r.conditions, condType) }

// Ready sets the phase, the message and the Ready condition.
func (r *Report) Ready(phase string, status metav1.ConditionStatus, reason, message string) {
	*r.phase, *r.message = phase, message
	r.Set(thv1.ConditionReady, status, reason, message)
}

// NotReady is Ready=False with phase and message, without an event.
func (r *Report) NotReady(phase, reason, message string) {
	r.Ready(phase, metav1.ConditionFalse, reason, message)
}

// Fail is phase Failed with Ready=False, and a Warning event when Ready
// just turned False.
func (r *Report) Fail(reason, message string) {
	*r.phase, *r.message = r.phases.Failed, message
	r.SetFalse(thv1.ConditionReady, reason, message)
}

// Pending is phase Pending with Ready=False, without an event.
func (r *Report) Pending(reason, message string) {
	r.NotReady(r.phases.Pending, reason, message)
}

// Unusable reports a referenced config that is missing or not valid,
// without an event (the reference's condition recorded one): Failed,
// Ready=False "NotReady" for a kind with Phases.RefFailed, else Pending
// with reason, the reference kind's Waiting reason.
func (r *Report) Unusable(reason, message string) {
	if r.phases.RefFailed {
		r.NotReady(r.phases.Failed, thv1.ReasonNotReady, message)
		return
	}
	r.Pending(reason, message)
}

func (r *Report) event(reason, message string) {
	r.recorder.Event(r.obj, corev1.EventTypeWarning, reason, message)
}

// ConditionFlippedTo reports whether condType is now status (with a new
// reason or a new status) when it was not before. Warning events are
// recorded on such transitions only, so a persistent problem produces one
// event, not one per sync.
func ConditionFlippedTo(old, cur []metav1.Condition, condType string, status metav1.ConditionStatus) bool {
	n := meta.FindStatusCondition(cur, condType)
	if n == nil || n.Status != status {
		return false
	}
	o := meta.FindStatusCondition(old, condType)
	return o == nil || o.Status != status || o.Reason != n.Reason
}
