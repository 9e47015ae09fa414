package proxy

import (
	"encoding/json"
	"errors"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift/drifttest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// testNS is the namespace of the tests' workloads.
const testNS = "team-a"

var (
	defaultDeployment = drifttest.DefaultDeployment
	defaultService    = drifttest.DefaultService
)

func roundTrip[T any](obj *T) *T { return drifttest.RoundTrip(obj) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// newServer is a minimal valid MCPServer in testNS.
func newServer(name string, mut ...func(*thv1.MCPServer)) *thv1.MCPServer {
	return toolhivetest.NewMCPServer(testNS, name, mut...)
}

// newProxy is a minimal valid MCPRemoteProxy in testNS.
func newProxy(name string, mut ...func(*thv1.MCPRemoteProxy)) *thv1.MCPRemoteProxy {
	return toolhivetest.NewRemoteProxy(testNS, name, mut...)
}

// newOIDCConfig is a valid (or not) MCPOIDCConfig in testNS; an inline
// one has a client secret and the CA bundle ConfigMap "idp-ca".
func newOIDCConfig(name string, inline, valid bool) *thv1.MCPOIDCConfig {
	return toolhivetest.NewOIDCConfig(testNS, name, inline, "idp-ca", valid)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
