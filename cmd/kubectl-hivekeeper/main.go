// Command kubectl-hivekeeper is hivekeeper's kubectl plugin: with the
// binary on PATH, `kubectl hivekeeper <command>` runs it with kubectl's
// connection flags. Its commands (preflight, switch, migrate-storage)
// are pkg/plugin's; this is their entry point.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hivekeeper/hivekeeper/pkg/plugin"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := plugin.Execute(ctx, version, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
