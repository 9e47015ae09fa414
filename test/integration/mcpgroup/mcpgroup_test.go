// Package mcpgroup tests the MCPGroup controller against a real API server:
// membership lists built from the group index, a workload moving between
// groups, a group created after its members (with the members' conditions
// and a VirtualMCPServer's backends), no status write once a group has
// converged, and ToolHive's finalizer held and released.
package mcpgroup

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// convergeTimeout bounds each wait for a group's status to follow a
// change. On a quiet machine it follows within the fan-in window (500 ms;
// a workload switching groups shows in both within a second, which the
// test logs); the bound only ends a wait that will never succeed, so a
// busy machine does not fail a test that is right.
const convergeTimeout = 2 * time.Minute

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func groupRef(name string) *thv1.GroupRef {
	if name == "" {
		return nil
	}
	return &thv1.GroupRef{Name: name}
}

func createGroup(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	_, err := env.Toolhive.ToolhiveV1beta1().MCPGroups(ns).Create(testCtx(t), &thv1.MCPGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       thv1.MCPGroupSpec{Description: "integration test group"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating MCPGroup %s: %v", name, err)
	}
}

func createServer(t *testing.T, env *framework.Env, ns, name, group string) {
	t.Helper()
	_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(testCtx(t), &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       thv1.MCPServerSpec{Image: "ghcr.io/example/mcp:1", GroupRef: groupRef(group)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating MCPServer %s: %v", name, err)
	}
}

func createProxy(t *testing.T, env *framework.Env, ns, name, group string) {
	t.Helper()
	_, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Create(testCtx(t), &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://remote.example.com/mcp", GroupRef: groupRef(group)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating MCPRemoteProxy %s: %v", name, err)
	}
}

// members is the expected membership of a group.
type members struct {
	servers, proxies []string
}

// groupConverged reports whether the group's status lists exactly m and
// says so for its current generation: phase Ready, counts matching, and a
// Ready condition True for that generation.
func groupConverged(t *testing.T, env *framework.Env, ns, name string, m members) func() (bool, error) {
	return func() (bool, error) {
		g, err := env.Toolhive.ToolhiveV1beta1().MCPGroups(ns).Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := g.Status
		ready := meta.FindStatusCondition(s.Conditions, thv1.ConditionReady)
		ok := slices.Equal(s.Servers, m.servers) && s.ServerCount == int32(len(m.servers)) &&
			slices.Equal(s.RemoteProxies, m.proxies) && s.RemoteProxyCount == int32(len(m.proxies)) &&
			s.Phase == thv1.MCPGroupPhaseReady && s.ObservedGeneration == g.Generation &&
			ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == g.Generation
		if !ok {
			return false, fmt.Errorf("status of %s/%s is %+v", ns, name, s)
		}
		return true, nil
	}
}

// serverGroupRef reports whether MCPServer ns/name carries
// GroupRefValidated with the given status and reason. That condition is
// written by the MCPServer controller, which reads the same group cache.
func serverGroupRef(t *testing.T, env *framework.Env, ns, name string, status metav1.ConditionStatus, reason string) func() (bool, error) {
	return func() (bool, error) {
		s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, thv1.ConditionGroupRefValidated)
		if c == nil || c.Status != status || c.Reason != reason {
			return false, fmt.Errorf("MCPServer %s/%s GroupRefValidated is %+v", ns, name, c)
		}
		return true, nil
	}
}

// proxyGroupRef is serverGroupRef for an MCPRemoteProxy, whose controller
// computes the condition with mcpgroup.GroupRefCondition.
func proxyGroupRef(t *testing.T, env *framework.Env, ns, name string, status metav1.ConditionStatus, reason string) func() (bool, error) {
	return func() (bool, error) {
		p, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionGroupRefValidated)
		if c == nil || c.Status != status || c.Reason != reason {
			return false, fmt.Errorf("MCPRemoteProxy %s/%s GroupRefValidated is %+v", ns, name, c)
		}
		return true, nil
	}
}

