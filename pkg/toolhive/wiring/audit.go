package wiring

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// Audit is the RunConfig's audit_config for spec.audit, as ToolHive's
// operator sets it: its default audit configuration when enabled, nothing
// otherwise (enabled: false is the same as no audit block).
func Audit(a *thv1.AuditConfig) *schema.AuditConfig {
	if a == nil || !a.Enabled {
		return nil
	}
	return schema.DefaultAuditConfig()
}
