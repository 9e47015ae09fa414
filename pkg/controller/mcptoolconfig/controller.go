// Package mcptoolconfig is the MCPToolConfig controller: the shared config
// controller (workload.ConfigController) bound to the MCPToolConfig
// declaration (workload.ToolConfigs). It validates each config, publishes
// a hash of its spec (which rolls the proxies of its referrers), is the
// only writer of status.referencingWorkloads, and holds a finalizer while
// any MCPServer or MCPRemoteProxy references the config.
package mcptoolconfig

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcptoolconfig"

// Controller reconciles MCPToolConfigs.
type Controller = workload.ConfigController[*thv1.MCPToolConfig]

// New builds the controller and registers its event handlers. The
// workload informers must carry the reference indexes
// (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	return workload.NewConfigController(d, Name, workload.ToolConfigs)
}
