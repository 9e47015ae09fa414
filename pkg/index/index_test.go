package index

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
)

func oidcRef(name string) *thv1.OIDCConfigReference {
	if name == "" {
		return nil
	}
	return &thv1.OIDCConfigReference{Name: name, Audience: "aud"}
}

func groupRef(name string) *thv1.GroupRef {
	if name == "" {
		return nil
	}
	return &thv1.GroupRef{Name: name}
}

func server(ns, name, config, group string) *thv1.MCPServer {
	return &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       thv1.MCPServerSpec{Image: "img", OIDCConfigRef: oidcRef(config), GroupRef: groupRef(group)},
	}
}

func proxy(ns, name, config, group string) *thv1.MCPRemoteProxy {
	return &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://example.com", OIDCConfigRef: oidcRef(config), GroupRef: groupRef(group)},
	}
}

func virtual(ns, name, config, group string) *thv1.VirtualMCPServer {
	v := &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       thv1.VirtualMCPServerSpec{IncomingAuth: thv1.IncomingAuth{Type: "anonymous"}, GroupRef: thv1.GroupRef{Name: group}},
	}
	if config != "" {
		v.Spec.IncomingAuth = thv1.IncomingAuth{Type: "oidc", OIDCConfigRef: oidcRef(config)}
	}
	return v
}

func TestIndexersPerKind(t *testing.T) {
	type build func(ns, name, config, group string) any
	kinds := []struct {
		kind      string
		build     build
		withGroup bool
	}{
		{thv1.KindMCPServer, func(ns, n, c, g string) any { return server(ns, n, c, g) }, true},
		{thv1.KindMCPRemoteProxy, func(ns, n, c, g string) any { return proxy(ns, n, c, g) }, true},
		// A VirtualMCPServer aggregates its group rather than joining it.
		{thv1.KindVirtualMCPServer, func(ns, n, c, g string) any { return virtual(ns, n, c, g) }, false},
	}
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			idx, err := Indexers(k.kind)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := idx[ByOIDCConfig]; !ok {
				t.Fatalf("no %s indexer", ByOIDCConfig)
			}
			if _, ok := idx[ByGroup]; ok != k.withGroup {
				t.Fatalf("%s indexer present = %v, want %v", ByGroup, ok, k.withGroup)
			}

			with := k.build("team-a", "w", "cfg", "grp")
			got, err := idx[ByOIDCConfig](with)
			if err != nil || !slices.Equal(got, []string{"team-a/cfg"}) {
				t.Fatalf("%s = %v, %v; want [team-a/cfg]", ByOIDCConfig, got, err)
			}
			if k.withGroup {
				got, err = idx[ByGroup](with)
				if err != nil || !slices.Equal(got, []string{"team-a/grp"}) {
					t.Fatalf("%s = %v, %v; want [team-a/grp]", ByGroup, got, err)
				}
			}

			without := k.build("team-a", "w", "", "")
			for name, f := range idx {
				got, err := f(without)
				if err != nil || len(got) != 0 {
					t.Fatalf("%s without a reference = %v, %v; want none", name, got, err)
				}
			}
			// An object of another kind yields nothing rather than panicking.
			for name, f := range idx {
				if got, _ := f(&thv1.MCPGroup{}); len(got) != 0 {
					t.Fatalf("%s of a foreign kind = %v", name, got)
				}
			}
		})
	}
	if _, err := Indexers(thv1.KindMCPGroup); err == nil {
		t.Fatal("Indexers of a kind without a table row must fail")
	}
}

func newServerIndexer(t testing.TB) cache.Indexer {
	t.Helper()
	idx, err := Indexers(thv1.KindMCPServer)
	if err != nil {
		t.Fatal(err)
	}
	return cache.NewIndexer(cache.MetaNamespaceKeyFunc, idx)
}

