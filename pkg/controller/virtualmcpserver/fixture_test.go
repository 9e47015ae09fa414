package virtualmcpserver

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
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

// newVMCP returns a minimal valid anonymous VirtualMCPServer of testGroup
// with the server's defaults applied.
func newVMCP(name string, mut ...func(*thv1.VirtualMCPServer)) *thv1.VirtualMCPServer {
	v := &thv1.VirtualMCPServer{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindVirtualMCPServer},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNS, UID: k8stypes.UID("uid-" + name), Generation: 1, ResourceVersion: "1",
		},
		Spec: thv1.VirtualMCPServerSpec{
			IncomingAuth:    thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous},
			GroupRef:        thv1.GroupRef{Name: testGroup},
			ServiceType:     thv1.ServiceTypeClusterIP,
			SessionAffinity: thv1.SessionAffinityClientIP,
		},
	}
	for _, m := range mut {
		m(v)
	}
	return v
}

// withOIDC makes the server authenticate with the MCPOIDCConfig cfg.
func withOIDC(cfg string) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) {
		v.Spec.IncomingAuth = thv1.IncomingAuth{Type: thv1.IncomingAuthOIDC,
			OIDCConfigRef: &thv1.OIDCConfigReference{Name: cfg, Audience: "vmcp", Scopes: []string{"openid"}}}
	}
}

// withPodTemplate sets the raw podTemplateSpec.
func withPodTemplate(raw string) func(*thv1.VirtualMCPServer) {
	return func(v *thv1.VirtualMCPServer) { v.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(raw)} }
}

// newMember returns an MCPServer; group "" means no group.
func newMember(name, group string, mut ...func(*thv1.MCPServer)) *thv1.MCPServer {
	s := &thv1.MCPServer{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPServer},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: k8stypes.UID("srv-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: thv1.MCPServerSpec{Image: "ghcr.io/example/" + name + ":1", Transport: thv1.TransportStdio,
			ProxyMode: thv1.TransportStreamableHTTP, ProxyPort: 8080},
	}
	if group != "" {
		s.Spec.GroupRef = &thv1.GroupRef{Name: group}
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

func newOIDCConfig(name, caBundle string) *thv1.MCPOIDCConfig {
	return toolhivetest.NewOIDCConfig(testNS, name, true, caBundle, true)
}

// userVolumesTemplate covers the source types of the drift tests: a
// Secret, a ConfigMap with a key mapping, an EmptyDir with medium and size
// limit, and a projected volume.
const userVolumesTemplate = `{"spec":{
  "volumes":[
    {"name":"creds","secret":{"secretName":"creds-v1"}},
    {"name":"settings","configMap":{"name":"settings","items":[{"key":"a.yaml","path":"a.yaml"}]}},
    {"name":"scratch","emptyDir":{"sizeLimit":"1Gi"}},
    {"name":"bundle","projected":{"sources":[{"configMap":{"name":"ca"}},{"serviceAccountToken":{"audience":"vault","path":"token"}}]}}
  ],
  "containers":[{"name":"vmcp","volumeMounts":[
    {"name":"creds","mountPath":"/creds","readOnly":true},
    {"name":"settings","mountPath":"/settings"},
    {"name":"scratch","mountPath":"/scratch"},
    {"name":"bundle","mountPath":"/bundle"}
  ]},{"name":"sidecar","image":"busybox:1","volumeMounts":[{"name":"creds","mountPath":"/elsewhere"}]}]
}}`

// fullTemplate sets what the pod template can beyond volumes: scheduling,
// metadata, an init container, an env entry and resources of the vmcp
// container, and image pull secrets merged with spec.imagePullSecrets.
const fullTemplate = `{"metadata":{"labels":{"team":"a"},"annotations":{"note":"x"}},"spec":{
  "nodeSelector":{"disk":"ssd"},
  "tolerations":[{"key":"dedicated","operator":"Equal","value":"mcp","effect":"NoSchedule"}],
  "priorityClassName":"high",
  "imagePullSecrets":[{"name":"tpl-pull"}],
  "initContainers":[{"name":"init","image":"busybox:1","command":["true"]}],
  "containers":[{"name":"vmcp","env":[{"name":"EXTRA","value":"1"}],
    "resources":{"limits":{"memory":"256Mi"}}}]
}}`

// newRemoteMember returns an MCPRemoteProxy; group "" means no group.
func newRemoteMember(name, group string, mut ...func(*thv1.MCPRemoteProxy)) *thv1.MCPRemoteProxy {
	p := &thv1.MCPRemoteProxy{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPRemoteProxy},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: k8stypes.UID("rp-" + name), Generation: 1, ResourceVersion: "1"},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://mcp.example.com/mcp", Transport: thv1.TransportStreamableHTTP, ProxyPort: 8080},
	}
	if group != "" {
		p.Spec.GroupRef = &thv1.GroupRef{Name: group}
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

// withRedis sets Redis session storage with a password from a Secret.
func withRedis(v *thv1.VirtualMCPServer) {
	v.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379", DB: 2,
		KeyPrefix: "vmcp:", PasswordRef: &thv1.SecretKeyRef{Name: "redis", Key: "password"}}
}
