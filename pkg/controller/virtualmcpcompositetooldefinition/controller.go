// Package virtualmcpcompositetooldefinition is the
// VirtualMCPCompositeToolDefinition controller: the shared config
// controller (workload.ConfigController) bound to the declaration
// workload.CompositeToolDefinitions. It validates each definition as
// ToolHive's vmcp would (so a bad workflow is reported before a vMCP is
// rolled with it), publishes a hash of its spec, is the only writer of the
// referrer lists (referencingWorkloads and ToolHive's
// referencingVirtualServers), and holds a finalizer while any
// VirtualMCPServer references the definition.
package virtualmcpcompositetooldefinition

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "virtualmcpcompositetooldefinition"

// Controller reconciles VirtualMCPCompositeToolDefinitions.
type Controller = workload.ConfigController[*thv1.VirtualMCPCompositeToolDefinition]

// New builds the controller and registers its event handlers. The
// workload informers must carry the reference indexes
// (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	return workload.NewConfigController(d, Name, workload.CompositeToolDefinitions)
}
