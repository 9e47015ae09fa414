// Package mcpoidcconfig tests the MCPOIDCConfig controller against a real
// API server: the referencing-workload list across kinds, deletion held by
// the finalizer while workloads reference a config, and the write cost of a
// workload change among a thousand.
package mcpoidcconfig

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpoidcconfig"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// settle bounds each wait for a status to follow a change. A config's
// status follows within its fan-in window (500 ms, plus one per 100
// entries listed) on a quiet machine; the bound only ends a wait that will
// never succeed, so a busy machine does not fail a test that is right.
const settle = 2 * time.Minute

// quiet is how long nothing must be written before a count of writes is
// read: several fan-in windows of the largest list here (1,000 referrers
// over ten configs, 100 each).
const quiet = 3 * time.Second

func testCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return c
}

func oidcRef(cfg string) *thv1.OIDCConfigReference {
	return &thv1.OIDCConfigReference{Name: cfg, Audience: "mcp"}
}

func createConfig(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	_, err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Create(testCtx(t), &thv1.MCPOIDCConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: thv1.MCPOIDCConfigSpec{
			Type:   thv1.OIDCConfigTypeInline,
			Inline: &thv1.InlineOIDCConfig{Issuer: "https://idp.example.com", JWKSURL: "https://idp.example.com/jwks"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating MCPOIDCConfig %s: %v", name, err)
	}
}

func createServer(ctx context.Context, env *framework.Env, ns, name, cfg string) error {
	_, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(ctx, &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       thv1.MCPServerSpec{Image: "ghcr.io/example/mcp:1", OIDCConfigRef: oidcRef(cfg)},
	}, metav1.CreateOptions{})
	return err
}

func mustCreateServer(t *testing.T, env *framework.Env, ns, name, cfg string) {
	t.Helper()
	if err := createServer(testCtx(t), env, ns, name, cfg); err != nil {
		t.Fatalf("creating MCPServer %s: %v", name, err)
	}
}

func createProxy(t *testing.T, env *framework.Env, ns, name, cfg string) {
	t.Helper()
	_, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Create(testCtx(t), &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://remote.example.com/mcp", OIDCConfigRef: oidcRef(cfg)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating MCPRemoteProxy %s: %v", name, err)
	}
}

func createVMCP(t *testing.T, env *framework.Env, ns, name, cfg string) {
	t.Helper()
	_, err := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns).Create(testCtx(t), &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: thv1.VirtualMCPServerSpec{
			IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthOIDC, OIDCConfigRef: oidcRef(cfg)},
			GroupRef:     thv1.GroupRef{Name: "g"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating VirtualMCPServer %s: %v", name, err)
	}
}

// Merge patches that take a workload's reference away.
const (
	dropServerRef = `{"spec":{"oidcConfigRef":null}}`
	dropVMCPRef   = `{"spec":{"incomingAuth":{"type":"anonymous","oidcConfigRef":null}}}`
)

func dropServerReference(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Patch(testCtx(t), name, types.MergePatchType, []byte(dropServerRef), metav1.PatchOptions{}); err != nil {
		t.Fatalf("dropping the reference of MCPServer %s: %v", name, err)
	}
}

func dropVMCPReference(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	if _, err := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns).Patch(testCtx(t), name, types.MergePatchType, []byte(dropVMCPRef), metav1.PatchOptions{}); err != nil {
		t.Fatalf("dropping the reference of VirtualMCPServer %s: %v", name, err)
	}
}

func getConfig(ctx context.Context, env *framework.Env, ns, name string) (*thv1.MCPOIDCConfig, error) {
	return env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Get(ctx, name, metav1.GetOptions{})
}

// referrersAre returns a condition that holds when the config lists
// exactly want, in order, with the matching count.
func referrersAre(t *testing.T, env *framework.Env, ns, name string, want ...thv1.WorkloadReference) func() (bool, error) {
	return func() (bool, error) {
		cfg, err := getConfig(testCtx(t), env, ns, name)
		if err != nil {
			return false, err
		}
		got := cfg.Status.ReferencingWorkloads
		if len(got) == 0 && len(want) == 0 {
			return cfg.Status.ReferenceCount == 0, nil
		}
		if !reflect.DeepEqual(got, want) || cfg.Status.ReferenceCount != int32(len(want)) {
			return false, fmt.Errorf("referencingWorkloads = %v, referenceCount %d", got, cfg.Status.ReferenceCount)
		}
		return true, nil
	}
}

