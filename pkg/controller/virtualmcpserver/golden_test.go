package virtualmcpserver

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// TestGolden records what build makes of every VirtualMCPServer of the
// golden manifests, byte for byte: config.yaml, authserver-config.yaml,
// every child, and the backends and outgoing auth conditions it reports.
func TestGolden(t *testing.T) {
	files := map[string][]byte{}
	for _, w := range workloadtest.GoldenWorkloads(t, thv1.KindVirtualMCPServer) {
		if w.Missing != "" {
			files[filepath.Join(w.Dir, "waits.txt")] = []byte(w.Missing + "\n")
			continue
		}
		d, err := build(inputs{Server: w.Obj.(*thv1.VirtualMCPServer), OIDC: w.OIDC, Backends: w.Members, Image: workloadtest.GoldenVMCPImage,
			Refs: configRefs{Authz: w.Authz, Telemetry: w.Telemetry, Tools: w.ToolsByName, ExtAuth: w.ExtAuthByName,
				CompositeTools: w.CompositeTools, MemberAuth: w.MemberAuth}})
		if err != nil {
			files[filepath.Join(w.Dir, "error.txt")] = workloadtest.GoldenError(err)
			continue
		}
		for _, key := range []string{naming.VMCPConfigKey, naming.VMCPAuthServerConfigKey} {
			if v, ok := d.Config.Data[key]; ok {
				files[filepath.Join(w.Dir, key)] = []byte(v)
			}
		}
		for _, o := range []runtime.Object{d.Config, d.ServiceAccount, d.Deployment, d.Service} {
			workloadtest.GoldenChild(t, files, w.Dir, o)
		}
		type condition struct {
			Type, Reason, Message string
			OK                    bool
		}
		report := struct {
			Backends   []string    `json:"backends"`
			Dropped    []string    `json:"dropped"`
			Conditions []condition `json:"conditions"`
		}{Backends: d.Backends, Dropped: d.Auth.Dropped}
		for _, c := range d.Auth.Conditions {
			report.Conditions = append(report.Conditions, condition(c))
		}
		files[filepath.Join(w.Dir, "report.yaml")] = workloadtest.GoldenYAML(t, report)
	}
	workloadtest.CheckGolden(t, files, thv1.KindVirtualMCPServer+"-*")
}