func TestReferrers(t *testing.T) {
	indexer := newServerIndexer(t)
	for _, s := range []*thv1.MCPServer{
		server("team-a", "zeta", "cfg", ""),
		server("team-a", "alpha", "cfg", "grp"),
		server("team-a", "mid", "cfg", ""),
		server("team-a", "other", "cfg2", "grp"),
		server("team-a", "none", "", ""),
		// Same config name in another namespace: a different config.
		server("team-b", "beta", "cfg", ""),
	} {
		if err := indexer.Add(s); err != nil {
			t.Fatal(err)
		}
	}

	got, err := Referrers(indexer, ByOIDCConfig, Key("team-a", "cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"alpha", "mid", "zeta"}; !slices.Equal(got, want) {
		t.Fatalf("Referrers(team-a/cfg) = %v, want %v", got, want)
	}
	got, _ = Referrers(indexer, ByOIDCConfig, Key("team-b", "cfg"))
	if want := []string{"beta"}; !slices.Equal(got, want) {
		t.Fatalf("Referrers(team-b/cfg) = %v, want %v", got, want)
	}
	got, _ = Referrers(indexer, ByGroup, Key("team-a", "grp"))
	if want := []string{"alpha", "other"}; !slices.Equal(got, want) {
		t.Fatalf("Referrers(team-a/grp) by group = %v, want %v", got, want)
	}
	got, err = Referrers(indexer, ByOIDCConfig, Key("team-c", "cfg"))
	if err != nil || len(got) != 0 {
		t.Fatalf("Referrers of an unreferenced config = %v, %v; want none", got, err)
	}
	if _, err := Referrers(indexer, "no-such-index", "x"); err == nil {
		t.Fatal("Referrers on an unknown index must fail")
	}

	// Switching a reference moves the object between index values.
	moved := server("team-a", "alpha", "cfg2", "grp")
	if err := indexer.Update(moved); err != nil {
		t.Fatal(err)
	}
	got, _ = Referrers(indexer, ByOIDCConfig, Key("team-a", "cfg"))
	if want := []string{"mid", "zeta"}; !slices.Equal(got, want) {
		t.Fatalf("after switch Referrers(team-a/cfg) = %v, want %v", got, want)
	}
	got, _ = Referrers(indexer, ByOIDCConfig, Key("team-a", "cfg2"))
	if want := []string{"alpha", "other"}; !slices.Equal(got, want) {
		t.Fatalf("after switch Referrers(team-a/cfg2) = %v, want %v", got, want)
	}
}

func TestReferencesOldAndNew(t *testing.T) {
	oldObj := server("ns", "s", "config-a", "g1")
	newObj := server("ns", "s", "config-b", "g1")

	var keys []string
	keys = append(keys, References(thv1.KindMCPServer, ByOIDCConfig, oldObj)...)
	keys = append(keys, References(thv1.KindMCPServer, ByOIDCConfig, newObj)...)
	sort.Strings(keys)
	if want := []string{"ns/config-a", "ns/config-b"}; !slices.Equal(keys, want) {
		t.Fatalf("References on old and new = %v, want %v", keys, want)
	}

	// Removing a reference still names the old one.
	if got := References(thv1.KindMCPServer, ByOIDCConfig, server("ns", "s", "", "")); len(got) != 0 {
		t.Fatalf("References without a reference = %v", got)
	}
	if got := References(thv1.KindVirtualMCPServer, ByOIDCConfig, virtual("ns", "v", "config-a", "g")); !slices.Equal(got, []string{"ns/config-a"}) {
		t.Fatalf("VirtualMCPServer References = %v", got)
	}
	if got := References(thv1.KindVirtualMCPServer, ByGroup, virtual("ns", "v", "", "g")); got != nil {
		t.Fatalf("VirtualMCPServer has no group index, got %v", got)
	}
	if got := References("Unknown", ByOIDCConfig, oldObj); got != nil {
		t.Fatalf("unknown kind References = %v", got)
	}
}

func TestAddToInformers(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	if err := AddToInformers(f); err != nil {
		t.Fatal(err)
	}
	for _, w := range Workloads {
		inf := InformerFor(f, w.Kind)
		if inf == nil {
			t.Fatalf("no informer for %s", w.Kind)
		}
		got := inf.GetIndexer().GetIndexers()
		for _, name := range []string{ByOIDCConfig, ByToolConfig, ByGroup, ByServiceAccount} {
			_, want := w.Refs[name]
			if _, ok := got[name]; ok != want {
				t.Errorf("%s informer has %s = %v, want %v", w.Kind, name, ok, want)
			}
		}
	}
	if InformerFor(f, "Unknown") != nil {
		t.Fatal("InformerFor an unknown kind must be nil")
	}
}

// listAndFilter is the baseline the index replaces: walk every object and
// keep those in the namespace that reference the config.
func listAndFilter(indexer cache.Indexer, namespace, config string) []string {
	var names []string
	for _, o := range indexer.List() {
		s := o.(*thv1.MCPServer)
		if s.Namespace == namespace && s.Spec.OIDCConfigRef != nil && s.Spec.OIDCConfigRef.Name == config {
			names = append(names, s.Name)
		}
	}
	sort.Strings(names)
	return names
}

func BenchmarkReferrers(b *testing.B) {
	const (
		total   = 10_000
		hot     = 100
		configs = 50
	)
	indexer := newServerIndexer(b)
	for i := range total {
		config := "hot"
		if i >= hot {
			config = fmt.Sprintf("cold-%d", i%configs)
		}
		if err := indexer.Add(server("bench", fmt.Sprintf("server-%05d", i), config, "")); err != nil {
			b.Fatal(err)
		}
	}
	// Both paths must agree before they are compared.
	viaIndex, err := Referrers(indexer, ByOIDCConfig, Key("bench", "hot"))
	if err != nil {
		b.Fatal(err)
	}
	if viaList := listAndFilter(indexer, "bench", "hot"); len(viaIndex) != hot || !slices.Equal(viaIndex, viaList) {
		b.Fatalf("index found %d, list-filter %d; want %d each and equal", len(viaIndex), len(viaList), hot)
	}

	b.Run("index", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Referrers(indexer, ByOIDCConfig, Key("bench", "hot")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list-filter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = listAndFilter(indexer, "bench", "hot")
		}
	})
}