func wl(kind, name string) thv1.WorkloadReference {
	return thv1.WorkloadReference{Kind: kind, Name: name}
}

// Workloads of all three kinds that reference one config are listed, sorted
// by kind then name; a reference taken away leaves the list (within a
// fan-in window on a quiet machine; the time is logged, not asserted).
func TestReferencingWorkloadsOfEveryKind(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})

	createConfig(t, env, ns, "shared")
	createVMCP(t, env, ns, "v", "shared")
	mustCreateServer(t, env, ns, "s", "shared")
	createProxy(t, env, ns, "p", "shared")

	framework.Eventually(t, settle, referrersAre(t, env, ns, "shared",
		wl(thv1.KindMCPRemoteProxy, "p"), wl(thv1.KindMCPServer, "s"), wl(thv1.KindVirtualMCPServer, "v")),
		"all three workloads listed")
	cfg, err := getConfig(testCtx(t), env, ns, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(cfg.Status.Conditions, thv1.ConditionValid) || cfg.Status.ConfigHash == "" || cfg.Status.ObservedGeneration != cfg.Generation {
		t.Errorf("status = %+v, want Valid=True, a configHash and observedGeneration %d", cfg.Status, cfg.Generation)
	}
	if !slices.Contains(cfg.Finalizers, thv1.MCPOIDCConfigFinalizer) {
		t.Errorf("finalizers = %q, want %s", cfg.Finalizers, thv1.MCPOIDCConfigFinalizer)
	}
	if meta.FindStatusCondition(cfg.Status.Conditions, thv1.ConditionDeletionBlocked) != nil {
		t.Errorf("DeletionBlocked set on a config nobody deletes: %+v", cfg.Status.Conditions)
	}

	dropServerReference(t, env, ns, "s")
	dropped := time.Now()
	framework.Eventually(t, settle, referrersAre(t, env, ns, "shared",
		wl(thv1.KindMCPRemoteProxy, "p"), wl(thv1.KindVirtualMCPServer, "v")),
		"the list to shrink")
	t.Logf("the list shrank %v after the reference went", time.Since(dropped).Round(time.Millisecond))
}

// A referenced config survives its deletion with DeletionBlocked=True
// naming the referrers and one Warning event; it is gone once its last
// reference goes away (the time is logged, not asserted).
func TestDeletionBlockedWhileReferenced(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})

	createConfig(t, env, ns, "cfg")
	mustCreateServer(t, env, ns, "a", "cfg")
	createVMCP(t, env, ns, "v", "cfg")
	framework.Eventually(t, settle, referrersAre(t, env, ns, "cfg",
		wl(thv1.KindMCPServer, "a"), wl(thv1.KindVirtualMCPServer, "v")), "both referrers listed")

	if err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Delete(testCtx(t), "cfg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	blockedBy := func(msg string) func() (bool, error) {
		return func() (bool, error) {
			cfg, err := getConfig(testCtx(t), env, ns, "cfg")
			if err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(cfg.Status.Conditions, thv1.ConditionDeletionBlocked)
			if cfg.DeletionTimestamp == nil || c == nil || c.Status != metav1.ConditionTrue ||
				c.Reason != thv1.ReasonReferencedByWorkloads || c.Message != msg {
				return false, fmt.Errorf("deletionTimestamp %v, DeletionBlocked %+v", cfg.DeletionTimestamp, c)
			}
			return true, nil
		}
	}
	framework.Eventually(t, settle, blockedBy("referenced by MCPServer/a, VirtualMCPServer/v"), "DeletionBlocked=True")

	dropServerReference(t, env, ns, "a")
	framework.Eventually(t, settle, blockedBy("referenced by VirtualMCPServer/v"), "DeletionBlocked to name the last referrer")

	warnings := func() (int32, error) {
		evs, err := env.Kube.CoreV1().Events(ns).List(testCtx(t), metav1.ListOptions{
			FieldSelector: "involvedObject.name=cfg,reason=" + thv1.ReasonDeletionBlocked,
		})
		if err != nil {
			return 0, err
		}
		var n int32
		for _, e := range evs.Items {
			n += max(e.Count, 1)
		}
		return n, nil
	}
	framework.Eventually(t, settle, func() (bool, error) {
		n, err := warnings()
		return n == 1, err
	}, "one DeletionBlocked Warning event")

	dropVMCPReference(t, env, ns, "v")
	dropped := time.Now()
	framework.Eventually(t, settle, func() (bool, error) {
		_, err := getConfig(testCtx(t), env, ns, "cfg")
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}, "the config to be gone after its last reference")
	t.Logf("the config was gone %v after its last reference", time.Since(dropped).Round(time.Millisecond))
	if n, err := warnings(); err != nil || n != 1 {
		t.Errorf("DeletionBlocked Warning events = %d (err %v), want exactly 1", n, err)
	}
}

