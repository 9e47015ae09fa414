// Package workloadtest is the shared fixture of the workload controllers'
// unit tests: fake clientsets, informer indexers seeded straight from what
// the fakes hold (informers never run), the API server's defaulting applied
// to written objects, and helpers to assert the exact actions of one sync.
// It is imported by tests only.
package workloadtest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// Fixture holds fake clientsets and the informer factories built on them.
// Build the controller from Deps, then call Refresh to seed the caches.
type Fixture struct {
	T                 *testing.T
	Kube              *k8sfake.Clientset
	Toolhive          *thfake.Clientset
	KubeInformers     kubeinformers.SharedInformerFactory
	ToolhiveInformers informers.SharedInformerFactory
	// SelectedInformers holds one factory per label selector of
	// Scope.Selected, as app.NewDeps builds them. Refresh fills each with
	// only the objects its selector matches: the fakes' informers never
	// run, so nothing else would apply the selector, and a controller
	// reading a selected cache must see what a real one holds (a proxy
	// whose pods another selector would miss stays Pending).
	SelectedInformers map[string]kubeinformers.SharedInformerFactory
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
	f.SelectedInformers = map[string]kubeinformers.SharedInformerFactory{}
	for _, sel := range selectors {
		f.SelectedInformers[sel] = kubeinformers.NewSharedInformerFactoryWithOptions(f.Kube, 0,
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	}
	return f
}

// VersionWrites makes the ToolHive fake answer every write as an API
// server does, with a new resourceVersion stored on the object (the fake
// alone keeps the version an object was seeded with). Tests of what a
// controller does with a cache behind its own writes need it.
func (f *Fixture) VersionWrites() {
	tracker := f.Toolhive.Tracker()
	react := core.ObjectReaction(tracker)
	var version atomic.Int64
	version.Store(1000)
	f.Toolhive.PrependReactor("*", "*", func(a core.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "create", "update", "patch":
		default:
			return false, nil, nil
		}
		handled, obj, err := react(a)
		if err != nil || obj == nil {
			return handled, obj, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		m.SetResourceVersion(strconv.FormatInt(version.Add(1), 10))
		return true, obj, tracker.Update(a.GetResource(), obj, a.GetNamespace())
	})
}

// ProxyPod is a proxy pod named pod of the workload name of kind app
// (naming.AppMCPServer, naming.AppMCPRemoteProxy), whose one container is
// in state.
func ProxyPod(namespace, app, name, pod string, phase corev1.PodPhase, state corev1.ContainerState) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod, Labels: naming.Labels(app, name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "toolhive", Env: []corev1.EnvVar{{Name: "TOKEN", Value: "literal"}}}}},
		Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: "toolhive", State: state}}},
	}
}

// Waiting is a container state waiting for reason.
func Waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "back-off restarting"}}
}

// ProxyPodsAndReady creates pods in the Kube fake and sets the Deployment
// namespace/name's status to one replica of which ready are ready, then
// refreshes the caches: what a workload's status reads of its proxy.
func (f *Fixture) ProxyPodsAndReady(namespace, name string, ready int32, pods ...*corev1.Pod) {
	f.T.Helper()
	ctx := context.Background()
	for _, pod := range pods {
		if _, err := f.Kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	dep, err := f.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	dep.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: ready}
	if _, err := f.Kube.AppsV1().Deployments(namespace).UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	f.Refresh()
}

// selectors are app.SelectedLabelSelectors (which this package cannot
// import: pkg/app imports the controllers).
var selectors = []string{naming.EmbeddingServerSelector, naming.RegistrySelector, naming.WorkloadPodSelector}

