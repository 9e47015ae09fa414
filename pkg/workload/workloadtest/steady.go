package workloadtest

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// The helpers below prove invariant 2 on a real API server: after
// convergence, nothing is written — no resourceVersion moves and the
// write counters stand still.

// WritesTotal returns hivekeeper_writes_total of the named controllers by
// "controller resource verb outcome".
func WritesTotal(t testing.TB, controllers ...string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "hivekeeper_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if !slices.Contains(controllers, l["controller"]) {
				continue
			}
			out[l["controller"]+" "+l["resource"]+" "+l["verb"]+" "+l["outcome"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// Quiesce waits until the named controllers have written nothing for
// quiet, so that what is measured next starts from a converged state, and
// returns their counters then. It fails the test after timeout.
func Quiesce(t testing.TB, quiet, timeout time.Duration, controllers ...string) map[string]float64 {
	t.Helper()
	last, since := WritesTotal(t, controllers...), time.Now()
	deadline := time.Now().Add(timeout)
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			t.Fatalf("controllers %v still writing after %v: %v", controllers, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
		if now := WritesTotal(t, controllers...); !maps.Equal(now, last) {
			last, since = now, time.Now()
		}
	}
	return last
}

// Versions returns "resource/name" → resourceVersion of every object in
// namespace that hivekeeper writes: the children (label toolhive=true, or
// the labels of an EmbeddingServer's or MCPRegistry's) and the ToolHive
// custom resources.
func Versions(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, namespace string) (map[string]string, error) {
	out := map[string]string{}
	all := metav1.ListOptions{}
	c, t := kube.CoreV1(), th.ToolhiveV1beta1()
	type lister struct {
		resource string
		list     func() (runtime.Object, error)
	}
	var lists []lister
	for _, sel := range []string{"toolhive=true", naming.EmbeddingServerSelector, naming.RegistrySelector} {
		children := metav1.ListOptions{LabelSelector: sel}
		lists = append(lists,
			lister{"configmaps", func() (runtime.Object, error) { return c.ConfigMaps(namespace).List(ctx, children) }},
			lister{"serviceaccounts", func() (runtime.Object, error) { return c.ServiceAccounts(namespace).List(ctx, children) }},
			lister{"services", func() (runtime.Object, error) { return c.Services(namespace).List(ctx, children) }},
			lister{"rolebindings", func() (runtime.Object, error) { return kube.RbacV1().RoleBindings(namespace).List(ctx, children) }},
			lister{"deployments", func() (runtime.Object, error) { return kube.AppsV1().Deployments(namespace).List(ctx, children) }},
			lister{"statefulsets", func() (runtime.Object, error) { return kube.AppsV1().StatefulSets(namespace).List(ctx, children) }})
	}
	lists = append(lists, []lister{
		{"embeddingservers", func() (runtime.Object, error) { return t.EmbeddingServers(namespace).List(ctx, all) }},
		{"mcpregistries", func() (runtime.Object, error) { return t.MCPRegistries(namespace).List(ctx, all) }},
		{"mcpservers", func() (runtime.Object, error) { return t.MCPServers(namespace).List(ctx, all) }},
		{"mcpremoteproxies", func() (runtime.Object, error) { return t.MCPRemoteProxies(namespace).List(ctx, all) }},
		{"virtualmcpservers", func() (runtime.Object, error) { return t.VirtualMCPServers(namespace).List(ctx, all) }},
		{"mcpoidcconfigs", func() (runtime.Object, error) { return t.MCPOIDCConfigs(namespace).List(ctx, all) }},
		{"mcpgroups", func() (runtime.Object, error) { return t.MCPGroups(namespace).List(ctx, all) }},
		{"mcptoolconfigs", func() (runtime.Object, error) { return t.MCPToolConfigs(namespace).List(ctx, all) }},
		{"mcpauthzconfigs", func() (runtime.Object, error) { return t.MCPAuthzConfigs(namespace).List(ctx, all) }},
		{"mcpexternalauthconfigs", func() (runtime.Object, error) { return t.MCPExternalAuthConfigs(namespace).List(ctx, all) }},
		{"mcptelemetryconfigs", func() (runtime.Object, error) { return t.MCPTelemetryConfigs(namespace).List(ctx, all) }},
		{"mcpwebhookconfigs", func() (runtime.Object, error) { return t.MCPWebhookConfigs(namespace).List(ctx, all) }},
		{"mcpserverentries", func() (runtime.Object, error) { return t.MCPServerEntries(namespace).List(ctx, all) }},
		{"virtualmcpcompositetooldefinitions", func() (runtime.Object, error) {
			return t.VirtualMCPCompositeToolDefinitions(namespace).List(ctx, all)
		}},
	}...)
	for _, l := range lists {
		list, err := l.list()
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			m, err := meta.Accessor(item)
			if err != nil {
				return nil, err
			}
			out[l.resource+"/"+m.GetName()] = m.GetResourceVersion()
		}
	}
	return out, nil
}

// AssertSteadyState fails unless, over hold, no object in namespace
// changes its resourceVersion and the named controllers write nothing.
// Run the controllers with a short informer resync period to cover
// resyncs too.
func AssertSteadyState(t testing.TB, ctx context.Context, kube kubernetes.Interface, th versioned.Interface, namespace string, hold time.Duration, controllers ...string) {
	t.Helper()
	// Quiet for several fan-in windows (500 ms each), however long the
	// machine takes to get there.
	writes := Quiesce(t, 2*time.Second, 2*time.Minute, controllers...)
	before, err := Versions(ctx, kube, th, namespace)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(hold)
	after, err := Versions(ctx, kube, th, namespace)
	if err != nil {
		t.Fatal(err)
	}
	for k, rv := range before {
		if after[k] != rv {
			t.Errorf("%s changed at steady state: resourceVersion %s -> %s", k, rv, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared at steady state", k)
		}
	}
	if now := WritesTotal(t, controllers...); !maps.Equal(now, writes) {
		t.Errorf("writes at steady state: before %v, after %v", writes, now)
	}
}

// WritesBetween is after minus before (two WritesTotal or Quiesce
// results), without the zero entries: the writes one change cost.
func WritesBetween(before, after map[string]float64) map[string]float64 {
	delta := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			delta[k] = d
		}
	}
	return delta
}
