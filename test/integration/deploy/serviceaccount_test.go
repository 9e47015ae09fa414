package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// installation is the chart's RBAC created on the test server: the
// identity of its ServiceAccount as the API server authenticates it, and the
// runner ClusterRoles the Deployment tells the controller to bind.
type installation struct {
	user    string
	groups  []string
	runners rbac.Runners
}

// install creates (for real) the chart's ServiceAccount and RBAC objects in
// namespace. Cluster-scoped objects are deleted on cleanup; namespaced ones
// go with the test's namespace.
//
// It returns once the API server's authorizer, which reads RBAC objects from
// an informer, sees the grants in watched and in namespace.
func install(t *testing.T, env *framework.Env, namespace, watched string, args ...string) installation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs := render(t, uniqueRelease(t), namespace, append(args, "--skip-crds")...)
	admin := newApplier(t, env.Config)
	var saName string
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ServiceAccount":
			saName = obj.GetName()
		case "ClusterRole", "ClusterRoleBinding", "FlowSchema":
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := admin.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
					t.Logf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
			})
		case "Role", "RoleBinding":
		default:
			continue
		}
		if err := admin.apply(ctx, obj, false); err != nil {
			t.Fatalf("creating %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	if saName == "" {
		t.Fatal("the chart rendered no ServiceAccount")
	}
	in := installation{
		user:   "system:serviceaccount:" + namespace + ":" + saName,
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	for _, a := range decode[appsv1.Deployment](t, find(objs, "Deployment")[0]).Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--proxy-runner-cluster-role="); ok {
			in.runners.ProxyRunner = v
		}
		if v, ok := strings.CutPrefix(a, "--stdio-proxy-runner-cluster-role="); ok {
			in.runners.StdioProxyRunner = v
		}
		if v, ok := strings.CutPrefix(a, "--remote-proxy-runner-cluster-role="); ok {
			in.runners.RemoteProxyRunner = v
		}
		if v, ok := strings.CutPrefix(a, "--registry-api-cluster-role="); ok {
			in.runners.RegistryAPI = v
		}
		if v, ok := strings.CutPrefix(a, "--vmcp-discovered-cluster-role="); ok {
			in.runners.VMCPDiscovered = v
		}
		if v, ok := strings.CutPrefix(a, "--vmcp-inline-cluster-role="); ok {
			in.runners.VMCPInline = v
		}
	}
	if slices.Contains(in.runners.Names(), "") {
		t.Fatalf("the Deployment names no runner ClusterRoles: %+v", in.runners)
	}
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		return in.allowed(t, env, watched, rbac.Request{Verb: "create", Resource: "configmaps"}) &&
			in.allowed(t, env, namespace, rbac.Request{Verb: "create", APIGroup: "coordination.k8s.io", Resource: "leases"}), nil
	}, "the authorizer to see the chart's RBAC")
	return in
}

func (in installation) allowed(t *testing.T, env *framework.Env, namespace string, r rbac.Request) bool {
	t.Helper()
	return allowed(t, env, in.user, in.groups, namespace, r)
}

// allowed asks the API server whether user may make request r in namespace.
func allowed(t *testing.T, env *framework.Env, user string, groups []string, namespace string, r rbac.Request) bool {
	t.Helper()
	resource, sub, _ := strings.Cut(r.Resource, "/")
	sar, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: r.Verb, Group: r.APIGroup,
				Resource: resource, Subresource: sub, Name: r.Name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	return sar.Status.Allowed
}

