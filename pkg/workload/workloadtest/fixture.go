// Package workloadtest is the shared fixture of the workload controllers'
// unit tests: fake clientsets, informer indexers seeded straight from what
// the fakes hold (informers never run), the API server's defaulting applied
// to written objects, and helpers to assert the exact actions of one sync.
// It is imported by tests only.
package workloadtest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
)

// Now is the fixed time of the fixtures' clocks.
var Now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// Fixture holds fake clientsets and the informer factories built on them.
// Build the controller from Deps, then call Refresh to seed the caches.
type Fixture struct {
	T                 *testing.T
	Kube              *k8sfake.Clientset
	Toolhive          *thfake.Clientset
	KubeInformers     kubeinformers.SharedInformerFactory
	ToolhiveInformers informers.SharedInformerFactory
	Recorder          *record.FakeRecorder
}

// New returns a fixture whose fakes hold objs. The reference indexes are
// added to the ToolHive informers as app.Start does.
func New(t *testing.T, objs ...runtime.Object) *Fixture {
	t.Helper()
	var kubeObjs, thObjs []runtime.Object
	for _, o := range objs {
		if IsToolhive(o) {
			thObjs = append(thObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &Fixture{T: t, Recorder: record.NewFakeRecorder(100)}
	f.Kube = k8sfake.NewClientset(kubeObjs...)
	f.Toolhive = thfake.NewSimpleClientset(thObjs...)
	f.KubeInformers = kubeinformers.NewSharedInformerFactory(f.Kube, 0)
	f.ToolhiveInformers = informers.NewSharedInformerFactory(f.Toolhive, 0)
	if err := index.AddToInformers(f.ToolhiveInformers); err != nil {
		t.Fatal(err)
	}
	return f
}

// Deps are the controller dependencies backed by the fixture: one scope,
// the fixed clock Now, no write gate.
func (f *Fixture) Deps(cfg framework.Config) *framework.Deps {
	return &framework.Deps{
		Kube: f.Kube, Toolhive: f.Toolhive,
		Scopes:   []framework.Scope{{Kube: f.KubeInformers, Toolhive: f.ToolhiveInformers}},
		Recorder: f.Recorder, Clock: clocktesting.NewFakePassiveClock(Now), Config: cfg,
	}
}

// IsToolhive reports whether o is one of the ToolHive kinds: a type the
// generated clientset's scheme registers in the ToolHive group.
func IsToolhive(o runtime.Object) bool {
	gvks, _, err := thscheme.Scheme.ObjectKinds(o)
	return err == nil && len(gvks) > 0 && gvks[0].Group == thv1.GroupName
}

// Refresh copies what the fakes hold into the informer indexers, as watch
// events would, and forgets the actions so far.
func (f *Fixture) Refresh() {
	f.T.Helper()
	ctx := context.Background()
	lo := metav1.ListOptions{}
	replace := func(inf cache.SharedIndexInformer, list runtime.Object, err error) {
		if err != nil {
			f.T.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			f.T.Fatal(err)
		}
		objs := make([]any, len(items))
		for i := range items {
			objs[i] = items[i]
		}
		if err := inf.GetIndexer().Replace(objs, ""); err != nil {
			f.T.Fatal(err)
		}
	}
	k, kf := f.Kube, f.KubeInformers
	l1, e1 := k.CoreV1().ConfigMaps("").List(ctx, lo)
	replace(kf.Core().V1().ConfigMaps().Informer(), l1, e1)
	l2, e2 := k.CoreV1().ServiceAccounts("").List(ctx, lo)
	replace(kf.Core().V1().ServiceAccounts().Informer(), l2, e2)
	l4, e4 := k.RbacV1().RoleBindings("").List(ctx, lo)
	replace(kf.Rbac().V1().RoleBindings().Informer(), l4, e4)
	l5, e5 := k.AppsV1().Deployments("").List(ctx, lo)
	replace(kf.Apps().V1().Deployments().Informer(), l5, e5)
	l6, e6 := k.CoreV1().Services("").List(ctx, lo)
	replace(kf.Core().V1().Services().Informer(), l6, e6)

	th, tf := f.Toolhive.ToolhiveV1beta1(), f.ToolhiveInformers.Toolhive().V1beta1()
	l7, e7 := th.MCPServers("").List(ctx, lo)
	replace(tf.MCPServers().Informer(), l7, e7)
	l8, e8 := th.MCPOIDCConfigs("").List(ctx, lo)
	replace(tf.MCPOIDCConfigs().Informer(), l8, e8)
	l9, e9 := th.MCPGroups("").List(ctx, lo)
	replace(tf.MCPGroups().Informer(), l9, e9)
	l10, e10 := th.MCPRemoteProxies("").List(ctx, lo)
	replace(tf.MCPRemoteProxies().Informer(), l10, e10)
	l11, e11 := th.VirtualMCPServers("").List(ctx, lo)
	replace(tf.VirtualMCPServers().Informer(), l11, e11)
	l12, e12 := th.MCPToolConfigs("").List(ctx, lo)
	replace(tf.MCPToolConfigs().Informer(), l12, e12)
	l13, e13 := th.MCPAuthzConfigs("").List(ctx, lo)
	replace(tf.MCPAuthzConfigs().Informer(), l13, e13)
	l14, e14 := th.MCPExternalAuthConfigs("").List(ctx, lo)
	replace(tf.MCPExternalAuthConfigs().Informer(), l14, e14)
	l15, e15 := th.MCPTelemetryConfigs("").List(ctx, lo)
	replace(tf.MCPTelemetryConfigs().Informer(), l15, e15)
	l16, e16 := th.MCPWebhookConfigs("").List(ctx, lo)
	replace(tf.MCPWebhookConfigs().Informer(), l16, e16)
	l17, e17 := th.MCPServerEntries("").List(ctx, lo)
	replace(tf.MCPServerEntries().Informer(), l17, e17)
	l18, e18 := th.VirtualMCPCompositeToolDefinitions("").List(ctx, lo)
	replace(tf.VirtualMCPCompositeToolDefinitions().Informer(), l18, e18)
	f.Kube.ClearActions()
	f.Toolhive.ClearActions()
}

// Writes returns the write actions sent since the last Refresh (reads are
// left out), Kubernetes actions before ToolHive ones.
func (f *Fixture) Writes() []core.Action {
	var out []core.Action
	for _, a := range append(f.Kube.Actions(), f.Toolhive.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a)
	}
	return out
}

// Converge calls sync until it writes nothing, applying the API server's
// behaviour and refreshing the caches between rounds; it fails the test
// when that takes more than a few rounds.
func (f *Fixture) Converge(sync func() error) {
	f.T.Helper()
	for range 6 {
		if err := sync(); err != nil {
			f.T.Fatalf("sync: %v", err)
		}
		if len(f.Writes()) == 0 {
			return
		}
		f.ApplyServerBehaviour()
		f.Refresh()
	}
	f.T.Fatalf("did not converge: last actions %s", Describe(f.Writes()))
}

// Events drains the recorded events.
func (f *Fixture) Events() []string {
	var out []string
	for {
		select {
		case e := <-f.Recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Verbs renders actions as "verb resource[/subresource]".
func Verbs(acts []core.Action) []string {
	out := make([]string, len(acts))
	for i, a := range acts {
		out[i] = a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			out[i] += "/" + a.GetSubresource()
		}
	}
	return out
}

// Describe renders actions with their patch bodies, for failure messages.
func Describe(acts []core.Action) string {
	var b strings.Builder
	for i, v := range Verbs(acts) {
		b.WriteString(v)
		if p, ok := acts[i].(core.PatchAction); ok {
			b.WriteString(" " + string(p.GetPatch()))
		}
		b.WriteString("; ")
	}
	return b.String()
}

// AssertActions fails unless got are exactly the actions want, in order
// ("create deployments", "patch mcpremoteproxies/status"); no want means
// no action at all.
func AssertActions(t *testing.T, got []core.Action, want ...string) {
	t.Helper()
	if g := Verbs(got); strings.Join(g, ",") != strings.Join(want, ",") {
		t.Fatalf("actions:\n got  %v\n want %v\n%s", g, want, Describe(got))
	}
}

// AssertNoActionOn fails when any action touched resource, for example
// mcpoidcconfigs, which only their own controller writes.
func AssertNoActionOn(t *testing.T, acts []core.Action, resource string) {
	t.Helper()
	for _, a := range acts {
		if a.GetResource().Resource == resource {
			t.Fatalf("action on %s: %s", resource, Describe([]core.Action{a}))
		}
	}
}

// PatchBody decodes the body of a patch action.
func PatchBody(t *testing.T, a core.Action) map[string]any {
	t.Helper()
	p, ok := a.(core.PatchAction)
	if !ok {
		t.Fatalf("%s is not a patch", a.GetVerb())
	}
	var m map[string]any
	if err := json.Unmarshal(p.GetPatch(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// NewOIDCConfig returns an MCPOIDCConfig with its status as the
// MCPOIDCConfig controller would have written it. An inline config has a
// client secret and a CA bundle ConfigMap named caBundle (none when empty).
func NewOIDCConfig(namespace, name string, inline bool, caBundle string, valid bool) *thv1.MCPOIDCConfig {
	cfg := &thv1.MCPOIDCConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPOIDCConfig},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("oidc-" + name),
			Generation: 1, ResourceVersion: "1"},
	}
	if inline {
		in := &thv1.InlineOIDCConfig{
			Issuer: "https://idp.example.com", JWKSURL: "https://idp.example.com/jwks", ClientID: "hive",
			ClientSecretRef: &thv1.SecretKeyRef{Name: "idp", Key: "secret"},
		}
		if caBundle != "" {
			in.CABundleRef = &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: caBundle, Key: "ca.crt"}}
		}
		cfg.Spec = thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeInline, Inline: in}
	} else {
		cfg.Spec = thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeKubernetesServiceAccount,
			KubernetesServiceAccount: &thv1.KubernetesServiceAccountOIDCConfig{Issuer: "https://kubernetes.default.svc"}}
	}
	status := metav1.ConditionTrue
	if !valid {
		status = metav1.ConditionFalse
	}
	cfg.Status = thv1.ConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
		Type: thv1.ConditionValid, Status: status, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
	}}}
	return cfg
}

