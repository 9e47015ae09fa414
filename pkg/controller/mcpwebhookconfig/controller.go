// Package mcpwebhookconfig is the MCPWebhookConfig controller: the shared
// config controller (workload.ConfigController) bound to the
// MCPWebhookConfig declaration (workload.WebhookConfigs). It validates
// each config (what the runner would refuse when it builds its webhook
// clients, so a bad config is reported before any proxy starts with it),
// publishes a hash of its spec, is the only writer of
// status.referencingWorkloads, and holds a finalizer while any MCPServer
// references the config.
package mcpwebhookconfig

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcpwebhookconfig"

// Controller reconciles MCPWebhookConfigs.
type Controller = workload.ConfigController[*thv1.MCPWebhookConfig]

// New builds the controller and registers its event handlers. The
// workload informers must carry the reference indexes
// (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	return workload.NewConfigController(d, Name, workload.WebhookConfigs)
}
