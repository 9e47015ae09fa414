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
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/hivekeeper/hivekeeper/pkg/framework"
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
// namespace that hivekeeper writes: the children (label toolhive=true, the
// labels of an EmbeddingServer's or MCPRegistry's, or, for the kinds read
// whole, a ToolHive kind as controller) and the ToolHive custom resources.
func Versions(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, namespace string) (map[string]string, error) {
	out := map[string]string{}
	all := metav1.ListOptions{}
	c, t := kube.CoreV1(), th.ToolhiveV1beta1()
	type lister struct {
		resource string
		list     func() (runtime.Object, error)
		// children keeps only the workloads' children of an unfiltered
		// list (framework.IsWorkloadChild).
		children bool
	}
	lists := []lister{
		{resource: "configmaps", list: func() (runtime.Object, error) { return c.ConfigMaps(namespace).List(ctx, all) }, children: true},
		{resource: "serviceaccounts", list: func() (runtime.Object, error) { return c.ServiceAccounts(namespace).List(ctx, all) }, children: true},
		{resource: "rolebindings", list: func() (runtime.Object, error) { return kube.RbacV1().RoleBindings(namespace).List(ctx, all) }, children: true},
	}
	for _, sel := range []string{"toolhive=true", naming.EmbeddingServerSelector, naming.RegistrySelector} {
		children := metav1.ListOptions{LabelSelector: sel}
		lists = append(lists,
			lister{resource: "services", list: func() (runtime.Object, error) { return c.Services(namespace).List(ctx, children) }},
			lister{resource: "deployments", list: func() (runtime.Object, error) { return kube.AppsV1().Deployments(namespace).List(ctx, children) }},
			lister{resource: "statefulsets", list: func() (runtime.Object, error) { return kube.AppsV1().StatefulSets(namespace).List(ctx, children) }})
	}
	lists = append(lists, []lister{
		{resource: "embeddingservers", list: func() (runtime.Object, error) { return t.EmbeddingServers(namespace).List(ctx, all) }},
		{resource: "mcpregistries", list: func() (runtime.Object, error) { return t.MCPRegistries(namespace).List(ctx, all) }},
		{resource: "mcpservers", list: func() (runtime.Object, error) { return t.MCPServers(namespace).List(ctx, all) }},
		{resource: "mcpremoteproxies", list: func() (runtime.Object, error) { return t.MCPRemoteProxies(namespace).List(ctx, all) }},
		{resource: "virtualmcpservers", list: func() (runtime.Object, error) { return t.VirtualMCPServers(namespace).List(ctx, all) }},
		{resource: "mcpoidcconfigs", list: func() (runtime.Object, error) { return t.MCPOIDCConfigs(namespace).List(ctx, all) }},
		{resource: "mcpgroups", list: func() (runtime.Object, error) { return t.MCPGroups(namespace).List(ctx, all) }},
		{resource: "mcptoolconfigs", list: func() (runtime.Object, error) { return t.MCPToolConfigs(namespace).List(ctx, all) }},
		{resource: "mcpauthzconfigs", list: func() (runtime.Object, error) { return t.MCPAuthzConfigs(namespace).List(ctx, all) }},
		{resource: "mcpexternalauthconfigs", list: func() (runtime.Object, error) { return t.MCPExternalAuthConfigs(namespace).List(ctx, all) }},
		{resource: "mcptelemetryconfigs", list: func() (runtime.Object, error) { return t.MCPTelemetryConfigs(namespace).List(ctx, all) }},
		{resource: "mcpwebhookconfigs", list: func() (runtime.Object, error) { return t.MCPWebhookConfigs(namespace).List(ctx, all) }},
		{resource: "mcpserverentries", list: func() (runtime.Object, error) { return t.MCPServerEntries(namespace).List(ctx, all) }},
		{resource: "virtualmcpcompositetooldefinitions", list: func() (runtime.Object, error) {
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
			if l.children && !framework.IsWorkloadChild(m) {
				continue // a user's ConfigMap, the default ServiceAccount, ...
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

// Drain empties a controller's queue and returns the keys it held,
// sorted: what the event handlers enqueued since the last drain.
func Drain(q workqueue.TypedRateLimitingInterface[cache.ObjectName]) []string {
	var keys []string
	for q.Len() > 0 {
		k, _ := q.Get()
		keys = append(keys, k.String())
		q.Done(k)
	}
	slices.Sort(keys)
	return keys
}
