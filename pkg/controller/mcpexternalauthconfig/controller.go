// Package mcpexternalauthconfig is the MCPExternalAuthConfig controller:
// the shared config controller (workload.ConfigController) bound to the
// MCPExternalAuthConfig declaration (workload.ExternalAuthConfigs). It
// validates each config (what the schema cannot: URLs, header names),
// publishes a hash of its spec (which rolls the proxies of its
// referrers), is the only writer of status.referencingWorkloads, and holds
// a finalizer while any MCPServer or MCPRemoteProxy references the config.
package mcpexternalauthconfig

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcpexternalauthconfig"

// Controller reconciles MCPExternalAuthConfigs.
type Controller = workload.ConfigController[*thv1.MCPExternalAuthConfig]

// New builds the controller and registers its event handlers. The
// workload informers must carry the reference indexes
// (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	return workload.NewConfigController(d, Name, workload.ExternalAuthConfigs)
}
