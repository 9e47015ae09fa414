package virtualmcpserver

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

const (
	testNS    = "team-a"
	testGroup = "tools"
	testImage = "vmcp:test"
)

// fixture is the shared workload fixture with this controller on top.
type fixture struct {
	*workloadtest.Fixture
	c *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fixture: workloadtest.New(t, objs...)}
	c, err := New(f.Deps(framework.Config{VMCPImage: testImage}))
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

func (f *fixture) get(name string) *thv1.VirtualMCPServer {
	f.T.Helper()
	v, err := f.Toolhive.ToolhiveV1beta1().VirtualMCPServers(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return v
}

// update stores a changed copy of the VirtualMCPServer and refreshes the
// caches.
func (f *fixture) update(name string, mut func(*thv1.VirtualMCPServer)) {
	f.T.Helper()
	v := f.get(name).DeepCopy()
	mut(v)
	v.Generation++
	if _, err := f.Toolhive.ToolhiveV1beta1().VirtualMCPServers(testNS).Update(context.Background(), v, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	f.Refresh()
}

func newOIDCConfig(name, caBundle string) *thv1.MCPOIDCConfig {
	return toolhivetest.NewOIDCConfig(testNS, name, true, caBundle, true)
}

// The vMCP fixtures of toolhivetest, in testNS and testGroup.
func newVMCP(name string, mut ...func(*thv1.VirtualMCPServer)) *thv1.VirtualMCPServer {
	return toolhivetest.NewVirtualMCPServer(testNS, testGroup, name, mut...)
}

func newMember(name, group string, mut ...func(*thv1.MCPServer)) *thv1.MCPServer {
	return toolhivetest.NewMember(testNS, name, group, mut...)
}

func newRemoteMember(name, group string, mut ...func(*thv1.MCPRemoteProxy)) *thv1.MCPRemoteProxy {
	return toolhivetest.NewRemoteMember(testNS, name, group, mut...)
}

func newEntry(name, group string, mut ...func(*thv1.MCPServerEntry)) *thv1.MCPServerEntry {
	return toolhivetest.NewEntry(testNS, name, group, mut...)
}

func newExtAuth(name string, mut func(*thv1.MCPExternalAuthConfigSpec)) *thv1.MCPExternalAuthConfig {
	return toolhivetest.NewExternalAuthConfig(testNS, name, mut)
}

func newToolConfig(name string, filter ...string) *thv1.MCPToolConfig {
	return toolhivetest.NewToolConfig(testNS, name, filter...)
}

func refObjects() []runtime.Object { return toolhivetest.VMCPRefObjects(testNS) }

var (
	withOIDC              = toolhivetest.WithIncomingOIDC
	inline                = toolhivetest.WithInlineBackends
	withPodTemplate       = toolhivetest.WithVMCPPodTemplate
	withRedis             = toolhivetest.WithVMCPRedis
	withEntryExtras       = toolhivetest.WithEntryExtras
	withAuthRef           = toolhivetest.WithMemberAuthRef
	withRefs              = toolhivetest.WithVMCPRefs
	withAuthServer        = toolhivetest.WithVMCPAuthServer
	withCompositeToolRefs = toolhivetest.WithCompositeToolRefs
	headerInjection       = toolhivetest.HeaderInjection
	tokenExchange         = toolhivetest.TokenExchange
)

const (
	userVolumesTemplate = toolhivetest.VMCPUserVolumesTemplate
	fullTemplate        = toolhivetest.VMCPFullTemplate
	vmcpResource        = toolhivetest.VMCPResource
	authServerJSON      = toolhivetest.VMCPAuthServerJSON
)
