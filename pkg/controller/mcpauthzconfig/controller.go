// Package mcpauthzconfig is the MCPAuthzConfig controller: the shared
// config controller (workload.ConfigController) bound to the
// MCPAuthzConfig declaration (workload.AuthzConfigs). It validates each
// config (the Cedar policies parse, the backend is one the runner has),
// publishes a hash of its spec (which rolls the proxies of its referrers),
// is the only writer of status.referencingWorkloads, and holds a finalizer
// while any MCPServer or MCPRemoteProxy references the config.
package mcpauthzconfig

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcpauthzconfig"

// Controller reconciles MCPAuthzConfigs.
type Controller = workload.ConfigController[*thv1.MCPAuthzConfig]

// New builds the controller and registers its event handlers. The
// workload informers must carry the reference indexes
// (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	return workload.NewConfigController(d, Name, workload.AuthzConfigs)
}
