package vmcp

import (
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

const (
	testNS    = "team-a"
	testGroup = "tools"
	testImage = "vmcp:test"
)

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

func newOIDCConfig(name, caBundle string) *thv1.MCPOIDCConfig {
	return toolhivetest.NewOIDCConfig(testNS, name, true, caBundle, true)
}

func refObjects() []runtime.Object { return toolhivetest.VMCPRefObjects(testNS) }

var (
	withOIDC        = toolhivetest.WithIncomingOIDC
	withPodTemplate = toolhivetest.WithVMCPPodTemplate
	withRedis       = toolhivetest.WithVMCPRedis
	withEntryExtras = toolhivetest.WithEntryExtras
	withAuthRef     = toolhivetest.WithMemberAuthRef
	withRefs        = toolhivetest.WithVMCPRefs
	withAuthServer  = toolhivetest.WithVMCPAuthServer
	headerInjection = toolhivetest.HeaderInjection
)

const (
	userVolumesTemplate = toolhivetest.VMCPUserVolumesTemplate
	fullTemplate        = toolhivetest.VMCPFullTemplate
	authServerJSON      = toolhivetest.VMCPAuthServerJSON
)
