package workload

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Reasons of the OIDCConfigRefValidated condition every workload kind
// reports.
const (
	ReasonOIDCConfigRefNotFound = "OIDCConfigRefNotFound"
	ReasonOIDCConfigRefNotValid = "OIDCConfigRefNotValid"
	ReasonOIDCConfigRefValid    = "OIDCConfigRefValid"
)

// OIDCRef is the outcome of resolving a workload's MCPOIDCConfig
// reference: the config when it can be used, and the OIDCConfigRefValidated
// condition to report either way.
type OIDCRef struct {
	// Config is the referenced config, nil unless it exists and is Valid.
	Config *thv1.MCPOIDCConfig
	// Status, Reason and Message make the OIDCConfigRefValidated condition.
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Usable reports whether the workload may be deployed with this reference.
func (r OIDCRef) Usable() bool { return r.Config != nil }

// CheckOIDCRef turns the MCPOIDCConfig a workload's reference names (nil
// when the lister does not have it) into the OIDCConfigRefValidated
// condition, and the config when it can be used. A missing config or one
// whose Valid condition is not True is not usable: a workload that should
// authenticate is not deployed without its configuration. The caller reads
// the config from its lister — never the API, never a write: the
// MCPOIDCConfig controller owns that object.
func CheckOIDCRef(ref *thv1.OIDCConfigReference, cfg *thv1.MCPOIDCConfig) OIDCRef {
	if cfg == nil {
		return OIDCRef{Status: metav1.ConditionFalse, Reason: ReasonOIDCConfigRefNotFound,
			Message: fmt.Sprintf("MCPOIDCConfig %q not found", ref.Name)}
	}
	if !meta.IsStatusConditionTrue(cfg.Status.Conditions, thv1.ConditionValid) {
		return OIDCRef{Status: metav1.ConditionFalse, Reason: ReasonOIDCConfigRefNotValid,
			Message: fmt.Sprintf("MCPOIDCConfig %q is not valid", ref.Name)}
	}
	return OIDCRef{Config: cfg, Status: metav1.ConditionTrue, Reason: ReasonOIDCConfigRefValid,
		Message: fmt.Sprintf("MCPOIDCConfig %q is valid", ref.Name)}
}

// OIDCConfigChangeMatters reports whether an update of an MCPOIDCConfig
// changes anything a referencing workload consumes: the spec, the config
// hash, validity or deletion. The MCPOIDCConfig controller rewrites
// status.referencingWorkloads whenever a referrer comes or goes; re-syncing
// every referrer for that would make creating N referrers cost O(N²)
// syncs.
func OIDCConfigChangeMatters(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*thv1.MCPOIDCConfig)
	n, ok2 := newObj.(*thv1.MCPOIDCConfig)
	if !ok1 || !ok2 {
		return false
	}
	return !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) ||
		o.Status.ConfigHash != n.Status.ConfigHash ||
		validStatus(o) != validStatus(n) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

func validStatus(cfg *thv1.MCPOIDCConfig) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(cfg.Status.Conditions, thv1.ConditionValid); c != nil {
		return c.Status
	}
	return ""
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

// InvalidSpecError is user input a builder cannot build from. The sync
// turns it into a condition and a Warning event and does not retry:
// retrying cannot fix user input, the next spec change will.
type InvalidSpecError struct {
	// Condition is the condition type that reports it.
	Condition string
	// Reason is the condition and event reason.
	Reason string
	// Message explains what is wrong, naming the field.
	Message string
}

func (e *InvalidSpecError) Error() string { return e.Message }

// CustomServiceAccount returns the service account a spec names, and
// whether it names one. An empty name counts as none, so the controller's
// own account is used rather than a pod without one.
func CustomServiceAccount(sa *string) (string, bool) {
	if sa == nil || *sa == "" {
		return "", false
	}
	return *sa, true
}

// CopyInt32 returns a copy of p (nil stays nil), so that a built object
// never shares a pointer with the cached custom resource it came from.
func CopyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
