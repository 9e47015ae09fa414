// Package mcpoidcconfig is the MCPOIDCConfig controller: the shared config
// controller (workload.ConfigController) bound to the MCPOIDCConfig
// declaration (workload.OIDCConfigs), which carries the kind's
// validation. It validates each config, publishes a hash of its spec for
// the workloads that use it, is the only writer of
// status.referencingWorkloads, and holds a finalizer so that a config
// still in use cannot disappear from under its workloads.
package mcpoidcconfig

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcpoidcconfig"

// Controller reconciles MCPOIDCConfigs.
type Controller = workload.ConfigController[*thv1.MCPOIDCConfig]

// New builds the controller and registers its event handlers. The
// workload informers must carry the reference indexes
// (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	return workload.NewConfigController(d, Name, workload.OIDCConfigs)
}
