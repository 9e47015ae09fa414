// Package mcpserver_test runs the MCPServer controller against a real
// kube-apiserver and etcd: server defaulting, the status subresource,
// optimistic locking and schema pruning are real here.
package mcpserver_test

import (
	"testing"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
