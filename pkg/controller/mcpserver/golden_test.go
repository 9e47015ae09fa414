package mcpserver

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/render/proxy"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// TestGolden records what build makes of every MCPServer of the golden
// manifests, byte for byte.
func TestGolden(t *testing.T) {
	files := map[string][]byte{}
	for _, w := range workloadtest.GoldenWorkloads(t, thv1.KindMCPServer) {
		if w.Missing != "" {
			files[filepath.Join(w.Dir, "waits.txt")] = []byte(w.Missing + "\n")
			continue
		}
		d, err := proxy.BuildMCPServer(w.Obj.(*thv1.MCPServer), proxy.Input{OIDC: w.OIDC, Tools: w.Tools, Authz: w.Authz, ExtAuth: w.ExtAuth,
			Telemetry: w.Telemetry, Webhooks: w.Webhooks, AuthServer: w.AuthServer, RunnerImage: workloadtest.GoldenRunnerImage,
			RunnerClusterRole: rbac.Runners{}.WithDefaults().ProxyRunner})
		if err != nil {
			files[filepath.Join(w.Dir, "error.txt")] = workloadtest.GoldenError(err)
			continue
		}
		files[filepath.Join(w.Dir, schema.Key)] = []byte(d.RunConfig.Data[schema.Key])
		for _, o := range []runtime.Object{d.RunConfig, d.RunnerServiceAccount, d.RunnerRoleBinding, d.BackendServiceAccount, d.Deployment, d.Service} {
			workloadtest.GoldenChild(t, files, w.Dir, o)
		}
	}
	workloadtest.CheckGolden(t, files, thv1.KindMCPServer+"-*")
}