// NewTelemetryConfig returns a valid MCPTelemetryConfig with its status as
// its controller would have written it, for one of the telemetry options
// every proxy kind is tested with: "otel" (OTLP tracing and metrics with
// plain and sensitive headers, resource attributes and a CA bundle
// ConfigMap named caBundle) or "prometheus" (scraping only).
func NewTelemetryConfig(namespace, name, option, caBundle string) *thv1.MCPTelemetryConfig {
	cfg := &thv1.MCPTelemetryConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPTelemetryConfig},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("telemetry-" + name),
			Generation: 1, ResourceVersion: "1"},
		Status: thv1.ConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
		}}},
	}
	switch option {
	case "otel":
		cfg.Spec.OpenTelemetry = &thv1.TelemetryOTelConfig{
			Enabled: true, Endpoint: "https://collector.monitoring:4318",
			Headers: map[string]string{"X-Tenant": "team-a"},
			SensitiveHeaders: []thv1.SensitiveHeader{
				{Name: "Authorization", SecretKeyRef: thv1.SecretKeyRef{Name: "otel-auth", Key: "token"}},
				{Name: "X-API-Key", SecretKeyRef: thv1.SecretKeyRef{Name: "otel-auth", Key: "key"}},
			},
			ResourceAttributes:  map[string]string{"deployment.environment": "test"},
			Tracing:             &thv1.OpenTelemetryTracingConfig{Enabled: true, SamplingRate: "0.25"},
			Metrics:             &thv1.OpenTelemetryMetricsConfig{Enabled: true},
			UseLegacyAttributes: true,
			CABundleRef:         &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: caBundle}},
		}
	case "prometheus":
		cfg.Spec.Prometheus = &thv1.PrometheusConfig{Enabled: true}
	}
	return cfg
}

