// Package toolhivetest holds fixtures of ToolHive's kinds for the tests of
// every layer: resolved configs as their controllers leave them, the
// reference combinations the parity tables run, and the checks of child
// names against the API server's limits. It imports nothing of
// hivekeeper's but the API types, so a test of any package may use it.
package toolhivetest

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Raw is s as a raw JSON field.
func Raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// Decode returns the JSON document s decoded into a new T, as the API
// server would hand it to a client (unknown keys dropped), for fixtures of
// typed subtrees written as manifests. Invalid JSON panics.
func Decode[T any](s string) *T {
	var out T
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		panic(fmt.Sprintf("decode %T: %v", out, err))
	}
	return &out
}

// CompositeTool is a composite tool vmcp accepts: a parameter schema, a
// tool step, a forEach step and an elicitation that depend on it.
func CompositeTool() thv1.CompositeToolSpec {
	return thv1.CompositeToolSpec{
		Name: "deploy", Description: "deploys", Timeout: "5m",
		Parameters: Raw(`{"type":"object","properties":{"env":{"type":"string"}}}`),
		Steps: []thv1.WorkflowStep{
			{ID: "list", Tool: "k8s.list", Arguments: Raw(`{"ns":"{{.params.env}}"}`), OnError: &thv1.StepErrorHandling{Action: "retry", RetryCount: 2, RetryDelay: "5s"}},
			{ID: "each", Type: thv1.WorkflowStepTypeForEach, Collection: "{{.steps.list.output.items}}", ItemVar: "pod",
				InnerStep: Raw(`{"tool":"k8s.describe"}`), MaxParallel: 5, DependsOn: []string{"list"}},
			{ID: "ask", Type: thv1.WorkflowStepTypeElicitation, Message: "go?", DependsOn: []string{"each"},
				OnDecline: &thv1.ElicitationResponse{Action: "skip_remaining"}},
		},
	}
}
