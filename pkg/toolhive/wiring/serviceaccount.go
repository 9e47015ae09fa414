package wiring

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// CheckServiceAccount refuses a spec.serviceAccount that names an account
// hivekeeper created for another workload, or for another role of this one
// (a proxy runner's account, which holds the runner's permissions). Running
// as it would hand the pod that workload's identity and permissions, which
// the author of the spec was never granted.
//
// sa is the live account the spec names, read from the ServiceAccount
// lister (nil when it does not exist yet, which is allowed). An account is
// hivekeeper's when it carries the toolhive=true label and a controller
// owner reference to a ToolHive kind; any other account is allowed. own is the one hivekeeper-managed
// name this workload may name: the account hivekeeper would create for this
// same pod when the spec names none ("" when there is none), owned by
// ownerUID.
func CheckServiceAccount(sa *corev1.ServiceAccount, ownerUID types.UID, own string) error {
	if sa == nil || sa.Labels[naming.LabelToolhive] != "true" {
		return nil
	}
	ref := metav1.GetControllerOf(sa)
	if ref == nil {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != thv1.GroupName {
		return nil
	}
	if ref.UID == ownerUID && sa.Name == own {
		return nil
	}
	return &InvalidSpecError{
		Condition: thv1.ConditionReady,
		Reason:    thv1.ReasonServiceAccountNotAllowed,
		Message: fmt.Sprintf("spec.serviceAccount: ServiceAccount %q is managed by hivekeeper for %s %s and cannot be used by this workload; name a ServiceAccount of your own",
			sa.Name, ref.Kind, ref.Name),
	}
}

// CustomServiceAccount returns the service account a spec names, and
// whether it names one. An empty name counts as none, so the controller's
// own account is used rather than a pod without one.
func CustomServiceAccount(sa *string) (string, bool) {
	if sa == nil || *sa == "" {
		return "", false
	}
	return *sa, true
}
