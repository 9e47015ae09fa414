package workload

import (
	"context"
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

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// The MCPToolConfig controller is the shared config controller.
func TestToolConfigControllerListsReferrersOfBothKinds(t *testing.T) {
	cfg := &thv1.MCPToolConfig{ObjectMeta: curated(), Spec: thv1.MCPToolConfigSpec{ToolsFilter: []string{"fetch"}}}
	testProxyConfigController(t, ToolConfigs, cfg, func(s *thv1.MCPServerSpec, p *thv1.MCPRemoteProxySpec) {
		s.ToolConfigRef = &thv1.ToolConfigReference{Name: "curated"}
		p.ToolConfigRef = &thv1.ToolConfigReference{Name: "curated"}
	})
}

// curated is the metadata of the config testProxyConfigController's
// workloads reference.
func curated() metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: testNS, Name: "curated", Generation: 1, ResourceVersion: "7"}
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

	c, client, factory, _ := newKindController(t, kind, objs...)
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
	// The kind's own reason (TestConfigKindsValidReasons: ToolHive's).
	wantReason := kind.ValidReason
	if wantReason == "" {
		wantReason = thv1.ReasonConfigValid
	}
	if c := meta.FindStatusCondition(st.Conditions, thv1.ConditionValid); c.Reason != wantReason {
		t.Errorf("Valid reason %q, want %q", c.Reason, wantReason)
	}

	resyncQuietly(ctx, t, c, client, cfgIndexer, got, key)
}

// newKindController is kind's controller on a fake clientset seeded with
// objs (the indexers are left empty: the caller seeds what it syncs).
func newKindController[T ConfigObject](t *testing.T, kind ConfigKind[T], objs ...runtime.Object) (*ConfigController[T], *fake.Clientset, informers.SharedInformerFactory, *record.FakeRecorder) {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	if err := index.AddToInformers(factory); err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(10)
	c, err := NewConfigController(&framework.Deps{Toolhive: client, Scopes: []framework.Scope{{Toolhive: factory}},
		Recorder: recorder, Clock: testingclock.NewFakeClock(testNow)}, strings.ToLower(kind.Kind), kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	return c, client, factory, recorder
}

// An MCPExternalAuthConfig of type obo is valid by its schema, but only
// ToolHive's enterprise build applies it: as ToolHive v0.63.0's
// open-source operator does, the controller marks it Valid=False with
// reason EnterpriseRequired and records one Warning ConfigInvalid event,
// then writes nothing more while it stays so.
func TestExternalAuthConfigOBOEnterpriseRequired(t *testing.T) {
	cfg := &thv1.MCPExternalAuthConfig{ObjectMeta: curated(), Spec: thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeOBO,
		OBO: &thv1.OBOConfig{}}}
	cfg.Finalizers = []string{thv1.MCPExternalAuthConfigFinalizer}
	c, client, factory, recorder := newKindController(t, ExternalAuthConfigs, cfg)
	indexer := ExternalAuthConfigs.Informer(factory).GetIndexer()
	if err := indexer.Add(cfg); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	key := cache.NewObjectName(testNS, "curated")
	if err := c.sync(ctx, key); err != nil {
		t.Fatalf("an obo config is not retried: %v", err)
	}
	if acts := client.Actions(); len(acts) != 1 || acts[0].GetSubresource() != "status" {
		t.Fatalf("want one status patch, got %s", describe(acts))
	}
	got, err := ExternalAuthConfigs.Get(indexerOf(t, client, ExternalAuthConfigs), testNS, "curated")
	if err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionValid)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != thv1.ReasonEnterpriseRequired {
		t.Fatalf("Valid = %+v, want False/%s", cond, thv1.ReasonEnterpriseRequired)
	}
	if e := drainEvents(recorder); len(e) != 1 || !strings.HasPrefix(e[0], "Warning "+thv1.ReasonConfigInvalid+" ") {
		t.Fatalf("want one Warning %s event, got %q", thv1.ReasonConfigInvalid, e)
	}

	resyncQuietly(ctx, t, c, client, indexer, got, key)
	if e := drainEvents(recorder); len(e) != 0 {
		t.Errorf("event repeated without a transition: %q", e)
	}
}

// resyncQuietly puts the config as written into the indexer, as its watch
// event would, syncs it again and fails on any write: the steady state.
func resyncQuietly[T ConfigObject](ctx context.Context, t *testing.T, c *ConfigController[T], client *fake.Clientset, indexer cache.Indexer, got T, key cache.ObjectName) {
	t.Helper()
	client.ClearActions()
	if err := indexer.Update(got); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if acts := client.Actions(); len(acts) != 0 {
		t.Errorf("steady state wrote: %s", describe(acts))
	}
}

