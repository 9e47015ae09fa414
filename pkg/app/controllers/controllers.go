// Package controllers registers every hivekeeper controller with pkg/app.
// Importing it is what makes a binary or a test run the full set.
package controllers

import (
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpoidcconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpremoteproxy"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpserver"
)

func init() {
	app.Register(mcpgroup.Name, mcpgroup.NewFromDeps)
	app.Register(mcpoidcconfig.ControllerName, mcpoidcconfig.New)
	app.Register(mcpserver.Name, mcpserver.Register)
	app.Register(mcpremoteproxy.Name, mcpremoteproxy.Register)
	app.Register(virtualmcpserver.Name, virtualmcpserver.Register)
}
