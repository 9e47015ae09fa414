// Package rbac declares the Kubernetes API permissions the hivekeeper
// process needs, as RBAC rules. The Helm chart's ClusterRole (or per-namespace
// Roles) and leader-election Role grant exactly these; tests compare the
// rendered chart with them, and check that the permissions the controllers
// grant to the proxy runners are a subset (RBAC escalation prevention: a
// Role can only grant what its creator holds).
package rbac

import (
	"slices"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
)

// ToolhiveGroup is the API group of the custom resources.
const ToolhiveGroup = "toolhive.stacklok.dev"

// ToolhiveResources are the custom resources hivekeeper reconciles.
var ToolhiveResources = []string{"mcpservers", "mcpoidcconfigs", "mcpremoteproxies", "virtualmcpservers", "mcpgroups"}

var crud = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

func withSuffix(resources []string, suffix string) []string {
	out := make([]string, len(resources))
	for i, r := range resources {
		out[i] = r + suffix
	}
	return out
}

// WorkloadRules are the permissions hivekeeper needs in every namespace it
// watches: granted by a ClusterRole when it watches all namespaces, else by a
// Role in each watched namespace.
func WorkloadRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Custom resources: watched, and spec/metadata patched with an
		// optimistic lock; never updated whole.
		{APIGroups: []string{ToolhiveGroup}, Resources: slices.Clone(ToolhiveResources), Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{ToolhiveGroup}, Resources: withSuffix(ToolhiveResources, "/status"), Verbs: []string{"patch", "update"}},
		// blockOwnerDeletion on a child needs update on the owner's
		// finalizers where OwnerReferencesPermissionEnforcement is on.
		{APIGroups: []string{ToolhiveGroup}, Resources: withSuffix(ToolhiveResources, "/finalizers"), Verbs: []string{"update"}},
		// Children.
		{APIGroups: []string{""}, Resources: []string{"configmaps", "serviceaccounts", "services"}, Verbs: slices.Clone(crud)},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: slices.Clone(crud)},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}, Verbs: slices.Clone(crud)},
		// Granted to the proxy runner; deleted on finalizer cleanup.
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: slices.Clone(crud)},
		// Immediate restart deletes the proxy pods.
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete", "deletecollection"}},
		// Granted to the proxy runner only.
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/attach"}, Verbs: []string{"get", "create"}},
		// Granted read-only to the MCPRemoteProxy runner.
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
		// Events about the custom resources, recorded in their namespace.
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// LeaderElectionRules are the permissions hivekeeper needs in its own
// namespace: its leader-election Lease (create cannot be limited to a name,
// reading and renewing are) and Events.
func LeaderElectionRules(leaseName string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{leaseName}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// Request is one API request as RBAC sees it.
type Request struct {
	Verb     string
	APIGroup string
	// Resource, with "/subresource" when there is one (e.g. "pods/log").
	Resource string
	// Name of the object; empty for list, watch, create and deletecollection.
	Name string
}

// Allows reports whether rules permit r, with RBAC's matching: "*" matches
// any verb, group or resource, "*/sub" any resource's subresource sub, and a
// rule with resourceNames matches only requests naming one of them.
func Allows(rules []rbacv1.PolicyRule, r Request) bool {
	for _, rule := range rules {
		if len(rule.NonResourceURLs) > 0 && len(rule.Resources) == 0 {
			continue
		}
		if !matches(rule.Verbs, r.Verb) || !matches(rule.APIGroups, r.APIGroup) {
			continue
		}
		if !slices.ContainsFunc(rule.Resources, func(res string) bool { return resourceMatches(res, r.Resource) }) {
			continue
		}
		if len(rule.ResourceNames) > 0 && !slices.Contains(rule.ResourceNames, r.Name) {
			continue
		}
		return true
	}
	return false
}

func matches(allowed []string, v string) bool {
	return slices.Contains(allowed, rbacv1.VerbAll) || slices.Contains(allowed, v)
}

func resourceMatches(rule, resource string) bool {
	if rule == rbacv1.ResourceAll || rule == resource {
		return true
	}
	// "*/scale" matches every resource's scale subresource.
	if len(rule) > 2 && rule[:2] == "*/" {
		for i := 0; i < len(resource); i++ {
			if resource[i] == '/' {
				return resource[i:] == rule[1:]
			}
		}
	}
	return false
}

// Expand flattens rules into one Request per verb, group, resource and
// name, sorted, so two rule lists can be compared as sets whatever their
// grouping. Rules naming no resource names yield requests with Name "".
func Expand(rules []rbacv1.PolicyRule) []Request {
	seen := map[Request]bool{}
	for _, rule := range rules {
		names := rule.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, v := range rule.Verbs {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, n := range names {
						seen[Request{Verb: v, APIGroup: g, Resource: res, Name: n}] = true
					}
				}
			}
		}
	}
	out := make([]Request, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.APIGroup != b.APIGroup {
			return a.APIGroup < b.APIGroup
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		if a.Verb != b.Verb {
			return a.Verb < b.Verb
		}
		return a.Name < b.Name
	})
	return out
}

// Covers reports which requests of granted are not allowed by holder: what
// a holder of holder would lack to grant granted. Empty means it can.
func Covers(holder, granted []rbacv1.PolicyRule) []Request {
	var missing []Request
	for _, r := range Expand(granted) {
		if !Allows(holder, r) {
			missing = append(missing, r)
		}
	}
	return missing
}
