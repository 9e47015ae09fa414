package workload

import (
	"github.com/hivekeeper/hivekeeper/pkg/framework"

	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

const testNS = "team-a"

var (
	testNow    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	configsGVR = thv1.SchemeGroupVersion.WithResource(OIDCConfigs.Resource)
)

// fixture is a controller on fake clientsets whose informers are never
// started: objects are seeded straight into the indexers, the sync is called
// once, and the client actions are asserted exactly.
type fixture struct {
	t        testing.TB
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	recorder *record.FakeRecorder
	c        *ConfigController[*thv1.MCPOIDCConfig]
}

func newFixture(t testing.TB, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, client: fake.NewSimpleClientset(objs...), recorder: record.NewFakeRecorder(100)}
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	if err := index.AddToInformers(f.factory); err != nil {
		t.Fatal(err)
	}
	c, err := NewConfigController(&framework.Deps{Toolhive: f.client, Scopes: []framework.Scope{{Toolhive: f.factory}}, Recorder: f.recorder, Clock: testingclock.NewFakeClock(testNow)}, "mcpoidcconfig", OIDCConfigs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	for _, o := range objs {
		f.seed(o)
	}
	return f
}

// indexerFor returns the informer indexer holding obj's kind.
func (f *fixture) indexerFor(obj runtime.Object) cache.Indexer {
	v := f.factory.Toolhive().V1beta1()
	switch obj.(type) {
	case *thv1.MCPOIDCConfig:
		return v.MCPOIDCConfigs().Informer().GetIndexer()
	case *thv1.MCPServer:
		return v.MCPServers().Informer().GetIndexer()
	case *thv1.MCPRemoteProxy:
		return v.MCPRemoteProxies().Informer().GetIndexer()
	case *thv1.VirtualMCPServer:
		return v.VirtualMCPServers().Informer().GetIndexer()
	}
	f.t.Fatalf("no indexer for %T", obj)
	return nil
}

func (f *fixture) seed(obj runtime.Object) {
	f.t.Helper()
	if err := f.indexerFor(obj).Add(obj); err != nil {
		f.t.Fatal(err)
	}
}

// unseed removes a workload from its indexer, as its delete event would.
func (f *fixture) unseed(obj runtime.Object) {
	f.t.Helper()
	if err := f.indexerFor(obj).Delete(obj); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) sync(ns, name string) error {
	_, ctx := ktesting.NewTestContext(f.t)
	return f.c.sync(ctx, cache.NewObjectName(ns, name))
}

// mustSync syncs and fails on an error.
func (f *fixture) mustSync(ns, name string) {
	f.t.Helper()
	if err := f.sync(ns, name); err != nil {
		f.t.Fatalf("sync %s/%s: %v", ns, name, err)
	}
}

// actions returns the recorded client actions and clears them.
func (f *fixture) actions() []core.Action {
	a := f.client.Actions()
	f.client.ClearActions()
	return a
}

// stored reads a config as the fake API server holds it after the writes.
func (f *fixture) stored(ns, name string) *thv1.MCPOIDCConfig {
	f.t.Helper()
	obj, err := f.client.Tracker().Get(configsGVR, ns, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*thv1.MCPOIDCConfig)
}

// feedBack puts the stored config into the lister, as the informer would
// after the watch event of our own write.
func (f *fixture) feedBack(ns, name string) *thv1.MCPOIDCConfig {
	f.t.Helper()
	cfg := f.stored(ns, name)
	if err := f.indexerFor(cfg).Update(cfg); err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// events drains the fake recorder.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// expectNoActions asserts that nothing was sent to the API.
func (f *fixture) expectNoActions() {
	f.t.Helper()
	if a := f.actions(); len(a) != 0 {
		f.t.Fatalf("expected no actions, got %d: %s", len(a), describe(a))
	}
}

func describe(actions []core.Action) string {
	s := ""
	for _, a := range actions {
		s += fmt.Sprintf("\n  %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		if p, ok := a.(core.PatchAction); ok {
			s += " " + string(p.GetPatch())
		}
	}
	return s
}

// patchOf asserts that a is a merge patch of config name (on subresource)
// and returns its body decoded.
func patchOf(t *testing.T, a core.Action, name, subresource string) map[string]any {
	t.Helper()
	p, ok := a.(core.PatchAction)
	if !ok || a.GetVerb() != "patch" || a.GetResource() != configsGVR || a.GetSubresource() != subresource || p.GetName() != name {
		t.Fatalf("expected patch of %s %s subresource %q, got %s", OIDCConfigs.Resource, name, subresource, describe([]core.Action{a}))
	}
	if p.GetPatchType() != types.MergePatchType {
		t.Fatalf("expected a merge patch, got %s", p.GetPatchType())
	}
	var body map[string]any
	if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// expectJSON compares a decoded body with the JSON encoding of want.
func expectJSON(t *testing.T, got map[string]any, want any) {
	t.Helper()
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]any
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("patch body mismatch\n got: %s\nwant: %s", g, b)
	}
}

// expectBody asserts that a is a merge patch of config name (on
// subresource) whose body is, as JSON, exactly want.
func expectBody(t *testing.T, a core.Action, name, subresource, want string) {
	t.Helper()
	got := patchOf(t, a, name, subresource)
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("patch body mismatch\n got: %s\nwant: %s", a.(core.PatchAction).GetPatch(), want)
	}
}

