package mcpserver

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift/drifttest"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

const testNS = "team-a"

// gvk is the owner kind of every child.
var gvk = thv1.SchemeGroupVersion.WithKind(thv1.KindMCPServer)

var testNow = toolhivetest.Now

// fixture is the shared workload fixture (fake clientsets, informer
// indexers seeded directly, exact action assertions) with an MCPServer
// controller built on it.
type fixture struct {
	*workloadtest.Fixture
	t        *testing.T
	kube     *k8sfake.Clientset
	th       *thfake.Clientset
	recorder *record.FakeRecorder
	c        *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	wf := workloadtest.New(t, objs...)
	c, err := New(wf.Deps(framework.Config{RunnerImage: "runner:test"}))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{Fixture: wf, t: t, kube: wf.Kube, th: wf.Toolhive, recorder: wf.Recorder, c: c}
	f.Refresh()
	return f
}

func (f *fixture) refresh()              { f.Refresh() }
func (f *fixture) writes() []core.Action { return f.Writes() }
func (f *fixture) applyServerBehaviour() { f.ApplyServerBehaviour() }
func (f *fixture) syncErr(name string) error {
	return f.c.sync(context.Background(), cache.NewObjectName(testNS, name))
}

// sync runs one sync and returns the write actions it sent.
func (f *fixture) sync(name string) ([]core.Action, error) {
	f.t.Helper()
	err := f.syncErr(name)
	return f.Writes(), err
}

// converge syncs until nothing is written, applying the API server's
// behaviour between rounds.
func (f *fixture) converge(name string) {
	f.t.Helper()
	f.Converge(func() error { return f.syncErr(name) })
}

var (
	describe          = workloadtest.Describe
	defaultDeployment = drifttest.DefaultDeployment
	defaultService    = drifttest.DefaultService
)

func roundTrip[T any](obj *T) *T { return drifttest.RoundTrip(obj) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// newServer returns a minimal valid MCPServer with the finalizer already
// present and the server's defaults applied.
func newServer(name string, mut ...func(*thv1.MCPServer)) *thv1.MCPServer {
	return toolhivetest.NewMCPServer(testNS, name, mut...)
}

// newOIDCConfig is an MCPOIDCConfig in the test namespace; an inline one
// has a client secret and the CA bundle ConfigMap "idp-ca".
func newOIDCConfig(name string, inline bool, valid bool) *thv1.MCPOIDCConfig {
	return toolhivetest.NewOIDCConfig(testNS, name, inline, "idp-ca", valid)
}