// Deps are the controller dependencies backed by the fixture: one scope
// (whose ChildLabelSelector and unfiltered factories are one, while each
// label selector of Selected has its own), the fixed clock Now, no write
// gate.
func (f *Fixture) Deps(cfg framework.Config) *framework.Deps {
	return &framework.Deps{
		Kube: f.Kube, Toolhive: f.Toolhive,
		Scopes:   []framework.Scope{{Kube: f.KubeInformers, KubeAll: f.KubeInformers, Toolhive: f.ToolhiveInformers, Selected: f.SelectedInformers}},
		Recorder: f.Recorder, Clock: clocktesting.NewFakePassiveClock(toolhivetest.Now), Config: cfg,
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
	// transformed fills a cache through its informers' transform.
	transformed := func(transform cache.TransformFunc) func(cache.SharedIndexInformer, runtime.Object, error) {
		return func(inf cache.SharedIndexInformer, list runtime.Object, err error) {
			if err != nil {
				f.T.Fatal(err)
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				f.T.Fatal(err)
			}
			objs := make([]any, len(items))
			for i := range items {
				if objs[i], err = transform(items[i]); err != nil {
					f.T.Fatal(err)
				}
			}
			if err := inf.GetIndexer().Replace(objs, ""); err != nil {
				f.T.Fatal(err)
			}
		}
	}
	replace := transformed(func(obj any) (any, error) { return obj, nil })
	// The kinds of Scope.KubeAll hold foreign objects as metadata, as
	// app.NewDeps's transform leaves them.
	replaceAll := transformed(framework.TrimForeign)
	k, kf := f.Kube, f.KubeInformers
	l1, e1 := k.CoreV1().ConfigMaps("").List(ctx, lo)
	replaceAll(kf.Core().V1().ConfigMaps().Informer(), l1, e1)
	l2, e2 := k.CoreV1().ServiceAccounts("").List(ctx, lo)
	replaceAll(kf.Core().V1().ServiceAccounts().Informer(), l2, e2)
	l4, e4 := k.RbacV1().RoleBindings("").List(ctx, lo)
	replaceAll(kf.Rbac().V1().RoleBindings().Informer(), l4, e4)
	l5, e5 := k.AppsV1().Deployments("").List(ctx, lo)
	replace(kf.Apps().V1().Deployments().Informer(), l5, e5)
	l6, e6 := k.CoreV1().Services("").List(ctx, lo)
	replace(kf.Core().V1().Services().Informer(), l6, e6)
	l19, e19 := k.AppsV1().StatefulSets("").List(ctx, lo)
	replace(kf.Apps().V1().StatefulSets().Informer(), l19, e19)
	// Each selected factory gets what the fake lists under its selector
	// (the generated fakes do apply label selectors to a list), the pods
	// trimmed as app.NewDeps's transform trims them.
	for sel, sf := range f.SelectedInformers {
		slo := metav1.ListOptions{LabelSelector: sel}
		ls, es := k.AppsV1().StatefulSets("").List(ctx, slo)
		replace(sf.Apps().V1().StatefulSets().Informer(), ls, es)
		ld, ed := k.AppsV1().Deployments("").List(ctx, slo)
		replace(sf.Apps().V1().Deployments().Informer(), ld, ed)
		lv, ev := k.CoreV1().Services("").List(ctx, slo)
		replace(sf.Core().V1().Services().Informer(), lv, ev)
		lp, ep := k.CoreV1().Pods("").List(ctx, slo)
		transformed(framework.TrimPod)(sf.Core().V1().Pods().Informer(), lp, ep)
	}

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
	l20, e20 := th.EmbeddingServers("").List(ctx, lo)
	replace(tf.EmbeddingServers().Informer(), l20, e20)
	l21, e21 := th.MCPRegistries("").List(ctx, lo)
	replace(tf.MCPRegistries().Informer(), l21, e21)
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

// Warnings drains the recorded events and returns the Warning ones.
func (f *Fixture) Warnings() []string {
	var out []string
	for _, e := range f.Events() {
		if strings.HasPrefix(e, corev1.EventTypeWarning+" ") {
			out = append(out, e)
		}
	}
	return out
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

// AssertRefusedServiceAccount checks one sync of a workload whose
// spec.serviceAccount names another workload's account: only its status
// was written (no child, the Deployment least of all), with Ready False for
// reason ServiceAccountNotAllowed, and one Warning event.
func (f *Fixture) AssertRefusedServiceAccount(t *testing.T, acts []core.Action, statusResource string, conditions []metav1.Condition) {
	t.Helper()
	AssertActions(t, acts, "patch "+statusResource+"/status")
	c := meta.FindStatusCondition(conditions, thv1.ConditionReady)
	reason := thv1.ReasonServiceAccountNotAllowed
	if statusResource == "mcpservers" {
		reason = thv1.ReasonNotReady // ToolHive's only Ready=False reason for the kind; the event names the cause
	}
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || !strings.HasPrefix(c.Message, "spec.serviceAccount: ") {
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
