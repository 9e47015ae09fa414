// Package rbac declares the Kubernetes API permissions of the hivekeeper
// process and of the proxy runners it deploys, as RBAC rules. The Helm
// chart's ClusterRole (or per-namespace Roles), leader-election Role and
// runner ClusterRoles grant exactly these; tests compare the rendered chart
// with them, and the integration test harness installs the runner
// ClusterRoles from here where there is no chart.
//
// The controller never holds what it hands to the runners: it binds the
// runner ClusterRoles, which the chart pre-creates, with RoleBindings, and
// the API server lets it do so because it holds the "bind" verb on exactly
// those ClusterRoles (RBAC escalation prevention otherwise requires the
// creator of a binding to hold every permission the bound role grants).
package rbac

import (
	"cmp"
	"slices"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ToolhiveGroup is the API group of the custom resources.
const ToolhiveGroup = "toolhive.stacklok.dev"

// ToolhiveResources are the custom resources hivekeeper reconciles.
var ToolhiveResources = []string{"mcpservers", "mcpoidcconfigs", "mcpremoteproxies", "virtualmcpservers", "mcpgroups", "mcptoolconfigs", "mcpauthzconfigs", "mcpexternalauthconfigs", "mcptelemetryconfigs", "mcpwebhookconfigs", "mcpserverentries", "virtualmcpcompositetooldefinitions", "embeddingservers", "mcpregistries"}

// Default names of the runner ClusterRoles: what the chart creates for the
// release name "hivekeeper", and what the controller binds unless told
// otherwise (--proxy-runner-cluster-role,
// --stdio-proxy-runner-cluster-role, --remote-proxy-runner-cluster-role,
// --registry-api-cluster-role, --vmcp-discovered-cluster-role,
// --vmcp-inline-cluster-role).
const (
	DefaultProxyRunnerClusterRole       = "hivekeeper-proxy-runner"
	DefaultStdioProxyRunnerClusterRole  = "hivekeeper-stdio-proxy-runner"
	DefaultRemoteProxyRunnerClusterRole = "hivekeeper-remote-proxy-runner"
	DefaultRegistryAPIClusterRole       = "hivekeeper-registry-api"
	DefaultVMCPDiscoveredClusterRole    = "hivekeeper-vmcp-discovered"
	DefaultVMCPInlineClusterRole        = "hivekeeper-vmcp-inline"
)

// Runners names the ClusterRoles the controller binds to the ServiceAccounts
// of what it deploys that calls the Kubernetes API: the proxy runners, the
// vMCPs and an MCPRegistry's registry API.
type Runners struct {
	// ProxyRunner is bound to the <name>-proxy-runner of each MCPServer
	// whose transport is sse or streamable-http.
	ProxyRunner string
	// StdioProxyRunner is bound to it instead for a stdio MCPServer: the
	// runner attaches to the server's stdin and stdout.
	StdioProxyRunner string
	// RemoteProxyRunner is bound to each MCPRemoteProxy's
	// <name>-remote-proxy-runner.
	RemoteProxyRunner string
	// RegistryAPI is bound to each MCPRegistry's <name>-registry-api.
	RegistryAPI string
	// VMCPDiscovered is bound to the <name>-vmcp of each VirtualMCPServer
	// whose vmcp discovers the group's members (outgoingAuth.source
	// discovered), VMCPInline to the others'.
	VMCPDiscovered, VMCPInline string
}

// DefaultRunners are the default runner ClusterRole names.
func DefaultRunners() Runners {
	return Runners{ProxyRunner: DefaultProxyRunnerClusterRole, StdioProxyRunner: DefaultStdioProxyRunnerClusterRole,
		RemoteProxyRunner: DefaultRemoteProxyRunnerClusterRole, RegistryAPI: DefaultRegistryAPIClusterRole,
		VMCPDiscovered: DefaultVMCPDiscoveredClusterRole, VMCPInline: DefaultVMCPInlineClusterRole}
}

// WithDefaults fills the names left empty with their defaults.
func (r Runners) WithDefaults() Runners {
	d := DefaultRunners()
	r.ProxyRunner = cmp.Or(r.ProxyRunner, d.ProxyRunner)
	r.StdioProxyRunner = cmp.Or(r.StdioProxyRunner, d.StdioProxyRunner)
	r.RemoteProxyRunner = cmp.Or(r.RemoteProxyRunner, d.RemoteProxyRunner)
	r.RegistryAPI = cmp.Or(r.RegistryAPI, d.RegistryAPI)
	r.VMCPDiscovered = cmp.Or(r.VMCPDiscovered, d.VMCPDiscovered)
	r.VMCPInline = cmp.Or(r.VMCPInline, d.VMCPInline)
	return r
}

// Names are the names of the ClusterRoles the controller binds, the only
// ones it may bind (those named).
func (r Runners) Names() []string {
	return []string{r.ProxyRunner, r.StdioProxyRunner, r.RemoteProxyRunner, r.RegistryAPI, r.VMCPDiscovered, r.VMCPInline}
}

// ClusterRoles are the runner ClusterRoles with their rules, as the chart
// renders them.
func (r Runners) ClusterRoles() []*rbacv1.ClusterRole {
	return []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: r.ProxyRunner}, Rules: ProxyRunnerRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: r.StdioProxyRunner}, Rules: StdioProxyRunnerRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: r.RemoteProxyRunner}, Rules: RemoteProxyRunnerRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: r.RegistryAPI}, Rules: RegistryAPIRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: r.VMCPDiscovered}, Rules: VMCPDiscoveredRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: r.VMCPInline}, Rules: VMCPInlineRules()},
	}
}

