package workload

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// SessionStorageWarning sets ToolHive's advisory SessionStorageWarning
// condition from a workload's replicas and session storage, as ToolHive
// v0.63.0's operator words it: True while more than one replica is asked
// for without Redis (each replica keeps its own sessions), False
// otherwise. It says nothing about the operator-wide default Redis, as
// there: the condition reads the spec only.
func SessionStorageWarning(r *Report, replicas *int32, storage *thv1.SessionStorageConfig) {
	switch {
	case replicas == nil || *replicas <= 1:
		r.Set(thv1.ConditionSessionStorageWarning, metav1.ConditionFalse, thv1.ReasonSessionStorageNotApplicable,
			"session storage warning is not active")
	case storage == nil || storage.Provider != thv1.SessionStorageProviderRedis:
		r.Set(thv1.ConditionSessionStorageWarning, metav1.ConditionTrue, thv1.ReasonSessionStorageMissing,
			"replicas > 1 but sessionStorage.provider is not redis; sessions are not shared across replicas")
	default:
		r.Set(thv1.ConditionSessionStorageWarning, metav1.ConditionFalse, thv1.ReasonSessionStorageConfigured,
			"Redis session storage is configured")
	}
}

// PrimaryUpstreamIgnored sets ToolHive's advisory
// AuthzPrimaryUpstreamProviderIgnored condition on an MCPServer or
// MCPRemoteProxy (kind) whose inline Cedar authorization names a
// primaryUpstreamProvider: such a workload runs no embedded authorization
// server, so the field has no effect. Absent otherwise.
func PrimaryUpstreamIgnored(r *Report, kind string, authz *thv1.InlineAuthz) {
	if authz == nil || authz.Inline == nil || authz.Inline.PrimaryUpstreamProvider == "" {
		r.Remove(thv1.ConditionAuthzPrimaryUpstreamProviderIgnored)
		return
	}
	r.Set(thv1.ConditionAuthzPrimaryUpstreamProviderIgnored, metav1.ConditionTrue, thv1.ReasonAuthzPrimaryUpstreamProviderIgnored,
		fmt.Sprintf("spec.authzConfig.inline.primaryUpstreamProvider=%q has no effect on %s; "+
			"the field only takes effect on VirtualMCPServer with an embedded auth server", authz.Inline.PrimaryUpstreamProvider, kind))
}
