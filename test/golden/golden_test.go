// Package golden pins the bytes the translation layer produces for every
// workload of the conformance table's manifests and of examples/: the
// RunConfig JSON, config.yaml and authserver-config.yaml, every child
// object, and what a vMCP build reports of its backends. It runs the
// builders of pkg/toolhive/render on references resolved from the
// manifests, without an API server, and compares with testdata.
//
// A change of any byte fails here, naming the file. When the change is
// meant (a builder is made to write what ToolHive's operator writes), run
//
//	HIVEKEEPER_UPDATE_GOLDEN=1 go test ./test/golden/
//
// and review the diff of testdata.
package golden

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/embedding"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/proxy"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/registry"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/vmcp"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

func TestGolden(t *testing.T) {
	files := map[string][]byte{}
	runners := rbac.Runners{}.WithDefaults()
	// The recordings are of the translation at the default release
	// (--toolhive-release) with ToolHive's usage metrics off
	// (--toolhive-usage-metrics=false): no usage-metrics middleware, and
	// TOOLHIVE_USAGE_METRICS_ENABLED=false where the release passes the
	// setting on, rather than an installation id of the machine's.
	usage, rel := wiring.UsageMetrics{Disabled: true}, release.Newest()
	for _, w := range workloadsOf(t, thv1.KindMCPServer) {
		w.Proxy.UsageMetrics, w.Proxy.Release = usage, rel
		w.Proxy.RunnerImage, w.Proxy.RunnerClusterRole, w.Proxy.StdioRunnerClusterRole = runnerImage, runners.ProxyRunner, runners.StdioProxyRunner
		recordProxy(t, files, w, func() (*proxy.Output, error) { return proxy.BuildMCPServer(w.Obj.(*thv1.MCPServer), w.Proxy) })
	}
	for _, w := range workloadsOf(t, thv1.KindMCPRemoteProxy) {
		w.Proxy.UsageMetrics, w.Proxy.Release = usage, rel
		w.Proxy.RunnerImage, w.Proxy.RunnerClusterRole = runnerImage, runners.RemoteProxyRunner
		recordProxy(t, files, w, func() (*proxy.Output, error) { return proxy.BuildRemoteProxy(w.Obj.(*thv1.MCPRemoteProxy), w.Proxy) })
	}
	for _, w := range workloadsOf(t, thv1.KindVirtualMCPServer) {
		w.VMCP.UsageMetrics, w.VMCP.Release = usage, rel
		recordVMCP(t, files, w)
	}
	for _, w := range workloadsOf(t, thv1.KindEmbeddingServer) {
		d, err := embedding.Build(w.Obj.(*thv1.EmbeddingServer), nil, nil)
		recordChildren(t, files, w, err, func() []runtime.Object { return []runtime.Object{d.StatefulSet, d.Service} })
	}
	for _, w := range workloadsOf(t, thv1.KindMCPRegistry) {
		d, err := registry.Build(w.Obj.(*thv1.MCPRegistry), registry.Input{Image: registryAPIImage, ClusterRole: runners.RegistryAPI})
		recordChildren(t, files, w, err, func() []runtime.Object {
			return []runtime.Object{d.ConfigMap, d.ServiceAccount, d.RoleBinding, d.Deployment, d.Service}
		})
	}
	checkRecorded(t, files)
}

// recordChildren records the children of a kind that references nothing
// (an EmbeddingServer, an MCPRegistry), or its build error.
func recordChildren(t *testing.T, files map[string][]byte, w workloadCase, err error, children func() []runtime.Object) {
	if err != nil {
		files[filepath.Join(w.Dir, "error.txt")] = recordError(err)
		return
	}
	for _, o := range children() {
		recordChild(t, files, w.Dir, o)
	}
}

// recordProxy records a proxy's RunConfig and children.
func recordProxy(t *testing.T, files map[string][]byte, w workloadCase, build func() (*proxy.Output, error)) {
	if w.Missing != "" {
		files[filepath.Join(w.Dir, "waits.txt")] = []byte(w.Missing + "\n")
		return
	}
	d, err := build()
	if err != nil {
		files[filepath.Join(w.Dir, "error.txt")] = recordError(err)
		return
	}
	files[filepath.Join(w.Dir, schema.Key)] = []byte(d.RunConfig.Data[schema.Key])
	for _, o := range []runtime.Object{d.RunConfig, d.AuthzConfigMap, d.RunnerServiceAccount, d.RunnerRoleBinding, d.BackendServiceAccount, d.Deployment, d.Service} {
		recordChild(t, files, w.Dir, o)
	}
}

// recordVMCP records a vMCP's config.yaml, authserver-config.yaml,
// children, and the backends and outgoing auth conditions it reports.
func recordVMCP(t *testing.T, files map[string][]byte, w workloadCase) {
	if w.Missing != "" {
		files[filepath.Join(w.Dir, "waits.txt")] = []byte(w.Missing + "\n")
		return
	}
	w.VMCP.Image = vmcpImage
	runners := rbac.Runners{}.WithDefaults()
	w.VMCP.ClusterRoles = vmcp.ClusterRoles{Discovered: runners.VMCPDiscovered, Inline: runners.VMCPInline}
	d, err := vmcp.Build(w.Obj.(*thv1.VirtualMCPServer), w.VMCP)
	if err != nil {
		files[filepath.Join(w.Dir, "error.txt")] = recordError(err)
		return
	}
	for _, key := range []string{naming.VMCPConfigKey, naming.VMCPAuthServerConfigKey} {
		if v, ok := d.Config.Data[key]; ok {
			files[filepath.Join(w.Dir, key)] = []byte(v)
		}
	}
	for _, o := range []runtime.Object{d.Config, d.ServiceAccount, d.RoleBinding, d.Deployment, d.Service} {
		recordChild(t, files, w.Dir, o)
	}
	report := struct {
		Backends   []string             `json:"backends"`
		Dropped    []string             `json:"dropped"`
		Conditions []vmcp.AuthCondition `json:"conditions"`
	}{Backends: d.Backends, Dropped: d.Dropped, Conditions: d.AuthConditions}
	files[filepath.Join(w.Dir, "report.yaml")] = toYAML(t, report)
}