// config returns a valid inline config that already carries the finalizer,
// so that a sync of it writes status only.
func config(ns, name string, mutate ...func(*thv1.MCPOIDCConfig)) *thv1.MCPOIDCConfig {
	c := &thv1.MCPOIDCConfig{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, Generation: 1, ResourceVersion: "7",
			Finalizers: []string{thv1.MCPOIDCConfigFinalizer},
		},
		Spec: thv1.MCPOIDCConfigSpec{
			Type:   thv1.OIDCConfigTypeInline,
			Inline: &thv1.InlineOIDCConfig{Issuer: "https://idp.example.com", JWKSURL: "https://idp.example.com/jwks"},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func ref(cfg string) *thv1.OIDCConfigReference {
	if cfg == "" {
		return nil
	}
	return &thv1.OIDCConfigReference{Name: cfg, Audience: "mcp"}
}

func server(ns, name, cfg string) *thv1.MCPServer {
	return &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Spec:       thv1.MCPServerSpec{Image: "ghcr.io/example/mcp:1", OIDCConfigRef: ref(cfg)},
	}
}

func proxy(ns, name, cfg string) *thv1.MCPRemoteProxy {
	return &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://remote.example.com/mcp", OIDCConfigRef: ref(cfg)},
	}
}

func vmcp(ns, name, cfg string) *thv1.VirtualMCPServer {
	auth := thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous}
	if cfg != "" {
		auth = thv1.IncomingAuth{Type: thv1.IncomingAuthOIDC, OIDCConfigRef: ref(cfg)}
	}
	return &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Spec:       thv1.VirtualMCPServerSpec{IncomingAuth: auth, GroupRef: thv1.GroupRef{Name: "g"}},
	}
}

func wl(kind, name string) thv1.WorkloadReference {
	return thv1.WorkloadReference{Kind: kind, Name: name}
}

// drain returns the keys in the queue.
func drain(c *ConfigController[*thv1.MCPOIDCConfig]) []string {
	var keys []string
	for c.Queue.Len() > 0 {
		k, _ := c.Queue.Get()
		keys = append(keys, k.String())
		c.Queue.Done(k)
	}
	return keys
}

// mustConfigHash is configHash for expectations.
func mustConfigHash(t testing.TB, cfg *thv1.MCPOIDCConfig) string {
	t.Helper()
	h, err := configHash(&cfg.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// validCondition is the Valid=True condition a sync at testNow writes.
func validCondition(gen int64) metav1.Condition {
	return metav1.Condition{
		Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid,
		Message: msgConfigValid, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(testNow),
	}
}