// NewWebhookConfig returns a valid MCPWebhookConfig with its status as its
// controller would have written it, for one of the webhook options the
// MCPServer is tested with: "full" (a validating webhook with an HMAC key,
// a CA bundle and a client certificate, timeout 5s, failing open, and a
// mutating webhook with the same HMAC key) or "insecure" (one validating
// webhook over plain http with every default).
func NewWebhookConfig(namespace, name, option string) *thv1.MCPWebhookConfig {
	cfg := &thv1.MCPWebhookConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPWebhookConfig},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("webhook-" + name),
			Generation: 1, ResourceVersion: "1"},
		Status: thv1.ConfigStatus{ConfigHash: "hash-" + name, Conditions: []metav1.Condition{{
			Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
		}}},
	}
	hmac := &thv1.SecretKeyRef{Name: "webhook-hmac", Key: "key"}
	switch option {
	case "full":
		timeout := "5s"
		cfg.Spec.Validating = []thv1.WebhookSpec{{
			Name: "policy", URL: "https://policy.webhooks.svc/validate", Timeout: &timeout,
			FailurePolicy: thv1.WebhookFailurePolicyIgnore, HMACSecretRef: hmac,
			TLSConfig: &thv1.WebhookTLSConfig{
				CASecretRef:         &thv1.SecretKeyRef{Name: "webhook-tls", Key: "ca.crt"},
				ClientCertSecretRef: &thv1.SecretKeyRef{Name: "webhook-tls", Key: "tls.crt"},
				ClientKeySecretRef:  &thv1.SecretKeyRef{Name: "webhook-tls", Key: "tls.key"},
			},
		}}
		cfg.Spec.Mutating = []thv1.WebhookSpec{{
			Name: "redact", URL: "https://redact.webhooks.svc/mutate", FailurePolicy: thv1.WebhookFailurePolicyFail, HMACSecretRef: hmac,
		}}
	case "insecure":
		cfg.Spec.Validating = []thv1.WebhookSpec{{
			Name: "audit", URL: "http://audit.webhooks.svc:8080/validate",
			TLSConfig: &thv1.WebhookTLSConfig{InsecureSkipVerify: true},
		}}
	}
	return cfg
}

