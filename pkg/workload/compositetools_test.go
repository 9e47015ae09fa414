package workload

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// compositeFixture is the config controller of the composite tool kind on
// fake clientsets whose informers are never started.
type compositeFixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	recorder *record.FakeRecorder
	c        *ConfigController[*thv1.VirtualMCPCompositeToolDefinition]
}

func newCompositeFixture(t *testing.T, objs ...runtime.Object) *compositeFixture {
	f := &compositeFixture{t: t, client: fake.NewSimpleClientset(objs...), recorder: record.NewFakeRecorder(10)}
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	if err := index.AddToInformers(f.factory); err != nil {
		t.Fatal(err)
	}
	c, err := NewConfigController(&framework.Deps{Toolhive: f.client, Scopes: []framework.Scope{{Toolhive: f.factory}},
		Recorder: f.recorder, Clock: testingclock.NewFakeClock(testNow)}, "virtualmcpcompositetooldefinition", CompositeToolDefinitions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	f.refresh()
	return f
}

// refresh copies what the fake holds into the indexers and forgets the
// actions so far.
func (f *compositeFixture) refresh() {
	ctx, v := context.Background(), f.factory.Toolhive().V1beta1()
	defs, _ := f.client.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions("").List(ctx, metav1.ListOptions{})
	servers, _ := f.client.ToolhiveV1beta1().VirtualMCPServers("").List(ctx, metav1.ListOptions{})
	var a, b []any
	for i := range defs.Items {
		a = append(a, &defs.Items[i])
	}
	for i := range servers.Items {
		b = append(b, &servers.Items[i])
	}
	if err := v.VirtualMCPCompositeToolDefinitions().Informer().GetIndexer().Replace(a, ""); err != nil {
		f.t.Fatal(err)
	}
	if err := v.VirtualMCPServers().Informer().GetIndexer().Replace(b, ""); err != nil {
		f.t.Fatal(err)
	}
	f.client.ClearActions()
}

func (f *compositeFixture) sync(name string) []string {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	if err := f.c.sync(ctx, cache.NewObjectName(testNS, name)); err != nil {
		f.t.Fatal(err)
	}
	var verbs []string
	for _, a := range f.client.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	return verbs
}

func (f *compositeFixture) get(name string) *thv1.VirtualMCPCompositeToolDefinition {
	d, err := f.client.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

func compositeDef(name string, spec thv1.CompositeToolSpec) *thv1.VirtualMCPCompositeToolDefinition {
	return &thv1.VirtualMCPCompositeToolDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Generation: 1, ResourceVersion: "1"},
		Spec:       spec,
	}
}

func vmcpWithTools(name, refs string) *thv1.VirtualMCPServer {
	v := vmcp(testNS, name, "")
	v.Spec.Config = toolhivetest.Decode[thv1.VirtualMCPConfig](`{"compositeToolRefs":` + refs + `}`)
	return v
}

// A definition gets the finalizer, a configHash, Valid and ToolHive's own
// status fields, and lists exactly the VirtualMCPServers whose
// spec.config.compositeToolRefs name it (one of several names counts); a
// second sync writes nothing.
func TestCompositeToolDefinitionStatus(t *testing.T) {
	f := newCompositeFixture(t, compositeDef("deploy", toolhivetest.CompositeTool()),
		vmcpWithTools("b", `[{"name":"other"},{"name":"deploy"}]`), vmcpWithTools("a", `[{"name":"deploy"}]`),
		vmcpWithTools("c", `[{"name":"other"}]`), vmcp(testNS, "plain", ""))
	if got := f.sync("deploy"); !slices.Equal(got, []string{"patch virtualmcpcompositetooldefinitions/", "patch virtualmcpcompositetooldefinitions/status"}) {
		t.Fatalf("writes %q", got)
	}
	d := f.get("deploy")
	if !slices.Contains(d.Finalizers, thv1.VirtualMCPCompositeToolDefinitionFinalizer) {
		t.Errorf("finalizers %q", d.Finalizers)
	}
	s := d.Status
	if s.ConfigHash == "" || s.ValidationStatus != thv1.ValidationStatusValid || s.ValidationErrors != nil ||
		!slices.Equal(s.ReferencingVirtualServers, []string{"a", "b"}) || s.ReferenceCount != 2 ||
		!meta.IsStatusConditionTrue(s.Conditions, thv1.ConditionValid) {
		t.Errorf("status %+v", s)
	}
	f.refresh()
	if got := f.sync("deploy"); len(got) != 0 {
		t.Errorf("steady state wrote %q", got)
	}
}

// An invalid definition is Valid=False and Invalid with every problem in
// validationErrors, with one Warning event; it is not retried.
func TestCompositeToolDefinitionInvalid(t *testing.T) {
	spec := toolhivetest.CompositeTool()
	spec.Description = ""
	spec.Steps[0].Tool = ""
	f := newCompositeFixture(t, compositeDef("deploy", spec))
	f.sync("deploy")
	s := f.get("deploy").Status
	if s.ValidationStatus != thv1.ValidationStatusInvalid || len(s.ValidationErrors) != 2 || !meta.IsStatusConditionFalse(s.Conditions, thv1.ConditionValid) {
		t.Errorf("status %+v", s)
	}
	if len(f.recorder.Events) != 1 {
		t.Errorf("events: %d", len(f.recorder.Events))
	}
	f.refresh()
	if got := f.sync("deploy"); len(got) != 0 {
		t.Errorf("steady state wrote %q", got)
	}
}

// The index reads spec.config.compositeToolRefs: several names, sorted
// and without duplicates; a config that is not an object references none.
func TestCompositeToolRefNames(t *testing.T) {
	for _, c := range []struct {
		config *thv1.VirtualMCPConfig
		want   []string
	}{
		{&thv1.VirtualMCPConfig{CompositeToolRefs: []thv1.VMCPCompositeToolRef{{Name: "b"}, {Name: "a"}, {Name: "b"}}}, []string{"a", "b"}},
		{&thv1.VirtualMCPConfig{Aggregation: &thv1.VMCPAggregation{}}, nil},
		{nil, nil},
	} {
		v := vmcp(testNS, "v", "")
		v.Spec.Config = c.config
		if got := thv1.VMCPCompositeToolNames(v); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.config, got, c.want)
		}
	}
}
