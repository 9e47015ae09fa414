package rbac_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
)

// The controller creates Roles for the proxy runners; the API server accepts
// them only if the controller holds every permission they grant.
func TestWorkloadRulesCoverRunnerRoles(t *testing.T) {
	for name, rules := range map[string][]rbacv1.PolicyRule{
		"proxy runner":        workload.ProxyRunnerRules(),
		"remote proxy runner": workload.RemoteProxyRunnerRules(),
	} {
		if missing := rbac.Covers(rbac.WorkloadRules(), rules); len(missing) > 0 {
			t.Errorf("hivekeeper cannot grant the %s Role, it lacks %+v", name, missing)
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
	rules := rbac.WorkloadRules()
	for _, r := range rbac.Expand(rules) {
		if r.Verb == rbacv1.VerbAll || r.APIGroup == rbacv1.APIGroupAll || r.Resource == rbacv1.ResourceAll {
			t.Errorf("wildcard in %+v", r)
		}
	}
	for _, denied := range []rbac.Request{
		{Verb: "create", Resource: "secrets"},
		{Verb: "update", Resource: "secrets"},
		{Verb: "create", Resource: "pods"},
		{Verb: "create", Resource: "pods/exec"},
		{Verb: "update", APIGroup: rbac.ToolhiveGroup, Resource: "mcpservers"},
		{Verb: "create", APIGroup: rbac.ToolhiveGroup, Resource: "mcpservers"},
		{Verb: "delete", APIGroup: rbac.ToolhiveGroup, Resource: "mcpservers"},
		{Verb: "bind", APIGroup: "rbac.authorization.k8s.io", Resource: "roles"},
		{Verb: "escalate", APIGroup: "rbac.authorization.k8s.io", Resource: "roles"},
		{Verb: "create", APIGroup: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "list", Resource: "nodes"},
		{Verb: "list", Resource: "namespaces"},
		{Verb: "create", Resource: "serviceaccounts/token"},
	} {
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
