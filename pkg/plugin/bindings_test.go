package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
// controls them, they bind a ClusterRole) are deleted, with
// preconditions, and created again at once, as they were but bound to
// ToolHive's Role of their name; one without such a Role (a workload
// ToolHive's operator never set up) is left as it is, and so are
// ToolHive's own (a Role) and other bindings of a ClusterRole. Afterwards
// one gone is reported, and one that binds a ClusterRole again is an
// error.
func TestReleaseRunnerBindings(t *testing.T) {
	ctx := context.Background()
	fetch := binding("fetch-proxy-runner", "ClusterRole", "hivekeeper-stdio-proxy-runner", "MCPServer")
	fetch.Labels = map[string]string{"toolhive": "true"}
	fetch.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: "fetch-proxy-runner", Namespace: "team-a"}}
	kube := k8sfake.NewClientset(fetch,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch-proxy-runner"}},
		binding("web-remote-proxy-runner", "ClusterRole", "hivekeeper-remote-proxy-runner", "MCPRemoteProxy"),
		binding("old-proxy-runner", "Role", "old-proxy-runner", "MCPServer"),
		binding("team-admins", "ClusterRole", "admin", ""),
	)
	kube.ClearActions()
	rebound, left, err := releaseRunnerBindings(ctx, kube, []string{"team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rebound, []string{"team-a/fetch-proxy-runner"}) || !slices.Equal(left, []string{"team-a/web-remote-proxy-runner"}) {
		t.Errorf("rebound %q, left %q", rebound, left)
	}
	var wrote []string
	for _, a := range kube.Actions() {
		switch a.GetVerb() {
		case "delete":
			d := a.(interface{ GetDeleteOptions() metav1.DeleteOptions })
			if pre := d.GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || pre.ResourceVersion == nil {
				t.Errorf("%s deleted without preconditions", a.(interface{ GetName() string }).GetName())
			}
			wrote = append(wrote, "delete "+a.(interface{ GetName() string }).GetName())
		case "create":
			wrote = append(wrote, "create "+a.(interface{ GetObject() runtime.Object }).GetObject().(*rbacv1.RoleBinding).Name)
		case "list", "get":
		default:
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if want := []string{"delete fetch-proxy-runner", "create fetch-proxy-runner"}; !slices.Equal(wrote, want) {
		t.Errorf("wrote %q, want %q", wrote, want)
	}
	got, err := kube.RbacV1().RoleBindings("team-a").Get(ctx, "fetch-proxy-runner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "fetch-proxy-runner"}) || !equalJSON(got.Subjects, fetch.Subjects) ||
		!equalJSON(got.OwnerReferences, fetch.OwnerReferences) || got.Labels["toolhive"] != "true" {
		t.Errorf("fetch's binding again: %+v", got)
	}

	if missing, err := runnerBindingsBack(ctx, kube, rebound); err != nil || len(missing) != 0 {
		t.Errorf("missing %q, %v", missing, err)
	}
	if err := kube.RbacV1().RoleBindings("team-a").Delete(ctx, "fetch-proxy-runner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if missing, err := runnerBindingsBack(ctx, kube, rebound); err != nil || !slices.Equal(missing, rebound) {
		t.Errorf("gone: missing %q, %v", missing, err)
	}
	if _, err := kube.RbacV1().RoleBindings("team-a").Create(ctx, binding("fetch-proxy-runner", "ClusterRole", "hivekeeper-stdio-proxy-runner", "MCPServer"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := runnerBindingsBack(ctx, kube, rebound); err == nil || !strings.Contains(err.Error(), "team-a/fetch-proxy-runner binds ClusterRole hivekeeper-stdio-proxy-runner") {
		t.Errorf("a ClusterRole bound again: %v", err)
	}
}