// TestVMCPManyReferences: a VirtualMCPServer names one MCPToolConfig per
// aggregated workload and one MCPExternalAuthConfig per backend; each is
// an index value of its own (once, however often it is named), so a
// change of any of them re-syncs the server.
func TestVMCPManyReferences(t *testing.T) {
	ext := func(name string) thv1.BackendAuth {
		return thv1.BackendAuth{Type: thv1.BackendAuthTypeExternalAuthConfigRef, ExternalAuthConfigRef: &thv1.ExternalAuthConfigReference{Name: name}}
	}
	def := ext("shared")
	v := &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agg"},
		Spec: thv1.VirtualMCPServerSpec{
			IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous, AuthzConfigRef: &thv1.AuthzConfigReference{Name: "cedar"}},
			OutgoingAuth: &thv1.OutgoingAuth{Default: &def, Backends: map[string]thv1.BackendAuth{
				"a": ext("token"), "b": ext("shared"), "c": {Type: thv1.BackendAuthTypeDiscovered},
			}},
			TelemetryConfigRef: &thv1.TelemetryConfigReference{Name: "otel"},
			Config: &thv1.VirtualMCPConfig{Aggregation: &thv1.VMCPAggregation{Tools: []thv1.VMCPWorkloadTools{
				{Workload: "a", ToolConfigRef: &thv1.ToolConfigReference{Name: "t2"}}, {Workload: "b", ToolConfigRef: &thv1.ToolConfigReference{Name: "t1"}},
				{Workload: "c", ToolConfigRef: &thv1.ToolConfigReference{Name: "t2"}}, {Workload: "d"}}}},
		},
	}
	for indexName, want := range map[string][]string{
		ByToolConfig:         {"ns/t1", "ns/t2"},
		ByExternalAuthConfig: {"ns/shared", "ns/token"},
		ByAuthzConfig:        {"ns/cedar"},
		ByTelemetryConfig:    {"ns/otel"},
		ByOIDCConfig:         nil,
	} {
		if got := References(thv1.KindVirtualMCPServer, indexName, v); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", indexName, got, want)
		}
	}
}

// ByServiceAccount holds every account a workload's pods are told to run
// as, for each kind that can name one: spec.serviceAccount, and a
// podTemplateSpec's serviceAccountName where the template's account is
// the pod's (not an MCPServer's, whose template account is replaced).
func TestServiceAccountIndex(t *testing.T) {
	tpl := func(sa string) *runtime.RawExtension {
		return &runtime.RawExtension{Raw: []byte(`{"spec":{"serviceAccountName":"` + sa + `"}}`)}
	}
	meta := metav1.ObjectMeta{Namespace: "team-a", Name: "w"}
	s := server("team-a", "w", "", "")
	s.Spec.ServiceAccount = ptr.To("mine")
	s.Spec.PodTemplateSpec = tpl("ignored")
	p := proxy("team-a", "w", "", "")
	p.Spec.ServiceAccount, p.Spec.PodTemplateSpec = ptr.To("a"), tpl("b")
	v := virtual("team-a", "w", "", "g")
	v.Spec.ServiceAccount, v.Spec.PodTemplateSpec = ptr.To("a"), tpl("a")
	for _, tc := range []struct {
		kind string
		obj  any
		want []string
	}{
		{thv1.KindMCPServer, s, []string{"team-a/mine"}},
		{thv1.KindMCPRemoteProxy, p, []string{"team-a/a", "team-a/b"}},
		{thv1.KindVirtualMCPServer, v, []string{"team-a/a"}},
		{thv1.KindEmbeddingServer, &thv1.EmbeddingServer{ObjectMeta: meta, Spec: thv1.EmbeddingServerSpec{PodTemplateSpec: tpl("agg-vmcp")}}, []string{"team-a/agg-vmcp"}},
		{thv1.KindMCPRegistry, &thv1.MCPRegistry{ObjectMeta: meta, Spec: thv1.MCPRegistrySpec{PodTemplateSpec: tpl("agg-vmcp")}}, []string{"team-a/agg-vmcp"}},
		{thv1.KindMCPRegistry, &thv1.MCPRegistry{ObjectMeta: meta, Spec: thv1.MCPRegistrySpec{PodTemplateSpec: &runtime.RawExtension{Raw: []byte(`{"spec":"junk"}`)}}}, nil},
		{thv1.KindMCPRegistry, &thv1.MCPRegistry{ObjectMeta: meta}, nil},
	} {
		got := References(tc.kind, ByServiceAccount, tc.obj)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.kind, got, tc.want)
		}
	}
}