// drainEvents returns the events recorded so far.
func drainEvents(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A workload's reference to an MCPExternalAuthConfig that is Valid=False
// carries the config's own reason and message, as ToolHive mirrors them
// onto ExternalAuthConfigValidated; the other kinds, the authServerRef
// reading of the same kind, and a config not yet validated keep
// hivekeeper's NotValid reason.
func TestInvalidReferenceReason(t *testing.T) {
	invalid := func(reason string) *thv1.MCPExternalAuthConfig {
		return &thv1.MCPExternalAuthConfig{Status: thv1.ConfigStatus{Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionFalse, Reason: reason, Message: "needs the enterprise build"}}}}
	}
	for _, tc := range []struct {
		name         string
		kind         ConfigKind[*thv1.MCPExternalAuthConfig]
		cfg          *thv1.MCPExternalAuthConfig
		reason, text string
	}{
		{"mirrored", ExternalAuthConfigs, invalid(thv1.ReasonEnterpriseRequired), thv1.ReasonEnterpriseRequired, "needs the enterprise build"},
		{"mirrored without a reason", ExternalAuthConfigs, invalid(""), thv1.ReasonInvalidExternalAuthConfig, "needs the enterprise build"},
		{"not yet validated", ExternalAuthConfigs, &thv1.MCPExternalAuthConfig{}, thv1.ReasonExternalAuthConfigNotValid, "is not valid"},
		{"authServerRef", AuthServerConfigs, invalid(thv1.ReasonEnterpriseRequired), thv1.ReasonAuthServerRefInvalidConfig, "is not valid"},
	} {
		ok, reason, message := tc.kind.check("entra", tc.cfg, true)
		if ok || reason != tc.reason || !strings.Contains(message, tc.text) {
			t.Errorf("%s: check = %v, %q, %q; want false, %q and a message with %q", tc.name, ok, reason, message, tc.reason, tc.text)
		}
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

// An MCPExternalAuthConfig named by authServerRef is referenced like one
// named by externalAuthConfigRef: its controller lists the referrer (once,
// when a workload names it both ways), which holds its deletion.
func TestExternalAuthConfigControllerListsAuthServerReferrers(t *testing.T) {
	cfg := &thv1.MCPExternalAuthConfig{ObjectMeta: curated(), Spec: thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeEmbeddedAuthServer,
		EmbeddedAuthServer: toolhivetest.Decode[thv1.EmbeddedAuthServerConfig](`{"issuer":"https://a.example.com",` +
			`"upstreamProviders":[{"name":"idp","type":"oidc","oidcConfig":{"issuerUrl":"https://idp.example.com","clientId":"c"}}]}`)}}
	testProxyConfigController(t, ExternalAuthConfigs, cfg, func(s *thv1.MCPServerSpec, p *thv1.MCPRemoteProxySpec) {
		s.AuthServerRef = &thv1.AuthServerRef{Kind: thv1.KindMCPExternalAuthConfig, Name: "curated"}
		s.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "curated"}
		p.AuthServerRef = &thv1.AuthServerRef{Kind: thv1.KindMCPExternalAuthConfig, Name: "curated"}
	})
}

func TestAuthzConfigControllerListsReferrersOfBothKinds(t *testing.T) {
	cfg := &thv1.MCPAuthzConfig{ObjectMeta: curated(), Spec: thv1.MCPAuthzConfigSpec{Type: thv1.AuthzTypeCedar,
		Config: runtime.RawExtension{Raw: []byte(`{"policies":["permit(principal, action == Action::\"list_tools\", resource);"]}`)}}}
	testProxyConfigController(t, AuthzConfigs, cfg, func(s *thv1.MCPServerSpec, p *thv1.MCPRemoteProxySpec) {
		s.AuthzConfigRef = &thv1.AuthzConfigReference{Name: "curated"}
		p.AuthzConfigRef = &thv1.AuthzConfigReference{Name: "curated"}
	})
}

func TestExternalAuthConfigControllerListsReferrersOfBothKinds(t *testing.T) {
	cfg := &thv1.MCPExternalAuthConfig{ObjectMeta: curated(), Spec: thv1.MCPExternalAuthConfigSpec{Type: thv1.ExternalAuthTypeUnauthenticated}}
	testProxyConfigController(t, ExternalAuthConfigs, cfg, func(s *thv1.MCPServerSpec, p *thv1.MCPRemoteProxySpec) {
		s.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "curated"}
		p.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "curated"}
	})
}

func TestTelemetryConfigControllerListsReferrersOfBothKinds(t *testing.T) {
	cfg := &thv1.MCPTelemetryConfig{ObjectMeta: curated(), Spec: thv1.MCPTelemetryConfigSpec{OpenTelemetry: &thv1.TelemetryOTelConfig{
		Enabled: true, Endpoint: "collector:4318", Metrics: &thv1.OpenTelemetryMetricsConfig{Enabled: true}}}}
	testProxyConfigController(t, TelemetryConfigs, cfg, func(s *thv1.MCPServerSpec, p *thv1.MCPRemoteProxySpec) {
		s.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "curated"}
		p.TelemetryConfigRef = &thv1.TelemetryConfigReference{Name: "curated", ServiceName: "remote"}
	})
}

func TestWebhookConfigControllerListsServers(t *testing.T) {
	cfg := &thv1.MCPWebhookConfig{ObjectMeta: curated(), Spec: thv1.MCPWebhookConfigSpec{
		Validating: []thv1.WebhookSpec{{Name: "policy", URL: "https://policy.example.com"}}}}
	testProxyConfigController(t, WebhookConfigs, cfg, func(s *thv1.MCPServerSpec, _ *thv1.MCPRemoteProxySpec) {
		s.WebhookConfigRef = &thv1.WebhookConfigReference{Name: "curated"}
	})
}
