package mcpserver

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// The runner applies the podTemplateSpec to the MCP server's pod with the
// permissions hivekeeper bound to it, so a template that reaches the node
// is refused whatever the admission policy says: the status says so, one
// Warning event names the field, no child is written, and the refusal is
// not retried.
func TestPodTemplateMayNotReachTheNode(t *testing.T) {
	for _, tc := range workloadtest.RefusedPodTemplates {
		t.Run(tc.Name, func(t *testing.T) {
			f := newFixture(t, newServer("fetch"))
			f.converge("fetch")
			f.Events()
			ctx := context.Background()
			s, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(tc.Template)}
			if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.refresh()
			acts, err := f.sync("fetch")
			if err != nil {
				t.Fatalf("a refusal is not retried: %v", err)
			}
			got, _ := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(ctx, "fetch", metav1.GetOptions{})
			f.AssertRefusedPod(t, acts, "mcpservers", got.Status.Conditions, thv1.ConditionPodTemplateValid, thv1.ReasonPodSecurityNotAllowed, tc.Field)
			if got.Status.Phase != thv1.MCPServerPhaseFailed {
				t.Errorf("phase %s", got.Status.Phase)
			}
			f.refresh()
			acts, _ = f.sync("fetch")
			assertActions(t, acts)
		})
	}
}