// WorkloadRules are the permissions hivekeeper needs in every namespace it
// watches: granted by a ClusterRole when it watches all namespaces, else by a
// Role in each watched namespace. runners names the only ClusterRoles it may
// bind.
func WorkloadRules(runners Runners) []rbacv1.PolicyRule {
	runners = runners.WithDefaults()
	// get/list/watch feed the informers; create, patch and delete are the
	// only writes (children are never updated whole).
	children := []string{"get", "list", "watch", "create", "patch", "delete"}
	return []rbacv1.PolicyRule{
		// Custom resources: watched, and spec/metadata patched with an
		// optimistic lock; never updated whole.
		{APIGroups: []string{ToolhiveGroup}, Resources: slices.Clone(ToolhiveResources), Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{ToolhiveGroup}, Resources: withSuffix(ToolhiveResources, "/status"), Verbs: []string{"patch"}},
		// blockOwnerDeletion on a child needs update on the owner's
		// finalizers where OwnerReferencesPermissionEnforcement is on.
		{APIGroups: []string{ToolhiveGroup}, Resources: withSuffix(ToolhiveResources, "/finalizers"), Verbs: []string{"update"}},
		// Children. Services also covers the finalizer's deletion of the
		// Services the proxy runner created.
		{APIGroups: []string{""}, Resources: []string{"configmaps", "serviceaccounts", "services"}, Verbs: slices.Clone(children)},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: slices.Clone(children)},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: slices.Clone(children)},
		// The runner, vMCP and registry API RoleBindings reference these
		// ClusterRoles, and only these: bind is what lets a RoleBinding
		// grant a role its creator does not hold itself. A name left empty
		// is its default: an empty list of names would allow binding every
		// role.
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: runners.WithDefaults().Names(), Verbs: []string{"bind"}},
		// A vMCP's session HMAC key is created once, where it is missing
		// (<name>-hmac-secret, as ToolHive's operator names it). Create
		// lets the controller write a Secret, never read one: it learns
		// that the key exists from the 409 of a second create.
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		// An EmbeddingServer's StatefulSet; the MCPServer finalizer also
		// reads, then deletes the StatefulSet the proxy runner created.
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: slices.Clone(children)},
		// An immediate restart deletes the proxy pods in one request; the
		// proxy pods and the vMCPs' pods are watched (by label, cached
		// without their spec) for the phase, readiness and containers'
		// states their status reports, as ToolHive v0.63.0's operator
		// reports them. Never get: no single pod is read.
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "deletecollection"}},
		// Events about the custom resources, recorded in their namespace.
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// ProxyRunnerRules are what ToolHive's proxy runner (thv-proxyrunner, at the
// release pinned in hack/versions.env) calls in its namespace to run an
// MCPServer, read from its source (pkg/container/kubernetes):
//   - statefulsets: get (the existing one, and workload info), create and
//     patch (server-side apply, which creates the object when missing and
//     is then authorized as create too), watch (waiting for readiness);
//   - services: get (workload info), create and patch (server-side apply of
//     the headless and the MCP Service);
//   - pods: list (the pod to attach to, read logs of, or describe);
//   - pods/log: get (the monitor reads the last lines when the server exits).
//
// Nothing else: it never lists or updates StatefulSets, never deletes one
// (removal is the finalizer's), and reads its RunConfig from the mounted
// ConfigMap file, not the API. A stdio server's runner also attaches
// (StdioProxyRunnerRules).
func ProxyRunnerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "watch", "create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	}
}

