// Package cluster tests hivekeeper on a fuller cluster than the other
// integration tests: kube-controller-manager, kube-scheduler and kwok's
// fake nodes run beside the API server (framework.MainCluster), so every
// Deployment hivekeeper writes rolls out into ReplicaSets and pods that
// become Ready, the garbage collector runs, and each of those steps sends
// events to hivekeeper's informers. What the tests prove is what a user
// of a real cluster relies on: a change rolls each workload once and then
// settles; what others do to a Deployment (a rollout restart, a replica
// count, an admission policy's additions) is left alone; deleting a
// workload leaves its children to the garbage collector.
package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpoidcconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpremoteproxy"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpserver"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.MainCluster(m) }

// timeout bounds every wait for a condition. Pods become Ready in about a
// second on a quiet machine; the bound is there only so that a test that
// will never see its condition ends.
const timeout = 3 * time.Minute

// resync is the informers' resync period of every test: a resync
// re-queues every object, so the steady-state checks cover "no write on
// resync" too.
const resync = time.Second

// workloadControllers are the controllers whose writes the tests count.
var workloadControllers = []string{mcpserver.Name, mcpremoteproxy.Name, virtualmcpserver.Name, mcpgroup.Name, mcpoidcconfig.Name}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// appOptions run every controller on namespace ns, with a short resync.
func appOptions(ns string) app.Options {
	return app.Options{Namespaces: []string{ns}, ResyncPeriod: resync}
}

// start runs every controller on a namespace of the test's own.
func start(t *testing.T) (*framework.Env, string) {
	t.Helper()
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, appOptions(ns))
	return env, ns
}

// workloadKind is one of the three kinds hivekeeper deploys a proxy for.
type workloadKind struct {
	kind string
	// create creates a workload of the kind named name in ns, and what
	// it needs (a VirtualMCPServer's group and a member of it).
	create func(ctx context.Context, t *testing.T, env *framework.Env, ns, name string)
	// phase reads the workload's status.phase and observed generation
	// against its generation.
	phase func(ctx context.Context, env *framework.Env, ns, name string) (phase string, current bool, err error)
}

var kinds = []workloadKind{
	{
		kind: thv1.KindMCPServer,
		create: func(ctx context.Context, t *testing.T, env *framework.Env, ns, name string) {
			_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(ctx, &thv1.MCPServer{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       thv1.MCPServerSpec{Image: "ghcr.io/example/fetch:1", Transport: thv1.TransportStreamableHTTP},
			}, metav1.CreateOptions{})
			must(t, err)
			// No runner runs here: the test creates what it would, the
			// StatefulSet without which a ready proxy reads Pending.
			env.CreateRunnerObjects(t, ns, name, framework.RunnerLabels(name))
		},
		phase: func(ctx context.Context, env *framework.Env, ns, name string) (string, bool, error) {
			s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "", false, err
			}
			return s.Status.Phase, s.Status.ObservedGeneration == s.Generation, nil
		},
	},
	{
		kind: thv1.KindMCPRemoteProxy,
		create: func(ctx context.Context, t *testing.T, env *framework.Env, ns, name string) {
			_, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Create(ctx, &thv1.MCPRemoteProxy{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://mcp.example.com/mcp"},
			}, metav1.CreateOptions{})
			must(t, err)
		},
		phase: func(ctx context.Context, env *framework.Env, ns, name string) (string, bool, error) {
			p, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "", false, err
			}
			return p.Status.Phase, p.Status.ObservedGeneration == p.Generation, nil
		},
	},
	{
		kind: thv1.KindVirtualMCPServer,
		create: func(ctx context.Context, t *testing.T, env *framework.Env, ns, name string) {
			// A vMCP is deployed once its group has a member to
			// aggregate.
			th := env.Toolhive.ToolhiveV1beta1()
			_, err := th.MCPGroups(ns).Create(ctx, &thv1.MCPGroup{ObjectMeta: metav1.ObjectMeta{Name: name + "-group"}}, metav1.CreateOptions{})
			must(t, err)
			_, err = th.MCPServers(ns).Create(ctx, &thv1.MCPServer{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-backend"},
				Spec: thv1.MCPServerSpec{Image: "ghcr.io/example/fetch:1", Transport: thv1.TransportStreamableHTTP,
					GroupRef: &thv1.GroupRef{Name: name + "-group"}},
			}, metav1.CreateOptions{})
			must(t, err)
			_, err = th.VirtualMCPServers(ns).Create(ctx, &thv1.VirtualMCPServer{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: thv1.VirtualMCPServerSpec{IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous},
					GroupRef: thv1.GroupRef{Name: name + "-group"}},
			}, metav1.CreateOptions{})
			must(t, err)
		},
		phase: func(ctx context.Context, env *framework.Env, ns, name string) (string, bool, error) {
			v, err := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "", false, err
			}
			return v.Status.Phase, v.Status.ObservedGeneration == v.Generation, nil
		},
	},
}

// rolledOut reports whether the Deployment's rollout is complete: the
// controller manager saw its generation, every replica runs the current
// template and is available, and no pod of an older one is left.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
		s.AvailableReplicas == want && s.ReadyReplicas == want
}

// waitReady waits until the workload reports Ready for its current
// generation and its Deployment has rolled out, and returns the
// Deployment.
func waitReady(ctx context.Context, t *testing.T, env *framework.Env, k workloadKind, ns, name string) *appsv1.Deployment {
	t.Helper()
	var dep *appsv1.Deployment
	framework.Eventually(t, timeout, func() (bool, error) {
		phase, current, err := k.phase(ctx, env, ns, name)
		if err != nil {
			return false, err
		}
		dep, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return current && phase == "Ready" && rolledOut(dep), fmt.Errorf("phase %q (current %v), Deployment status %+v", phase, current, dep.Status)
	}, "%s %s/%s to be Ready with its Deployment rolled out", k.kind, ns, name)
	return dep
}

// replicaSets returns the names of the ReplicaSets the Deployment owns.
func replicaSets(ctx context.Context, t *testing.T, env *framework.Env, dep *appsv1.Deployment) []string {
	t.Helper()
	list, err := env.Kube.AppsV1().ReplicaSets(dep.Namespace).List(ctx, metav1.ListOptions{})
	must(t, err)
	var out []string
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == dep.UID {
			out = append(out, rs.Name)
		}
	}
	return out
}

// nonStatusWrites is the writes of delta (from WritesBetween) to anything
// but a status subresource.
func nonStatusWrites(delta map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range delta {
		// Keys are "controller resource verb outcome".
		if f := strings.Fields(k); len(f) == 4 && strings.HasSuffix(f[1], "/status") {
			continue
		}
		out[k] = v
	}
	return out
}
