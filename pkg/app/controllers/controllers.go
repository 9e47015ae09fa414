// Package controllers registers every hivekeeper controller with pkg/app.
// Importing it is what makes a binary or a test run the full set.
package controllers

import (
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpoidcconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
)

func init() {
	app.Register(mcpoidcconfig.ControllerName, mcpoidcconfig.New)
	app.Register(mcpserver.Name, mcpserver.Register)
}