// quiesce waits until the MCPOIDCConfig controller has written nothing
// for quiet and returns its writes.
func quiesce(t *testing.T, quiet, timeout time.Duration) map[string]float64 {
	t.Helper()
	return workloadtest.Quiesce(t, quiet, timeout, mcpoidcconfig.Name)
}

// A thousand MCPServers referencing ten configs are all counted, and one
// workload change then costs exactly one status patch, on the one config
// it concerns.
func TestThousandWorkloadsOneChangeOnePatch(t *testing.T) {
	const configs, servers = 10, 1000
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})

	for i := range configs {
		createConfig(t, env, ns, fmt.Sprintf("cfg-%d", i))
	}
	began := time.Now()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	names := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range names {
				err := createServer(testCtx(t), env, ns, fmt.Sprintf("s-%04d", i), fmt.Sprintf("cfg-%d", i%configs))
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range servers {
		names <- i
	}
	close(names)
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("creating MCPServers: %v", firstErr)
	}
	t.Logf("created %d MCPServers in %v", servers, time.Since(began).Round(time.Millisecond))

	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		list, err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).List(testCtx(t), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var wrong []string
		for _, c := range list.Items {
			if c.Status.ReferenceCount != servers/configs || len(c.Status.ReferencingWorkloads) != servers/configs {
				wrong = append(wrong, fmt.Sprintf("%s=%d/%d", c.Name, c.Status.ReferenceCount, len(c.Status.ReferencingWorkloads)))
			}
		}
		if len(list.Items) != configs || len(wrong) > 0 {
			return false, fmt.Errorf("%d configs, wrong counts: %s", len(list.Items), strings.Join(wrong, " "))
		}
		return true, nil
	}, "every config to count %d referrers", servers/configs)
	t.Logf("all counts right %v after the first create", time.Since(began).Round(time.Millisecond))

	before := quiesce(t, quiet, settle)
	rvs := map[string]string{}
	list, err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		rvs[c.Name] = c.ResourceVersion
	}

	// s-0000 references cfg-0.
	dropServerReference(t, env, ns, "s-0000")
	framework.Eventually(t, settle, func() (bool, error) {
		c, err := getConfig(testCtx(t), env, ns, "cfg-0")
		if err != nil {
			return false, err
		}
		return c.Status.ReferenceCount == servers/configs-1, nil
	}, "cfg-0 to drop to %d referrers", servers/configs-1)
	after := quiesce(t, quiet, settle)

	delta := workloadtest.WritesBetween(before, after)
	if want := map[string]float64{mcpoidcconfig.Name + " mcpoidcconfigs/status patch success": 1}; !maps.Equal(delta, want) {
		t.Errorf("writes for one workload change = %v, want %v", delta, want)
	}
	list, err = env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		changed := c.ResourceVersion != rvs[c.Name]
		if changed != (c.Name == "cfg-0") {
			t.Errorf("config %s: resourceVersion changed = %v", c.Name, changed)
		}
		if c.Name != "cfg-0" && c.Status.ReferenceCount != servers/configs {
			t.Errorf("config %s counts %d", c.Name, c.Status.ReferenceCount)
		}
	}
}