// The ServiceAccount holds exactly the declared permissions where it should,
// nothing where it should not, and can bind the runner ClusterRoles (it
// holds bind on them, not their permissions) but no other role: the API
// server refuses a binding to cluster-admin, and a Secret read, outright.
func TestServiceAccountPermissions(t *testing.T) {
	env := framework.Get(t)
	for _, mode := range []string{"all-namespaces", "namespace-list"} {
		t.Run(mode, func(t *testing.T) {
			release, watched, other := env.Namespace(t), env.Namespace(t), env.Namespace(t)
			var args []string
			if mode == "namespace-list" {
				args = []string{"--set", "watchNamespaces={" + watched + "}"}
			}
			in := install(t, env, release, watched, args...)

			for _, r := range rbac.Expand(rbac.WorkloadRules(in.runners)) {
				if !in.allowed(t, env, watched, r) {
					t.Errorf("%s: denied %+v in the watched namespace", mode, r)
				}
				if mode == "namespace-list" && in.allowed(t, env, other, r) {
					t.Errorf("%s: allowed %+v in a namespace it does not watch", mode, r)
				}
			}
			for _, r := range rbac.Expand(rbac.LeaderElectionRules("hivekeeper-leader")) {
				if !in.allowed(t, env, release, r) {
					t.Errorf("%s: denied %+v in the release namespace", mode, r)
				}
			}
			// --metrics-secure reviews scrapers' tokens and access,
			// cluster-scoped requests, in every watch mode.
			for _, r := range rbac.Expand(rbac.MetricsAuthRules()) {
				if !in.allowed(t, env, "", r) {
					t.Errorf("%s: denied %+v, which the secure metrics endpoint needs", mode, r)
				}
			}
			for _, r := range rbac.NeverAllowed {
				for _, ns := range []string{watched, release} {
					if in.allowed(t, env, ns, r) {
						t.Errorf("%s: allowed %+v in %s", mode, r, ns)
					}
				}
			}

			// As the ServiceAccount, with the requests the controllers send.
			cs, _, err := app.NewClients(env.ConfigForUser(in.user, in.groups...))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "idp", Namespace: watched}, StringData: map[string]string{"k": "v"}}
			if _, err := env.Kube.CoreV1().Secrets(watched).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().Secrets(watched).Get(ctx, "idp", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("%s: reading a Secret as the ServiceAccount: want Forbidden, got %v", mode, err)
			}
			bind := func(ns, name string, ref rbacv1.RoleRef) error {
				_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					RoleRef:    ref,
					Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
				}, metav1.CreateOptions{})
				return err
			}
			clusterRole := func(name string) rbacv1.RoleRef {
				return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
			}
			for _, cr := range in.runners.Names() {
				if err := bind(watched, "x-"+cr, clusterRole(cr)); err != nil {
					t.Errorf("%s: binding %s as the ServiceAccount: %v", mode, cr, err)
				}
				if mode == "namespace-list" {
					if err := bind(other, "x-"+cr, clusterRole(cr)); !apierrors.IsForbidden(err) {
						t.Errorf("%s: binding %s in an unwatched namespace: want Forbidden, got %v", mode, cr, err)
					}
				}
			}
			// cluster-admin, and a role granting what the ServiceAccount
			// lacks (the aggregated admin, edit and view roles have no
			// rules on a server without kube-controller-manager).
			secretReader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: in.runners.ProxyRunner + "-test-secret-reader"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
			if _, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, secretReader, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), secretReader.Name, metav1.DeleteOptions{})
			})
			for _, cr := range []string{"cluster-admin", secretReader.Name} {
				if err := bind(watched, "x-"+cr, clusterRole(cr)); !apierrors.IsForbidden(err) {
					t.Errorf("%s: binding %s as the ServiceAccount: want Forbidden, got %v", mode, cr, err)
				}
			}
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "x-role"}, Rules: rbac.ProxyRunnerRules()}
			if _, err := cs.RbacV1().Roles(watched).Create(ctx, role, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("%s: creating a Role as the ServiceAccount: want Forbidden, got %v", mode, err)
			}
		})
	}
}

// forbiddenRecorder remembers every 403 the API server answers.
type forbiddenRecorder struct {
	mu        sync.Mutex
	forbidden []string
	requests  int
}

func (f *forbiddenRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests++
		if err == nil && resp.StatusCode == http.StatusForbidden {
			f.forbidden = append(f.forbidden, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
		}
		return resp, err
	})
}

