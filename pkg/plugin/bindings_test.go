package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// binding is a RoleBinding in team-a of role (kind/name), controlled by
// the ToolHive kind owner when it is not empty.
func binding(name, roleKind, role, owner string) *rbacv1.RoleBinding {
	b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: roleKind, Name: role}}
	if owner != "" {
		b.OwnerReferences = []metav1.OwnerReference{{APIVersion: thv1.SchemeGroupVersion.String(), Kind: owner, Name: "fetch", UID: "uid-owner", Controller: ptr.To(true)}}
	}
	return b
}

// Going back, the runner bindings hivekeeper wrote (a ToolHive resource
// controls them, they bind a ClusterRole) are deleted, with preconditions,
// and nothing else: ToolHive's own (a Role) and other bindings of a
// ClusterRole stay. Afterwards one ToolHive's operator did not create
// again is reported, and one that binds a ClusterRole again is an error.
func TestReleaseRunnerBindings(t *testing.T) {
	ctx := context.Background()
	kube := k8sfake.NewClientset(
		binding("fetch-proxy-runner", "ClusterRole", "hivekeeper-stdio-proxy-runner", "MCPServer"),
		binding("web-remote-proxy-runner", "ClusterRole", "hivekeeper-remote-proxy-runner", "MCPRemoteProxy"),
		binding("old-proxy-runner", "Role", "old-proxy-runner", "MCPServer"),
		binding("team-admins", "ClusterRole", "admin", ""),
	)
	kube.ClearActions()
	released, err := releaseRunnerBindings(ctx, kube, []string{"team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"team-a/fetch-proxy-runner", "team-a/web-remote-proxy-runner"}; !slices.Equal(released, want) {
		t.Errorf("released %q, want %q", released, want)
	}
	var deleted []string
	for _, a := range kube.Actions() {
		if a.GetVerb() == "delete" {
			d := a.(interface{ GetDeleteOptions() metav1.DeleteOptions })
			if pre := d.GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || pre.ResourceVersion == nil {
				t.Errorf("%s deleted without preconditions", a.(interface{ GetName() string }).GetName())
			}
			deleted = append(deleted, a.(interface{ GetName() string }).GetName())
		} else if a.GetVerb() != "list" {
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if want := []string{"fetch-proxy-runner", "web-remote-proxy-runner"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %q, want %q", deleted, want)
	}

	// ToolHive's operator bound fetch's runner to its Role again; the
	// remote proxy's binding is not back.
	if _, err := kube.RbacV1().RoleBindings("team-a").Create(ctx, binding("fetch-proxy-runner", "Role", "fetch-proxy-runner", "MCPServer"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	missing, err := runnerBindingsBack(ctx, kube, released)
	if err != nil || !slices.Equal(missing, []string{"team-a/web-remote-proxy-runner"}) {
		t.Errorf("missing %q, %v", missing, err)
	}
	if _, err := kube.RbacV1().RoleBindings("team-a").Create(ctx, binding("web-remote-proxy-runner", "ClusterRole", "hivekeeper-remote-proxy-runner", "MCPRemoteProxy"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := runnerBindingsBack(ctx, kube, released); err == nil || !strings.Contains(err.Error(), "team-a/web-remote-proxy-runner binds ClusterRole hivekeeper-remote-proxy-runner") {
		t.Errorf("a ClusterRole bound again: %v", err)
	}
}
