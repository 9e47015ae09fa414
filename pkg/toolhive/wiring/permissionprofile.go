package wiring

import thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"

// PermissionProfileNoEffect names spec.permissionProfile, for the
// workload's UnsupportedFields condition, when it is set: ToolHive's
// operator ignores it from v0.63.0 on (its Kubernetes runtime never
// applied a profile to the MCP server's pod), and so does hivekeeper, whose
// RunConfig carries the default network profile whatever it names.
func PermissionProfileNoEffect(ref *thv1.PermissionProfileRef) []string {
	if ref == nil {
		return nil
	}
	return []string{"spec.permissionProfile (ToolHive's Kubernetes runtime does not apply permission profiles)"}
}