// StdioProxyRunnerRules are ProxyRunnerRules and pods/attach: create (SPDY
// attach, a POST) to the server's stdin and stdout. ToolHive's operator
// grants the attach to stdio servers' runners only since v0.63.0, last in
// their Role.
func StdioProxyRunnerRules() []rbacv1.PolicyRule {
	return append(ProxyRunnerRules(), rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/attach"}, Verbs: []string{"create"}})
}

// VMCPDiscoveredRules are what ToolHive's vmcp (at the release pinned in
// hack/versions.env) calls in its namespace when it discovers its group's
// members itself (outgoingAuth.source discovered), read from its source
// (pkg/vmcp/cli, pkg/vmcp/k8s, pkg/vmcp/workloads, pkg/groups,
// pkg/vmcp/status):
//   - mcpservers, mcpremoteproxies, mcpserverentries,
//     mcpexternalauthconfigs: get at start (a direct client), list and
//     watch after (the informers of its backend watcher);
//   - configmaps (an entry's CA bundle) and secrets (a member's token
//     exchange client secret or header value): the same;
//   - mcpgroups: get (that its group exists, at start);
//   - virtualmcpservers: get, and virtualmcpservers/status: update (its
//     status reporter writes status.runtime).
//
// Narrower than the Role ToolHive's operator writes, which also grants
// list and watch on mcpgroups, mcptoolconfigs (vmcp reads none) and patch
// on the status (vmcp only updates it).
func VMCPDiscoveredRules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: slices.Clone(read)},
		{APIGroups: []string{ToolhiveGroup}, Resources: []string{"mcpservers", "mcpremoteproxies", "mcpserverentries", "mcpexternalauthconfigs"}, Verbs: slices.Clone(read)},
		{APIGroups: []string{ToolhiveGroup}, Resources: []string{"mcpgroups", "virtualmcpservers"}, Verbs: []string{"get"}},
		{APIGroups: []string{ToolhiveGroup}, Resources: []string{"virtualmcpservers/status"}, Verbs: []string{"update"}},
	}
}

// VMCPInlineRules are what vmcp calls when config.yaml lists its backends
// (outgoingAuth.source inline): only its status reporter's get of its
// VirtualMCPServer and update of its status.
func VMCPInlineRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{ToolhiveGroup}, Resources: []string{"virtualmcpservers"}, Verbs: []string{"get"}},
		{APIGroups: []string{ToolhiveGroup}, Resources: []string{"virtualmcpservers/status"}, Verbs: []string{"update"}},
	}
}

// RemoteProxyRunnerRules are what the proxy runner calls for an
// MCPRemoteProxy: nothing. A remote proxy deploys no workload, reads its
// RunConfig from the mounted file and gets its OIDC client secret as an
// environment variable the kubelet resolves; the runner's only API calls
// (discovery, /readyz) are open to every authenticated client. The
// ClusterRole and its bindings still exist, so that a runner that needs
// more can be given it by editing one ClusterRole, with no change to the
// controller's own permissions.
func RemoteProxyRunnerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{}
}

// RegistryAPIRules are what ToolHive's registry API server (an
// MCPRegistry's Deployment) may do in its namespace, ToolHive's rules in
// ToolHive's order:
//   - read MCPServers, MCPRemoteProxies and VirtualMCPServers: a
//     configuration with a kubernetes source lists them as the registry's
//     entries;
//   - read Services, and Gateway API HTTPRoutes and Gateways: where an
//     entry is reached, in the cluster or through an ingress;
//   - read and write ConfigMaps and Leases: its leader election, when it
//     runs more than one replica;
//   - create and patch Events (events.k8s.io) about that election.
//
// No Secret (credentials are mounted files) and nothing outside the
// namespace: the ClusterRole is bound by a RoleBinding in the registry's
// namespace only. ToolHive's operator writes these rules into a Role of
// its own per registry, which its creator must hold itself; hivekeeper
// binds the chart's ClusterRole instead and holds none of them.
func RegistryAPIRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{ToolhiveGroup}, Resources: []string{"mcpservers", "mcpremoteproxies", "virtualmcpservers"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"httproutes", "gateways"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

func withSuffix(resources []string, suffix string) []string {
	out := make([]string, len(resources))
	for i, r := range resources {
		out[i] = r + suffix
	}
	return out
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

// MetricsAuthRules are what the secure metrics endpoint (--metrics-secure)
// needs to check a scraper: review its bearer token, then ask whether its
// user may get /metrics. Both resources are cluster-scoped, so these come
// from a ClusterRoleBinding even when hivekeeper watches a list of
// namespaces; the chart binds the built-in system:auth-delegator
// ClusterRole, which grants exactly these.
func MetricsAuthRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}
}

