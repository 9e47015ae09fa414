package mcpremoteproxy

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

const testNS = "team-a"

// fixture is the shared workload fixture with this controller on top.
type fixture struct {
	*workloadtest.Fixture
	c *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fixture: workloadtest.New(t, objs...)}
	c, err := New(f.Deps(framework.Config{RunnerImage: "runner:test"}))
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.Refresh()
	return f
}

// sync runs one sync and returns the write actions it sent.
func (f *fixture) sync(name string) ([]core.Action, error) {
	f.T.Helper()
	err := f.c.sync(context.Background(), cache.NewObjectName(testNS, name))
	return f.Writes(), err
}

func (f *fixture) converge(name string) {
	f.T.Helper()
	f.Converge(func() error { _, err := f.sync(name); return err })
}

func (f *fixture) get(name string) *thv1.MCPRemoteProxy {
	f.T.Helper()
	p, err := f.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return p
}

// update stores a changed copy of the MCPRemoteProxy and refreshes the
// caches.
func (f *fixture) update(name string, mut func(*thv1.MCPRemoteProxy)) {
	f.T.Helper()
	p := f.get(name).DeepCopy()
	mut(p)
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(testNS).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	f.Refresh()
}

// newProxy returns a minimal valid MCPRemoteProxy with the server's
// defaults applied.
func newProxy(name string, mut ...func(*thv1.MCPRemoteProxy)) *thv1.MCPRemoteProxy {
	return toolhivetest.NewRemoteProxy(testNS, name, mut...)
}

func newOIDCConfig(name string, inline, valid bool) *thv1.MCPOIDCConfig {
	return toolhivetest.NewOIDCConfig(testNS, name, inline, "idp-ca", valid)
}
