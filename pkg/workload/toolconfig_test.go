package workload

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

func toolConfig(name string, spec thv1.MCPToolConfigSpec) *thv1.MCPToolConfig {
	return &thv1.MCPToolConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Generation: 1, ResourceVersion: "7"},
		Spec:       spec,
	}
}

// The RunConfig carries the filter and every override the runner can
// apply; an override with only annotations is left out.
func TestApplyToolConfig(t *testing.T) {
	rc := &schema.RunConfig{}
	ApplyToolConfig(rc, nil)
	if rc.ToolsFilter != nil || rc.ToolsOverride != nil {
		t.Fatalf("no config set tool fields: %+v", rc)
	}
	ApplyToolConfig(rc, toolConfig("t", thv1.MCPToolConfigSpec{
		ToolsFilter: []string{"a", "b"},
		ToolsOverride: map[string]thv1.ToolOverride{
			"x": {Name: "a"},
			"y": {Description: "why"},
			"z": {Annotations: &thv1.ToolAnnotationsOverride{ReadOnlyHint: ptr.To(true)}},
		},
	}))
	want := map[string]schema.ToolOverride{"x": {Name: "a"}, "y": {Description: "why"}}
	if !reflect.DeepEqual(rc.ToolsFilter, []string{"a", "b"}) || !reflect.DeepEqual(rc.ToolsOverride, want) {
		t.Errorf("got filter %q overrides %+v", rc.ToolsFilter, rc.ToolsOverride)
	}
}

func TestValidateToolConfig(t *testing.T) {
	ok := toolConfig("t", thv1.MCPToolConfigSpec{ToolsFilter: []string{"fetch"}, ToolsOverride: map[string]thv1.ToolOverride{"fetch": {Name: "get"}}})
	if errs := validateToolConfig(ok); len(errs) != 0 {
		t.Errorf("valid config rejected: %q", errs)
	}
	bad := toolConfig("t", thv1.MCPToolConfigSpec{ToolsFilter: []string{"", "a,b", "c\nd"}, ToolsOverride: map[string]thv1.ToolOverride{"": {Name: "x"}}})
	errs := validateToolConfig(bad)
	if len(errs) != 4 || !strings.Contains(errs[1], `spec.toolsFilter[1] "a,b"`) || !strings.Contains(errs[3], "spec.toolsOverride") {
		t.Errorf("errors = %q", errs)
	}
}

// The MCPToolConfig controller is the shared config controller.
func TestToolConfigControllerListsReferrersOfBothKinds(t *testing.T) {
	cfg := toolConfig("curated", thv1.MCPToolConfigSpec{ToolsFilter: []string{"fetch"}})
	testProxyConfigController(t, ToolConfigs, cfg, func(s *thv1.MCPServerSpec, p *thv1.MCPRemoteProxySpec) {
		s.ToolConfigRef = &thv1.ToolConfigReference{Name: "curated"}
		p.ToolConfigRef = &thv1.ToolConfigReference{Name: "curated"}
	})
}

// testProxyConfigController checks the controller of a config kind that
// MCPServers and MCPRemoteProxies reference (refer makes both reference
// cfg, named "curated"): one sync adds the kind's finalizer, then writes
// the hash, Valid and the referrers of both kinds (never a
// VirtualMCPServer), and a second sync of the written state sends nothing.
func testProxyConfigController[T ConfigObject](t *testing.T, kind ConfigKind[T], cfg T, refer func(*thv1.MCPServerSpec, *thv1.MCPRemoteProxySpec)) {
	t.Helper()
	s := server(testNS, "s", "")
	p := proxy(testNS, "p", "")
	refer(&s.Spec, &p.Spec)
	other := server(testNS, "unrelated", "")
	objs := []runtime.Object{cfg, s, p, other}

	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	if err := index.AddToInformers(factory); err != nil {
		t.Fatal(err)
	}
	c, err := NewConfigController(&framework.Deps{Toolhive: client, Scopes: []framework.Scope{{Toolhive: factory}},
		Recorder: record.NewFakeRecorder(10), Clock: testingclock.NewFakeClock(testNow)}, strings.ToLower(kind.Kind), kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	v := factory.Toolhive().V1beta1()
	cfgIndexer := kind.Informer(factory).GetIndexer()
	indexers := map[string]cache.Indexer{
		"cfg": cfgIndexer, "s": v.MCPServers().Informer().GetIndexer(),
		"p": v.MCPRemoteProxies().Informer().GetIndexer(), "unrelated": v.MCPServers().Informer().GetIndexer(),
	}
	for key, obj := range map[string]runtime.Object{"cfg": cfg, "s": s, "p": p, "unrelated": other} {
		if err := indexers[key].Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	// The referrers are the kinds the reference index says can make the
	// reference; refer sets it on both, and a kind that cannot make it
	// (MCPRemoteProxy for an MCPWebhookConfig) has no field to set.
	var kinds, wantKinds []string
	for _, r := range c.referrers {
		kinds = append(kinds, r.row.Kind)
	}
	var wantRefs []thv1.WorkloadReference
	for _, w := range index.ReferencedBy(kind.Index) {
		wantKinds = append(wantKinds, w.Kind)
	}
	if slices.Contains(wantKinds, thv1.KindMCPRemoteProxy) {
		wantRefs = append(wantRefs, wl(thv1.KindMCPRemoteProxy, "p"))
	}
	wantRefs = append(wantRefs, wl(thv1.KindMCPServer, "s"))
	if !reflect.DeepEqual(kinds, wantKinds) || !slices.Contains(kinds, thv1.KindMCPServer) {
		t.Errorf("referrer kinds = %q, want %q", kinds, wantKinds)
	}

	_, ctx := ktesting.NewTestContext(t)
	key := cache.NewObjectName(testNS, "curated")
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	acts := client.Actions()
	if len(acts) != 2 || acts[0].GetSubresource() != "" || acts[1].GetSubresource() != "status" {
		t.Fatalf("want a finalizer patch then a status patch, got %s", describe(acts))
	}
	got, err := kind.Get(indexerOf(t, client, kind), testNS, "curated")
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := configHash(kind.Spec(cfg))
	st := got.GetStatus()
	if !reflect.DeepEqual(got.GetFinalizers(), []string{kind.Finalizer}) || st.ConfigHash != hash ||
		!reflect.DeepEqual(st.ReferencingWorkloads, wantRefs) ||
		st.ReferenceCount != int32(len(wantRefs)) || !meta.IsStatusConditionTrue(st.Conditions, thv1.ConditionValid) {
		t.Fatalf("stored = %+v / %+v", got.GetFinalizers(), st)
	}

	client.ClearActions()
	if err := cfgIndexer.Update(got); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if acts := client.Actions(); len(acts) != 0 {
		t.Errorf("steady state wrote: %s", describe(acts))
	}
}

// indexerOf is an indexer holding what client stores of kind now.
func indexerOf[T ConfigObject](t *testing.T, client *fake.Clientset, kind ConfigKind[T]) cache.Indexer {
	t.Helper()
	objs, err := client.Tracker().List(thv1.SchemeGroupVersion.WithResource(kind.Resource), thv1.SchemeGroupVersion.WithKind(kind.Kind), testNS)
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(objs)
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range items {
		if err := indexer.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return indexer
}