// MetricsPath is the URL path of the metrics endpoint, and the non-resource
// URL a scraper must be allowed to get.
const MetricsPath = "/metrics"

// MetricsReaderRules are what a scraper of the secure metrics endpoint
// needs: get on the non-resource URL /metrics.
func MetricsReaderRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{NonResourceURLs: []string{MetricsPath}, Verbs: []string{"get"}}}
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

// NeverAllowed are requests the controller must not be able to make in
// any namespace, its own included: the unit tests check the declared rules
// against them, and the deploy test the installed chart, on a real API
// server.
var NeverAllowed = []Request{
	{Verb: "update", Resource: "secrets"},
	{Verb: "patch", Resource: "secrets"},
	{Verb: "delete", Resource: "secrets"},
	// No Secret read at all: the remote-proxy runner's role once needed it.
	{Verb: "get", Resource: "secrets"},
	{Verb: "list", Resource: "secrets"},
	{Verb: "watch", Resource: "secrets"},
	{Verb: "create", Resource: "pods"},
	{Verb: "get", Resource: "pods"},
	{Verb: "delete", Resource: "pods"},
	{Verb: "create", Resource: "pods/exec"},
	{Verb: "create", Resource: "pods/attach"},
	{Verb: "get", Resource: "pods/attach"},
	{Verb: "get", Resource: "pods/log"},
	{Verb: "create", Resource: "serviceaccounts/token"},
	{Verb: "list", Resource: "nodes"},
	{Verb: "list", Resource: "namespaces"},
	{Verb: "update", APIGroup: "apps", Resource: "statefulsets"},
	{Verb: "create", APIGroup: ToolhiveGroup, Resource: "mcpservers"},
	{Verb: "update", APIGroup: ToolhiveGroup, Resource: "mcpservers"},
	{Verb: "delete", APIGroup: ToolhiveGroup, Resource: "mcpservers"},
	{Verb: "create", APIGroup: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Name: "someone-elses-lease"},
	// Nothing the registry API may do but what the controller does anyway.
	{Verb: "list", APIGroup: "gateway.networking.k8s.io", Resource: "httproutes"},
	{Verb: "delete", APIGroup: "coordination.k8s.io", Resource: "leases"},
	// Nothing is ever updated whole.
	{Verb: "update", Resource: "configmaps"},
	{Verb: "update", APIGroup: "apps", Resource: "deployments"},
	{Verb: "update", APIGroup: rbacv1.GroupName, Resource: "rolebindings"},
	{Verb: "update", APIGroup: ToolhiveGroup, Resource: "mcpservers/status"},
	// No Roles, and no binding or escalating but the runner ClusterRoles.
	{Verb: "create", APIGroup: rbacv1.GroupName, Resource: "roles"},
	{Verb: "update", APIGroup: rbacv1.GroupName, Resource: "roles"},
	{Verb: "patch", APIGroup: rbacv1.GroupName, Resource: "roles"},
	{Verb: "delete", APIGroup: rbacv1.GroupName, Resource: "roles"},
	{Verb: "list", APIGroup: rbacv1.GroupName, Resource: "roles"},
	{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "roles"},
	{Verb: "escalate", APIGroup: rbacv1.GroupName, Resource: "roles"},
	{Verb: "create", APIGroup: rbacv1.GroupName, Resource: "clusterroles"},
	{Verb: "escalate", APIGroup: rbacv1.GroupName, Resource: "clusterroles"},
	{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "clusterroles"},
	{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "clusterroles", Name: "cluster-admin"},
	{Verb: "bind", APIGroup: rbacv1.GroupName, Resource: "clusterroles", Name: "admin"},
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
