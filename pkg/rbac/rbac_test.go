package rbac_test

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hivekeeper/hivekeeper/pkg/rbac"
)

// The controller binds the runner ClusterRoles and nothing else: bind is
// limited by name, so it cannot hand out cluster-admin or any other role.
func TestWorkloadRulesBindOnlyTheRunnerClusterRoles(t *testing.T) {
	runners := rbac.Runners{ProxyRunner: "rel-proxy-runner", StdioProxyRunner: "rel-stdio-proxy-runner", RemoteProxyRunner: "rel-remote-proxy-runner",
		RegistryAPI: "rel-registry-api", VMCPDiscovered: "rel-vmcp-discovered", VMCPInline: "rel-vmcp-inline"}
	rules := rbac.WorkloadRules(runners)
	for _, name := range runners.WithDefaults().Names() {
		if !rbac.Allows(rules, rbac.Request{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "clusterroles", Name: name}) {
			t.Errorf("cannot bind %s", name)
		}
	}
	for _, denied := range []rbac.Request{
		{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "clusterroles", Name: rbac.DefaultProxyRunnerClusterRole},
		{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "clusterroles"},
		{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "roles", Name: runners.ProxyRunner},
		{Verb: "escalate", APIGroup: rbacv1.GroupName, Resource: "clusterroles", Name: runners.ProxyRunner},
		{Verb: "get", APIGroup: rbacv1.GroupName, Resource: "clusterroles", Name: runners.ProxyRunner},
	} {
		if rbac.Allows(rules, denied) {
			t.Errorf("WorkloadRules allow %+v", denied)
		}
	}
}

// The controller holds none of the permissions it hands to the runners
// (binding is what lets it grant them), and the runners get exactly the
// calls ToolHive's proxy runner makes.
func TestRunnerPermissionsAreNotTheControllers(t *testing.T) {
	controllerRules := rbac.WorkloadRules(rbac.DefaultRunners())
	for _, r := range rbac.Expand(rbac.StdioProxyRunnerRules()) {
		// Services and StatefulSets (an EmbeddingServer's) are the
		// controller's own children as well; it lists pods too, to watch
		// the MCPRemoteProxies' proxy pods.
		ownUse := r.Resource == "services" || r.Resource == "statefulsets" || r == rbac.Request{Verb: "list", Resource: "pods"}
		if !ownUse && rbac.Allows(controllerRules, r) {
			t.Errorf("the controller holds the runner's %+v", r)
		}
	}
	if n := len(rbac.Expand(rbac.StdioProxyRunnerRules())); n != 10 {
		t.Errorf("stdio proxy runner rules expand to %d requests, want the 10 ToolHive's runner makes: %+v", n, rbac.Expand(rbac.StdioProxyRunnerRules()))
	}
	// Only a stdio server's runner attaches (ToolHive v0.63.0's operator).
	attach := rbac.Request{Verb: "create", Resource: "pods/attach"}
	if rbac.Allows(rbac.ProxyRunnerRules(), attach) || !rbac.Allows(rbac.StdioProxyRunnerRules(), attach) {
		t.Errorf("pods/attach: the stdio runner's role and only it must allow it")
	}
	if rules := rbac.RemoteProxyRunnerRules(); rules == nil || len(rules) != 0 {
		t.Errorf("remote proxy runner rules = %#v, want an empty, non-nil list", rules)
	}
	// The registry API's rules are granted by binding, never held.
	for _, r := range rbac.Expand(rbac.RegistryAPIRules()) {
		ownUse := r.Resource == "services" || r.Resource == "configmaps" ||
			(r.APIGroup == rbac.ToolhiveGroup && slices.Contains([]string{"get", "list", "watch"}, r.Verb))
		if !ownUse && rbac.Allows(controllerRules, r) {
			t.Errorf("the controller holds the registry API's %+v", r)
		}
	}
	if n := len(rbac.Expand(rbac.RegistryAPIRules())); n != 34 {
		t.Errorf("registry API rules expand to %d requests, want ToolHive's 34", n)
	}
	// What vmcp reads to discover the members (Secrets among them) the
	// controller holds none of; it reads the ToolHive kinds and
	// ConfigMaps for its own syncs.
	for _, r := range rbac.Expand(rbac.VMCPDiscoveredRules()) {
		ownUse := r.APIGroup == rbac.ToolhiveGroup && !strings.HasSuffix(r.Resource, "/status") || r.Resource == "configmaps"
		if !ownUse && rbac.Allows(controllerRules, r) {
			t.Errorf("the controller holds vmcp's %+v", r)
		}
	}
}

func TestAllows(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"*/scale"}, Verbs: []string{"update"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"mine"}, Verbs: []string{"*"}},
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	}
	cases := []struct {
		r    rbac.Request
		want bool
	}{
		{rbac.Request{Verb: "get", Resource: "pods"}, true},
		{rbac.Request{Verb: "get", Resource: "pods/log"}, true},
		{rbac.Request{Verb: "get", Resource: "pods/exec"}, false},
		{rbac.Request{Verb: "list", Resource: "pods"}, false},
		{rbac.Request{Verb: "get", APIGroup: "apps", Resource: "pods"}, false},
		{rbac.Request{Verb: "update", APIGroup: "apps", Resource: "deployments/scale"}, true},
		{rbac.Request{Verb: "update", APIGroup: "apps", Resource: "deployments"}, false},
		{rbac.Request{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Name: "mine"}, true},
		{rbac.Request{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Name: "theirs"}, false},
		{rbac.Request{Verb: "create", APIGroup: "coordination.k8s.io", Resource: "leases"}, false},
	}
	for _, c := range cases {
		if got := rbac.Allows(rules, c.r); got != c.want {
			t.Errorf("Allows(%+v) = %v, want %v", c.r, got, c.want)
		}
	}
}

func TestWorkloadRulesAreLeastPrivilege(t *testing.T) {
	rules := rbac.WorkloadRules(rbac.DefaultRunners())
	for _, r := range rbac.Expand(rules) {
		if r.Verb == rbacv1.VerbAll || r.APIGroup == rbacv1.APIGroupAll || r.Resource == rbacv1.ResourceAll {
			t.Errorf("wildcard in %+v", r)
		}
	}
	for _, denied := range rbac.NeverAllowed {
		if rbac.Allows(rules, denied) {
			t.Errorf("WorkloadRules allow %+v", denied)
		}
	}
}

func TestExpandIsASet(t *testing.T) {
	a := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list"}}}
	b := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "get", "get"}},
	}
	ea, eb := rbac.Expand(a), rbac.Expand(b)
	if len(ea) != 4 || len(ea) != len(eb) {
		t.Fatalf("Expand: %v vs %v", ea, eb)
	}
	for i := range ea {
		if ea[i] != eb[i] {
			t.Fatalf("Expand differs at %d: %v vs %v", i, ea[i], eb[i])
		}
	}
}
