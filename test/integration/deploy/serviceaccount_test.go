package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/workload"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// install creates (for real) the chart's ServiceAccount and RBAC objects in
// namespace, and returns the ServiceAccount's user name and groups as the
// API server would authenticate its token. Cluster-scoped objects are
// deleted on cleanup; namespaced ones go with the test's namespace.
//
// It returns once the API server's authorizer, which reads RBAC objects from
// an informer, sees the grants in watched and in namespace.
func install(t *testing.T, env *framework.Env, namespace, watched string, args ...string) (user string, groups []string) {
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
		case "ClusterRole", "ClusterRoleBinding":
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
	user = "system:serviceaccount:" + namespace + ":" + saName
	groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		return allowed(t, env, user, groups, watched, rbac.Request{Verb: "create", Resource: "configmaps"}) &&
			allowed(t, env, user, groups, namespace, rbac.Request{Verb: "create", APIGroup: "coordination.k8s.io", Resource: "leases"}), nil
	}, "the authorizer to see the chart's RBAC")
	return user, groups
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

// Requests the controller must never be able to make, wherever.
var neverAllowed = []rbac.Request{
	{Verb: "create", Resource: "secrets"},
	{Verb: "update", Resource: "secrets"},
	{Verb: "delete", Resource: "secrets"},
	{Verb: "create", Resource: "pods"},
	{Verb: "create", Resource: "pods/exec"},
	{Verb: "create", Resource: "serviceaccounts/token"},
	{Verb: "update", APIGroup: rbac.ToolhiveGroup, Resource: "mcpservers"},
	{Verb: "delete", APIGroup: rbac.ToolhiveGroup, Resource: "mcpservers"},
	{Verb: "bind", APIGroup: "rbac.authorization.k8s.io", Resource: "roles"},
	{Verb: "escalate", APIGroup: "rbac.authorization.k8s.io", Resource: "roles"},
	{Verb: "create", APIGroup: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "list", Resource: "nodes"},
	{Verb: "list", Resource: "namespaces"},
	{Verb: "update", APIGroup: "coordination.k8s.io", Resource: "leases", Name: "someone-elses-lease"},
	{Verb: "create", APIGroup: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
}

// The ServiceAccount holds exactly the declared permissions where it should,
// nothing where it should not, and can grant the proxy runners their Roles
// (the API server refuses a Role that grants more than its creator holds).
func TestServiceAccountPermissions(t *testing.T) {
	env := framework.Get(t)
	for _, mode := range []string{"all-namespaces", "namespace-list"} {
		t.Run(mode, func(t *testing.T) {
			release, watched, other := env.Namespace(t), env.Namespace(t), env.Namespace(t)
			var args []string
			if mode == "namespace-list" {
				args = []string{"--set", "watchNamespaces={" + watched + "}"}
			}
			user, groups := install(t, env, release, watched, args...)

			for _, r := range rbac.Expand(rbac.WorkloadRules()) {
				if !allowed(t, env, user, groups, watched, r) {
					t.Errorf("%s: denied %+v in the watched namespace", mode, r)
				}
				if mode == "namespace-list" && allowed(t, env, user, groups, other, r) {
					t.Errorf("%s: allowed %+v in a namespace it does not watch", mode, r)
				}
			}
			for _, r := range rbac.Expand(rbac.LeaderElectionRules("hivekeeper-leader")) {
				if !allowed(t, env, user, groups, release, r) {
					t.Errorf("%s: denied %+v in the release namespace", mode, r)
				}
			}
			for _, r := range neverAllowed {
				for _, ns := range []string{watched, release} {
					if allowed(t, env, user, groups, ns, r) {
						t.Errorf("%s: allowed %+v in %s", mode, r, ns)
					}
				}
			}

			// Grant the runner Roles as the ServiceAccount, as the
			// controllers do.
			cs, _, err := app.NewClients(env.ConfigForUser(user, groups...))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for name, rules := range map[string][]rbacv1.PolicyRule{
				"x-proxy-runner":        workload.ProxyRunnerRules(),
				"x-remote-proxy-runner": workload.RemoteProxyRunnerRules(),
			} {
				role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
				if _, err := cs.RbacV1().Roles(watched).Create(ctx, role, metav1.CreateOptions{}); err != nil {
					t.Errorf("%s: creating Role %s as the ServiceAccount: %v", mode, name, err)
				}
				binding := &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
					Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: watched}},
				}
				if _, err := cs.RbacV1().RoleBindings(watched).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
					t.Errorf("%s: creating RoleBinding %s as the ServiceAccount: %v", mode, name, err)
				}
				if mode == "namespace-list" {
					role.Namespace = ""
					if _, err := cs.RbacV1().Roles(other).Create(ctx, role, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
						t.Errorf("%s: creating Role %s in an unwatched namespace: want Forbidden, got %v", mode, name, err)
					}
				}
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
			user, groups := install(t, env, release, watched, args...)

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
			// MCPServer osv's children, written as the ServiceAccount.
			framework.Eventually(t, 30*time.Second, func() (bool, error) {
				if _, err := env.Kube.AppsV1().Deployments(watched).Get(ctx, "osv", metav1.GetOptions{}); err != nil {
					return false, err
				}
				if _, err := env.Kube.CoreV1().ConfigMaps(watched).Get(ctx, "osv-runconfig", metav1.GetOptions{}); err != nil {
					return false, err
				}
				if _, err := env.Kube.RbacV1().Roles(watched).Get(ctx, "osv-proxy-runner", metav1.GetOptions{}); err != nil {
					return false, err
				}
				_, err := env.Kube.RbacV1().RoleBindings(watched).Get(ctx, "osv-proxy-runner", metav1.GetOptions{})
				return err == nil, err
			}, "the osv MCPServer's Deployment, RunConfig and runner RBAC")

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
