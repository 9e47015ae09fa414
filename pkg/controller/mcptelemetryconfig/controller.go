// Package mcptelemetryconfig is the MCPTelemetryConfig controller: the
// shared config controller (workload.ConfigController) bound to the
// MCPTelemetryConfig declaration (workload.TelemetryConfigs). It validates
// each config (what the runner's exporter would refuse at start or on
// every export), publishes a hash of its spec, is the only writer of
// status.referencingWorkloads, and holds a finalizer while any MCPServer
// or MCPRemoteProxy references the config.
package mcptelemetryconfig

import (
	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// Name is the controller's name: its queue, its writer and the controller
// label of the metrics.
const Name = "mcptelemetryconfig"

// Controller reconciles MCPTelemetryConfigs.
type Controller = workload.ConfigController[*thv1.MCPTelemetryConfig]

// New builds the controller and registers its event handlers. The
// workload informers must carry the reference indexes
// (index.AddToInformers).
func New(d *framework.Deps) (*Controller, error) {
	return workload.NewConfigController(d, Name, workload.TelemetryConfigs)
}
