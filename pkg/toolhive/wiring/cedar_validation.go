package wiring

import (
	"fmt"

	"github.com/cedar-policy/cedar-go/ast"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// maxCedarPolicyBytes is the largest inline Cedar policy of an
// MCPRemoteProxy ToolHive's operator accepts (v0.63.0): the size bounds
// the parser's recursion, and with it the stack and memory one spec can
// make a controller spend.
const maxCedarPolicyBytes = 8 << 10

// CheckRemoteProxyCedar is ToolHive's check of an MCPRemoteProxy's inline
// Cedar policies before anything is deployed (its messages, under the
// field's path): none over 8 KiB, then each one parses. Policies are only
// parsed here, never compiled, so a large policy costs linear time.
func CheckRemoteProxyCedar(authz *thv1.InlineAuthz) error {
	if authz == nil || authz.Type != thv1.AuthzConfigTypeInline || authz.Inline == nil {
		return nil
	}
	const path = "spec.authzConfig.inline.policies: "
	for i, policy := range authz.Inline.Policies {
		if len(policy) > maxCedarPolicyBytes {
			return fmt.Errorf(path+"cedar policy at index %d rejected: policy is too large (%d bytes, max %d)", i, len(policy), maxCedarPolicyBytes)
		}
		var p ast.Policy
		if err := p.UnmarshalCedar([]byte(policy)); err != nil {
			return fmt.Errorf(path+"cedar policy at index %d has invalid syntax: %w", i, err)
		}
	}
	return nil
}