// NewCompositeTool returns a valid VirtualMCPCompositeToolDefinition (one
// tool step) with its status as its controller would have written it.
func NewCompositeTool(namespace, name, hash string) *thv1.VirtualMCPCompositeToolDefinition {
	return &thv1.VirtualMCPCompositeToolDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindVirtualMCPCompositeToolDefinition},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("ctd-" + name),
			Generation: 1, ResourceVersion: "1"},
		Spec: thv1.CompositeToolSpec{Name: name, Description: "test workflow",
			Steps: []thv1.WorkflowStep{{ID: "one", Tool: "backend.echo"}}},
		Status: thv1.VirtualMCPCompositeToolDefinitionStatus{
			ConfigStatus: thv1.ConfigStatus{ConfigHash: hash, Conditions: []metav1.Condition{{
				Type: thv1.ConditionValid, Status: metav1.ConditionTrue, Reason: thv1.ReasonConfigValid, LastTransitionTime: metav1.NewTime(Now),
			}}},
			ValidationStatus: thv1.ValidationStatusValid,
		},
	}
}

// NewGroup returns an MCPGroup.
func NewGroup(namespace, name string) *thv1.MCPGroup {
	return &thv1.MCPGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPGroup},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: k8stypes.UID("group-" + name), ResourceVersion: "1"},
	}
}

// ManagedServiceAccount is a ServiceAccount as hivekeeper creates it for a
// workload of kind ownerKind named owner: labelled toolhive=true and
// controlled by that workload.
func ManagedServiceAccount(namespace, name, ownerKind, owner string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: namespace, UID: k8stypes.UID("sa-" + name),
		Labels: map[string]string{"toolhive": "true", "toolhive-name": owner},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: thv1.SchemeGroupVersion.String(), Kind: ownerKind, Name: owner,
			UID: k8stypes.UID("uid-" + owner), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}}
}

// AssertRefusedServiceAccount checks one sync of a workload whose
// spec.serviceAccount names another workload's account: only its status
// was written (no child, the Deployment least of all), with Ready False for
// reason ServiceAccountNotAllowed, and one Warning event.
func (f *Fixture) AssertRefusedServiceAccount(t *testing.T, acts []core.Action, statusResource string, conditions []metav1.Condition) {
	t.Helper()
	AssertActions(t, acts, "patch "+statusResource+"/status")
	c := meta.FindStatusCondition(conditions, thv1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonServiceAccountNotAllowed || !strings.HasPrefix(c.Message, "spec.serviceAccount: ") {
		t.Errorf("Ready condition %+v", c)
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonServiceAccountNotAllowed+" spec.serviceAccount: ") {
		t.Errorf("events %q, want one Warning", evs)
	}
}

// RequeueSpy records the delays a controller asks its queue to look again
// after (AddAfter), and passes every call on.
type RequeueSpy struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]
	mu    sync.Mutex
	after []time.Duration
}

// SpyRequeues wraps the queue of loop.
func SpyRequeues(loop *framework.Loop) *RequeueSpy {
	s := &RequeueSpy{TypedRateLimitingInterface: loop.Queue}
	loop.Queue = s
	return s
}

// AddAfter records d.
func (s *RequeueSpy) AddAfter(key cache.ObjectName, d time.Duration) {
	s.mu.Lock()
	s.after = append(s.after, d)
	s.mu.Unlock()
	s.TypedRateLimitingInterface.AddAfter(key, d)
}

// After returns the delays recorded so far.
func (s *RequeueSpy) After() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.after...)
}
