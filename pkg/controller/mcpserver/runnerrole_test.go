package mcpserver

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
)

// Only a stdio server's runner may attach to its pod, as ToolHive v0.63.0's
// operator grants pods/attach (controllers/mcpserver_controller.go, its
// stdio RBAC rules): a stdio server's runner is bound to the stdio
// ClusterRole, another's to the proxy-runner one. A transport change
// replaces the binding (its roleRef is immutable): one delete locked to
// its UID, then one create.
func TestRunnerClusterRoleFollowsTheTransport(t *testing.T) {
	f := newFixture(t, newServer("fetch"))
	f.converge("fetch")
	roleRef := func() string {
		rb, err := f.kube.RbacV1().RoleBindings(testNS).Get(context.Background(), "fetch-proxy-runner", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rb.RoleRef.Name
	}
	if got := roleRef(); got != rbac.DefaultStdioProxyRunnerClusterRole {
		t.Fatalf("stdio server bound to %s", got)
	}
	s, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Get(context.Background(), "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Transport, s.Generation = thv1.TransportStreamableHTTP, s.Generation+1
	if _, err := f.th.ToolhiveV1beta1().MCPServers(testNS).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	var binding []string
	for range 4 {
		acts, err := f.sync("fetch")
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) == 0 {
			break
		}
		for _, a := range acts {
			if a.GetResource().Resource == "rolebindings" {
				binding = append(binding, a.GetVerb())
				if d, ok := a.(core.DeleteAction); ok && d.GetDeleteOptions().Preconditions == nil {
					t.Errorf("the binding's delete is not locked to its UID")
				}
			}
		}
		f.applyServerBehaviour()
		f.refresh()
	}
	if len(binding) != 2 || binding[0] != "delete" || binding[1] != "create" {
		t.Errorf("binding writes %v, want one delete, then one create", binding)
	}
	if got := roleRef(); got != rbac.DefaultProxyRunnerClusterRole {
		t.Errorf("streamable-http server bound to %s", got)
	}
}