// vmcpBackends reports whether the configuration the VirtualMCPServer
// controller rendered for ns/name lists exactly the given backends.
func vmcpBackends(t *testing.T, env *framework.Env, ns, name string, want []string) func() (bool, error) {
	return func() (bool, error) {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(testCtx(t), naming.VMCPConfigMapName(name), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var cfg struct {
			Backends []struct {
				Name string `json:"name"`
			} `json:"backends"`
		}
		if err := yaml.Unmarshal([]byte(cm.Data[naming.VMCPConfigKey]), &cfg); err != nil {
			return false, err
		}
		var got []string
		for _, b := range cfg.Backends {
			got = append(got, b.Name)
		}
		if !slices.Equal(got, want) {
			return false, fmt.Errorf("VirtualMCPServer %s/%s backends are %v", ns, name, got)
		}
		return true, nil
	}
}

func setServerGroup(t *testing.T, env *framework.Env, ns, name, group string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"groupRef":{"name":%q}}}`, group)
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Patch(testCtx(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("moving MCPServer %s to group %s: %v", name, group, err)
	}
}

// TestMembersSorted: a group with three servers and a remote proxy lists
// them sorted, ignores workloads of other groups and without a group, and
// once converged a re-sync of the group writes nothing.
func TestMembersSorted(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})

	createGroup(t, env, ns, "tools")
	for _, name := range []string{"charlie", "alpha", "bravo"} {
		createServer(t, env, ns, name, "tools")
	}
	createServer(t, env, ns, "loner", "")
	createServer(t, env, ns, "elsewhere", "other")
	createProxy(t, env, ns, "remote", "tools")
	createProxy(t, env, ns, "unrelated", "")

	framework.Eventually(t, convergeTimeout,
		groupConverged(t, env, ns, "tools", members{servers: []string{"alpha", "bravo", "charlie"}, proxies: []string{"remote"}}),
		"group tools to list its members")

	// Steady state: touching the group wakes the controller, which must
	// find nothing to write. The controller's write counters tell when a
	// sync has run, so the check needs no sleep.
	//
	// One redundant patch may still be in flight when convergence is first
	// seen: a sync that started before the informer delivered the
	// controller's own last write compares against the older cached status.
	// The API server turns that patch into a no-op (the resourceVersion does
	// not move), and every sync after the cache caught up skips. So each
	// round must leave the resourceVersion alone, and within a few rounds a
	// sync must skip; a controller that rewrote a converged status would
	// write in every round.
	statusResource := "mcpgroups" + "/status"
	skipped := metrics.WritesSkipped.WithLabelValues(mcpgroup.Name, statusResource)
	written := metrics.Writes.WithLabelValues(mcpgroup.Name, statusResource, metrics.VerbPatch, metrics.OutcomeSuccess)
	const rounds = 5
	for round := 1; ; round++ {
		writesBefore := testutil.ToFloat64(written)
		syncsBefore := testutil.ToFloat64(skipped) + writesBefore
		touch := fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, round)
		touched, err := env.Toolhive.ToolhiveV1beta1().MCPGroups(ns).Patch(testCtx(t), "tools", types.MergePatchType,
			[]byte(touch), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, convergeTimeout, func() (bool, error) {
			return testutil.ToFloat64(skipped)+testutil.ToFloat64(written) > syncsBefore, nil
		}, "the group to be re-synced after touch %d", round)
		g, err := env.Toolhive.ToolhiveV1beta1().MCPGroups(ns).Get(testCtx(t), "tools", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g.ResourceVersion != touched.ResourceVersion {
			t.Fatalf("converged group was changed: resourceVersion %s after touch %d, now %s (status %+v)",
				touched.ResourceVersion, round, g.ResourceVersion, g.Status)
		}
		if testutil.ToFloat64(written) == writesBefore {
			break
		}
		if round == rounds {
			t.Fatalf("the controller patched the converged group's status in each of %d rounds", rounds)
		}
	}
}

// TestServerMovesBetweenGroups: a server switching groups leaves the old
// group and joins the new one within a second, and a deleted server leaves
// its group.
func TestServerMovesBetweenGroups(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})

	createGroup(t, env, ns, "g1")
	createGroup(t, env, ns, "g2")
	createServer(t, env, ns, "a", "g1")
	createServer(t, env, ns, "b", "g1")
	createServer(t, env, ns, "c", "g2")
	framework.Eventually(t, convergeTimeout, groupConverged(t, env, ns, "g1", members{servers: []string{"a", "b"}}), "g1 to list a, b")
	framework.Eventually(t, convergeTimeout, groupConverged(t, env, ns, "g2", members{servers: []string{"c"}}), "g2 to list c")

	setServerGroup(t, env, ns, "b", "g2")
	moved := time.Now()
	framework.Eventually(t, convergeTimeout, groupConverged(t, env, ns, "g1", members{servers: []string{"a"}}), "g1 to drop b")
	framework.Eventually(t, convergeTimeout, groupConverged(t, env, ns, "g2", members{servers: []string{"b", "c"}}), "g2 to gain b")
	t.Logf("both groups followed the move in %v", time.Since(moved).Round(time.Millisecond))

	if err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Delete(testCtx(t), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The MCPServer controller's finalizer delays the deletion until its
	// cleanup ran.
	framework.Eventually(t, convergeTimeout, groupConverged(t, env, ns, "g2", members{servers: []string{"b"}}), "g2 to drop the deleted c")
}

// TestGroupCreatedAfterMembers: workloads may name a group before it
// exists. Creating it converges its status from the index, the members'
// GroupRefValidated turns from False/GroupRefNotFound to True/GroupRefValid
// (written by the MCPServer and MCPRemoteProxy controllers), and a
// VirtualMCPServer aggregating the group lists its servers and remote
// proxy as backends.
// Deleting the group turns the conditions back.
func TestGroupCreatedAfterMembers(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})

	createServer(t, env, ns, "s2", "late")
	createServer(t, env, ns, "s1", "late")
	createServer(t, env, ns, "s3", "")
	createProxy(t, env, ns, "p1", "late")
	_, err := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns).Create(testCtx(t), &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "agg"},
		Spec: thv1.VirtualMCPServerSpec{
			// Inline: hivekeeper lists the backends in config.yaml and the
			// status (in discovered mode vmcp finds and reports them).
			OutgoingAuth: &thv1.OutgoingAuth{Source: thv1.OutgoingAuthSourceInline},
			IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous},
			GroupRef:     thv1.GroupRef{Name: "late"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating VirtualMCPServer agg: %v", err)
	}
	notFound := func(what string) {
		for _, s := range []string{"s1", "s2"} {
			framework.Eventually(t, convergeTimeout,
				serverGroupRef(t, env, ns, s, metav1.ConditionFalse, thv1.ReasonGroupRefNotFound),
				"MCPServer %s to report its %s group", s, what)
		}
		framework.Eventually(t, convergeTimeout,
			proxyGroupRef(t, env, ns, "p1", metav1.ConditionFalse, thv1.ReasonGroupRefNotFound),
			"MCPRemoteProxy p1 to report its %s group", what)
	}
	notFound("missing")

	createGroup(t, env, ns, "late")
	framework.Eventually(t, convergeTimeout,
		groupConverged(t, env, ns, "late", members{servers: []string{"s1", "s2"}, proxies: []string{"p1"}}),
		"group late to list the members that were there first")
	for _, s := range []string{"s1", "s2"} {
		framework.Eventually(t, convergeTimeout,
			serverGroupRef(t, env, ns, s, metav1.ConditionTrue, thv1.ReasonGroupRefValidated),
			"MCPServer %s to see its group", s)
	}
	framework.Eventually(t, convergeTimeout,
		proxyGroupRef(t, env, ns, "p1", metav1.ConditionTrue, thv1.ReasonGroupRefValidated),
		"MCPRemoteProxy p1 to see its group")
	framework.Eventually(t, convergeTimeout, vmcpBackends(t, env, ns, "agg", []string{"p1", "s1", "s2"}),
		"VirtualMCPServer agg to aggregate the group's servers and remote proxy")

	if err := env.Toolhive.ToolhiveV1beta1().MCPGroups(ns).Delete(testCtx(t), "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	notFound("deleted")
}

// TestToolHiveFinalizerReleased: a group created under ToolHive's
// operator carries its finalizer (toolhive.stacklok.dev/mcpgroup-finalizer)
// and hangs on delete unless someone releases it. Under hivekeeper the
// group converges with ToolHive's MCPServersChecked condition (what the
// Checked printer column reads), keeps the finalizer, and on delete its
// member reports the group being deleted or gone (GroupRefValidated False,
// GroupRefNotFound, written by the MCPServer controller) and the group
// goes away. A group created under hivekeeper gets the same finalizer.
func TestToolHiveFinalizerReleased(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	th := env.Toolhive.ToolhiveV1beta1()
	// Created before hivekeeper starts, as ToolHive's operator left it.
	if _, err := th.MCPGroups(ns).Create(testCtx(t), &thv1.MCPGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "from-toolhive", Finalizers: []string{thv1.MCPGroupFinalizer}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	createServer(t, env, ns, "member", "from-toolhive")
	createGroup(t, env, ns, "from-hivekeeper")

	framework.Eventually(t, convergeTimeout, groupConverged(t, env, ns, "from-toolhive", members{servers: []string{"member"}}),
		"the group to list its member")
	for _, name := range []string{"from-toolhive", "from-hivekeeper"} {
		framework.Eventually(t, convergeTimeout, func() (bool, error) {
			g, err := th.MCPGroups(ns).Get(testCtx(t), name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(g.Status.Conditions, thv1.ConditionMCPServersChecked)
			if !slices.Equal(g.Finalizers, []string{thv1.MCPGroupFinalizer}) || c == nil || c.Status != metav1.ConditionTrue ||
				c.Reason != thv1.ReasonListMCPServersCheckSucceeded || g.Status.Phase != thv1.MCPGroupPhaseReady {
				return false, fmt.Errorf("group %s: finalizers %v, phase %q, MCPServersChecked %+v", name, g.Finalizers, g.Status.Phase, c)
			}
			return true, nil
		}, "group %s to hold ToolHive's finalizer and MCPServersChecked", name)
	}
	framework.Eventually(t, convergeTimeout, serverGroupRef(t, env, ns, "member", metav1.ConditionTrue, thv1.ReasonGroupRefValidated),
		"the member to see its group")

	for _, name := range []string{"from-toolhive", "from-hivekeeper"} {
		if err := th.MCPGroups(ns).Delete(testCtx(t), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, convergeTimeout, func() (bool, error) {
			_, err := th.MCPGroups(ns).Get(testCtx(t), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("group %s still there: %v", name, err)
		}, "group %s to be gone", name)
	}
	framework.Eventually(t, convergeTimeout, serverGroupRef(t, env, ns, "member", metav1.ConditionFalse, thv1.ReasonGroupRefNotFound),
		"the member to report its group gone")
}