func (f *forbiddenRecorder) snapshot() (requests int, forbidden []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, append([]string(nil), f.forbidden...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (fn roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return fn(r) }

// The controllers, run as the chart's ServiceAccount through the binary's
// own path (leader election on a Lease in the release namespace, then
// app.Start), reconcile the examples, restart and delete an MCPServer, and
// never get a 403 from the API server.
func TestControllersRunAsChartServiceAccount(t *testing.T) {
	env := framework.Get(t)
	root := repoRoot(t)
	for _, mode := range []string{"all-namespaces", "namespace-list"} {
		t.Run(mode, func(t *testing.T) {
			release, watched := env.Namespace(t), env.Namespace(t)
			var opts app.Options
			var args []string
			if mode == "namespace-list" {
				args = []string{"--set", "watchNamespaces={" + watched + "}"}
				opts.Namespaces = []string{watched}
			}
			in := install(t, env, release, watched, args...)
			user, groups := in.user, in.groups
			opts.Runners = in.runners
			legacyRole := legacyRunnerRBAC(t, env, watched)

			rec := &forbiddenRecorder{}
			// Registered first so it runs last, after the controllers
			// stopped, and also when a wait below failed the test.
			t.Cleanup(func() {
				requests, forbidden := rec.snapshot()
				t.Logf("%d API requests as %s", requests, user)
				for _, f := range forbidden {
					t.Errorf("403 Forbidden: %s", f)
				}
			})
			cfg := env.ConfigForUser(user, groups...)
			cfg.QPS, cfg.Burst = 200, 400
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return rec.wrap(rt) })
			kube, th, err := app.NewClients(cfg)
			if err != nil {
				t.Fatal(err)
			}

			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			const lease = "hivekeeper-leader"
			identity := "test-" + mode
			lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, release, lease,
				resourcelock.ResourceLockConfig{Identity: identity}, rest.CopyConfig(cfg), 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ready := make(chan struct{})
			exited := make(chan struct{})
			var runErr error
			go func() {
				defer close(exited)
				leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
					Lock: lock, Name: lease, ReleaseOnCancel: true,
					LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
					Callbacks: leaderelection.LeaderCallbacks{
						OnStartedLeading: func(ctx context.Context) { runErr = app.Start(ctx, kube, th, opts, ready) },
						OnStoppedLeading: func() {},
					},
				})
			}()
			t.Cleanup(func() {
				cancel()
				select {
				case <-exited:
					if runErr != nil && !errors.Is(runErr, context.Canceled) {
						t.Errorf("controllers returned an error: %v", runErr)
					}
				case <-time.After(30 * time.Second):
					t.Errorf("controllers still running 30s after their context was cancelled")
				}
			})
			select {
			case <-ready:
			case <-exited:
				t.Fatalf("leader election or controllers ended before the caches synced: %v", runErr)
			case <-time.After(60 * time.Second):
				t.Fatal("caches not synced after 60s: can the ServiceAccount list and watch?")
			}

			if _, err := framework.ApplyManifests(ctx, env.Config, watched, filepath.Join(root, "examples")); err != nil {
				t.Fatalf("applying examples: %v", err)
			}
			// MCPServer osv's children, written as the ServiceAccount; the
			// runners are bound to the chart's ClusterRoles, and the legacy
			// binding to a Role was replaced by one to the ClusterRole (the
			// stdio one: the legacy server's transport is the default).
			framework.Eventually(t, 30*time.Second, func() (bool, error) {
				if _, err := env.Kube.AppsV1().Deployments(watched).Get(ctx, "osv", metav1.GetOptions{}); err != nil {
					return false, err
				}
				if _, err := env.Kube.CoreV1().ConfigMaps(watched).Get(ctx, "osv-runconfig", metav1.GetOptions{}); err != nil {
					return false, err
				}
				// The example EmbeddingServer's StatefulSet and the example
				// MCPRegistry's Deployment, written as the ServiceAccount too.
				if _, err := env.Kube.AppsV1().StatefulSets(watched).Get(ctx, "embeddings", metav1.GetOptions{}); err != nil {
					return false, err
				}
				if _, err := env.Kube.AppsV1().Deployments(watched).Get(ctx, "catalog-api", metav1.GetOptions{}); err != nil {
					return false, err
				}
				for binding, clusterRole := range map[string]string{
					"osv-proxy-runner":                 in.runners.ProxyRunner,
					"legacy-proxy-runner":              in.runners.StdioProxyRunner,
					"vendor-tools-remote-proxy-runner": in.runners.RemoteProxyRunner,
					"catalog-registry-api":             in.runners.RegistryAPI,
					// The example vMCP names no outgoing auth source:
					// discovered, ToolHive's default.
					"engineering-vmcp": in.runners.VMCPDiscovered,
				} {
					rb, err := env.Kube.RbacV1().RoleBindings(watched).Get(ctx, binding, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != clusterRole {
						return false, fmt.Errorf("RoleBinding %s binds %+v", binding, rb.RoleRef)
					}
				}
				return true, nil
			}, "the osv MCPServer's Deployment and RunConfig, the examples' StatefulSet and registry API, and the bindings to the chart's ClusterRoles")
			roles, err := env.Kube.RbacV1().Roles(watched).List(ctx, metav1.ListOptions{LabelSelector: "toolhive=true"})
			if err != nil {
				t.Fatal(err)
			}
			if len(roles.Items) != 1 || roles.Items[0].UID != legacyRole.UID || roles.Items[0].ResourceVersion != legacyRole.ResourceVersion {
				t.Errorf("Roles of workloads in the watched namespace: %d, want only the legacy one, untouched", len(roles.Items))
			}

			// An immediate restart deletes the proxy pods.
			requested := time.Now().UTC().Format(time.RFC3339)
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:"immediate"}}}`,
				"mcpserver.toolhive.stacklok.dev/restarted-at", requested, "mcpserver.toolhive.stacklok.dev/restart-strategy")
			if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(watched).Patch(ctx, "osv", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			framework.Eventually(t, 30*time.Second, func() (bool, error) {
				s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(watched).Get(ctx, "osv", metav1.GetOptions{})
				return err == nil && s.Annotations["mcpserver.toolhive.stacklok.dev/last-processed-restart"] == requested, err
			}, "the immediate restart to be processed")

			// Deletion runs the finalizer: the runner's StatefulSet and
			// Services are deleted, then the finalizer removed.
			if err := env.Toolhive.ToolhiveV1beta1().MCPServers(watched).Delete(ctx, "osv", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			framework.Eventually(t, 30*time.Second, func() (bool, error) {
				_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(watched).Get(ctx, "osv", metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			}, "the osv MCPServer to be finalized and gone")

			// The leader holds and renews its Lease in the release namespace.
			framework.Eventually(t, 10*time.Second, func() (bool, error) {
				l, err := env.Kube.CoordinationV1().Leases(release).Get(ctx, lease, metav1.GetOptions{})
				return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == identity &&
					l.Spec.RenewTime != nil && l.Spec.AcquireTime != nil && l.Spec.RenewTime.After(l.Spec.AcquireTime.Time), err
			}, "the Lease to be held and renewed")

			// Let the other controllers and the event sink finish what the
			// examples started; the cleanup above reports any 403.
			time.Sleep(2 * time.Second)
		})
	}
}

// legacyRunnerRBAC creates what an older hivekeeper left for MCPServer
// "legacy": the runner bound to a Role of its own. The binding's roleRef
// cannot change, so the controller must delete and recreate it; the Role
// it must leave alone. It returns the Role.
func legacyRunnerRBAC(t *testing.T, env *framework.Env, ns string) *rbacv1.Role {
	t.Helper()
	ctx := context.Background()
	s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(ctx, &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
		Spec:       thv1.MCPServerSpec{Image: "ghcr.io/example/legacy:1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{
		Name:            "legacy-proxy-runner",
		Labels:          naming.Labels("mcpserver", "legacy"),
		OwnerReferences: []metav1.OwnerReference{naming.OwnerRef(s, thv1.SchemeGroupVersion.WithKind(thv1.KindMCPServer))},
	}
	role, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rbac.ProxyRunnerRules()}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: meta.Name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return role
}
