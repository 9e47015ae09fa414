package workload

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Unsupported reports the fields of ToolHive's API that the workload sets
// and hivekeeper stores without acting on: UnsupportedFields=True with
// the paths in the message, and a Warning event when that list appears or
// changes, so a feature that is off is never silent. With no such field
// the condition is removed. The workload itself is still converged: what
// hivekeeper does support keeps working.
func (r *Report) Unsupported(paths []string) {
	if len(paths) == 0 {
		r.Remove(thv1.ConditionUnsupportedFields)
		return
	}
	msg := "hivekeeper stores but does not act on: " + strings.Join(paths, ", ")
	r.Set(thv1.ConditionUnsupportedFields, metav1.ConditionTrue, thv1.ReasonFieldsNotSupported, msg)
	if old := meta.FindStatusCondition(r.old, thv1.ConditionUnsupportedFields); old == nil || old.Status != metav1.ConditionTrue || old.Message != msg {
		r.recorder.Event(r.obj, corev1.EventTypeWarning, thv1.ReasonFieldsNotSupported, msg)
	}
}
