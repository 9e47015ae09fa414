package mcpserverentry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

const testNS = "team-a"

type fixture struct {
	*wt.Fixture
	c *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fixture: wt.New(t, objs...)}
	c, err := New(f.Deps(framework.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Queue.ShutDown)
	f.c = c
	f.Refresh()
	return f
}

func (f *fixture) sync(name string) []core.Action {
	f.T.Helper()
	if err := f.c.sync(context.Background(), cache.NewObjectName(testNS, name)); err != nil {
		f.T.Fatal(err)
	}
	return f.Writes()
}

func (f *fixture) get(name string) *thv1.MCPServerEntry {
	f.T.Helper()
	e, err := f.Toolhive.ToolhiveV1beta1().MCPServerEntries(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return e
}

func newEntry(name string, mut ...func(*thv1.MCPServerEntry)) *thv1.MCPServerEntry {
	e := &thv1.MCPServerEntry{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPServerEntry},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: k8stypes.UID("entry-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: thv1.MCPServerEntrySpec{RemoteURL: "https://mcp.remote.example/mcp", Transport: thv1.TransportStreamableHTTP,
			GroupRef: &thv1.GroupRef{Name: "remote"}},
	}
	for _, m := range mut {
		m(e)
	}
	return e
}

func readyGroup(name string) *thv1.MCPGroup {
	g := toolhivetest.NewGroup(testNS, name)
	g.Status.Phase = thv1.MCPGroupPhaseReady
	return g
}

func authConfig(name string) *thv1.MCPExternalAuthConfig {
	return &thv1.MCPExternalAuthConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: thv1.SchemeGroupVersion.String(), Kind: thv1.KindMCPExternalAuthConfig},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, ResourceVersion: "1"},
	}
}

// condition returns the reason of condType, "" when absent, with its
// status.
func condition(e *thv1.MCPServerEntry, condType string) (metav1.ConditionStatus, string) {
	if c := meta.FindStatusCondition(e.Status.Conditions, condType); c != nil {
		return c.Status, c.Reason
	}
	return "", ""
}

// A valid entry is Valid with ToolHive's conditions and reasons, in one
// status patch; the next sync writes nothing.
func TestValidEntry(t *testing.T) {
	f := newFixture(t, readyGroup("remote"), authConfig("exchange"), newEntry("e", func(e *thv1.MCPServerEntry) {
		e.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "exchange"}
	}))
	wt.AssertActions(t, f.sync("e"), "patch mcpserverentries/status")
	e := f.get("e")
	if e.Status.Phase != thv1.MCPServerEntryPhaseValid || e.Status.ObservedGeneration != 1 {
		t.Errorf("phase %q generation %d", e.Status.Phase, e.Status.ObservedGeneration)
	}
	for condType, want := range map[string]string{
		thv1.ConditionValid:                       thv1.ReasonEntryValid,
		thv1.ConditionRemoteURLValidated:          thv1.ReasonRemoteURLValid,
		thv1.ConditionGroupRefValidated:           thv1.ReasonGroupRefValidated,
		thv1.ConditionExternalAuthConfigValidated: thv1.ReasonAuthConfigValid,
		thv1.ConditionCABundleRefValidated:        thv1.ReasonCABundleRefNotConfigured,
	} {
		if status, reason := condition(e, condType); status != metav1.ConditionTrue || reason != want {
			t.Errorf("%s = %s/%s, want True/%s", condType, status, reason, want)
		}
	}
	f.Refresh()
	wt.AssertActions(t, f.sync("e"))
	if ev := f.Events(); len(ev) != 0 {
		t.Errorf("events %q", ev)
	}
}

// Each failed check is its own condition, the entry is Failed with one
// Warning event naming the failures, nothing is retried, and fixing what
// was missing turns it Valid.
func TestFailedChecksThenRecovery(t *testing.T) {
	f := newFixture(t, newEntry("e", func(e *thv1.MCPServerEntry) {
		e.Spec.RemoteURL = "http://169.254.169.254/latest"
		e.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "missing"}
	}))
	wt.AssertActions(t, f.sync("e"), "patch mcpserverentries/status")
	e := f.get("e")
	if e.Status.Phase != thv1.MCPServerEntryPhaseFailed {
		t.Errorf("phase %q", e.Status.Phase)
	}
	for condType, want := range map[string]string{
		thv1.ConditionValid:                       thv1.ReasonEntryInvalid,
		thv1.ConditionRemoteURLValidated:          thv1.ReasonRemoteURLInvalid,
		thv1.ConditionGroupRefValidated:           thv1.ReasonGroupRefNotFound,
		thv1.ConditionExternalAuthConfigValidated: thv1.ReasonAuthConfigNotFound,
	} {
		if status, reason := condition(e, condType); status != metav1.ConditionFalse || reason != want {
			t.Errorf("%s = %s/%s, want False/%s", condType, status, reason, want)
		}
	}
	if ev := f.Events(); len(ev) != 1 || !strings.Contains(ev[0], "link-local") {
		t.Errorf("events %q", ev)
	}
	f.Refresh()
	wt.AssertActions(t, f.sync("e"))
	if ev := f.Events(); len(ev) != 0 {
		t.Errorf("repeated events %q", ev)
	}

	// A group that exists but is not Ready yet is not enough.
	notReady := toolhivetest.NewGroup(testNS, "remote")
	notReady.Status.Phase = ""
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPGroups(testNS).Create(context.Background(), notReady, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	f.sync("e")
	if _, reason := condition(f.get("e"), thv1.ConditionGroupRefValidated); reason != thv1.ReasonGroupRefNotReady {
		t.Errorf("group reason %q", reason)
	}

	fixed := f.get("e").DeepCopy()
	fixed.Spec.RemoteURL = "https://mcp.remote.example/mcp"
	fixed.Generation++
	for _, o := range []runtime.Object{readyGroup("remote"), authConfig("missing")} {
		var err error
		switch o := o.(type) {
		case *thv1.MCPGroup:
			_, err = f.Toolhive.ToolhiveV1beta1().MCPGroups(testNS).Update(context.Background(), o, metav1.UpdateOptions{})
		case *thv1.MCPExternalAuthConfig:
			_, err = f.Toolhive.ToolhiveV1beta1().MCPExternalAuthConfigs(testNS).Create(context.Background(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPServerEntries(testNS).Update(context.Background(), fixed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	wt.AssertActions(t, f.sync("e"), "patch mcpserverentries/status")
	if e := f.get("e"); e.Status.Phase != thv1.MCPServerEntryPhaseValid {
		t.Errorf("phase %q, conditions %+v", e.Status.Phase, e.Status.Conditions)
	}
}

// A private endpoint needs allowPrivateEndpoint.
func TestPrivateEndpoint(t *testing.T) {
	f := newFixture(t, readyGroup("remote"), newEntry("e", func(e *thv1.MCPServerEntry) {
		e.Spec.RemoteURL = "https://backend.tools.svc.cluster.local/mcp"
	}))
	f.sync("e")
	if status, reason := condition(f.get("e"), thv1.ConditionRemoteURLValidated); status != metav1.ConditionFalse || reason != thv1.ReasonRemoteURLInvalid {
		t.Errorf("private URL: %s/%s", status, reason)
	}
	allowed := f.get("e").DeepCopy()
	allowed.Spec.AllowPrivateEndpoint = true
	if _, err := f.Toolhive.ToolhiveV1beta1().MCPServerEntries(testNS).Update(context.Background(), allowed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	f.sync("e")
	e := f.get("e")
	if e.Status.Phase != thv1.MCPServerEntryPhaseValid {
		t.Errorf("phase %q, conditions %+v", e.Status.Phase, e.Status.Conditions)
	}
}

// The CA bundle ConfigMap is checked as ToolHive v0.63.0 checks an
// entry's: missing, CABundleRefValidated is False (CABundleRefNotFound)
// and the entry is not Valid, with one Warning event; its creation
// re-syncs exactly the entries naming it, which turn Valid
// (CABundleRefValid). Existence is all ToolHive asks of an entry's: a
// ConfigMap without the key passes. Its deletion fails the entry again.
func TestCABundleConfigMap(t *testing.T) {
	f := newFixture(t, readyGroup("remote"), newEntry("e", func(e *thv1.MCPServerEntry) {
		e.Spec.CABundleRef = &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "corp-ca", Key: "ca.crt"}}
	}), newEntry("other", func(e *thv1.MCPServerEntry) {
		e.Spec.CABundleRef = &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "another-ca"}}
	}))
	want := func(status metav1.ConditionStatus, reason, message string, phase string) {
		t.Helper()
		e := f.get("e")
		c := meta.FindStatusCondition(e.Status.Conditions, thv1.ConditionCABundleRefValidated)
		if c == nil || c.Status != status || c.Reason != reason || c.Message != message {
			t.Fatalf("CABundleRefValidated %+v, want %s/%s %q", c, status, reason, message)
		}
		if e.Status.Phase != phase {
			t.Fatalf("phase %q, want %q", e.Status.Phase, phase)
		}
		valid := meta.FindStatusCondition(e.Status.Conditions, thv1.ConditionValid)
		if valid == nil || (valid.Status == metav1.ConditionTrue) != (phase == thv1.MCPServerEntryPhaseValid) {
			t.Fatalf("Valid %+v with phase %s", valid, phase)
		}
	}
	wt.AssertActions(t, f.sync("e"), "patch mcpserverentries/status")
	want(metav1.ConditionFalse, thv1.ReasonCABundleRefNotFound, "Referenced CA bundle ConfigMap not found", thv1.MCPServerEntryPhaseFailed)
	if ev := f.Events(); len(ev) != 1 {
		t.Errorf("events %q, want one Warning", ev)
	}

	drain := func() []string {
		var keys []string
		for f.c.Queue.Len() > 0 {
			k, _ := f.c.Queue.Get()
			keys = append(keys, k.Name)
			f.c.Queue.Done(k)
		}
		return keys
	}
	drain()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "corp-ca"}, Data: map[string]string{"bundle.pem": "-----BEGIN CERTIFICATE-----"}}
	h := f.c.caBundleHandler()
	h.OnAdd(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "unrelated"}}, false)
	if got := drain(); len(got) != 0 {
		t.Errorf("an unrelated ConfigMap enqueued %q", got)
	}
	h.OnAdd(cm, false)
	if got := drain(); len(got) != 1 || got[0] != "e" {
		t.Errorf("the CA ConfigMap's creation enqueued %q, want [e]", got)
	}
	newer := cm.DeepCopy()
	newer.ResourceVersion = "2"
	h.OnUpdate(cm, newer)
	if got := drain(); len(got) != 0 {
		t.Errorf("a change of values only enqueued %q", got)
	}

	if _, err := f.Kube.CoreV1().ConfigMaps(testNS).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	wt.AssertActions(t, f.sync("e"), "patch mcpserverentries/status")
	want(metav1.ConditionTrue, thv1.ReasonCABundleRefValid, "Referenced CA bundle ConfigMap exists", thv1.MCPServerEntryPhaseValid)
	f.Refresh()
	wt.AssertActions(t, f.sync("e"))

	if err := f.Kube.CoreV1().ConfigMaps(testNS).Delete(context.Background(), "corp-ca", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	wt.AssertActions(t, f.sync("e"), "patch mcpserverentries/status")
	want(metav1.ConditionFalse, thv1.ReasonCABundleRefNotFound, "Referenced CA bundle ConfigMap not found", thv1.MCPServerEntryPhaseFailed)
}

// A group's phase change and an auth config's arrival re-sync exactly the
// entries that name them.
func TestReferencedObjectsEnqueueTheirEntries(t *testing.T) {
	f := newFixture(t, newEntry("uses", func(e *thv1.MCPServerEntry) {
		e.Spec.ExternalAuthConfigRef = &thv1.ExternalAuthConfigReference{Name: "exchange"}
	}), newEntry("other", func(e *thv1.MCPServerEntry) { e.Spec.GroupRef.Name = "elsewhere" }))
	drain := func() []string {
		var keys []string
		for f.c.Queue.Len() > 0 {
			k, _ := f.c.Queue.Get()
			keys = append(keys, k.Name)
			f.c.Queue.Done(k)
		}
		return keys
	}
	groups := f.c.groupsHandler()
	pending := toolhivetest.NewGroup(testNS, "remote")
	pending.Status.Phase = ""
	groups.OnUpdate(pending, readyGroup("remote"))
	if got := drain(); len(got) != 1 || got[0] != "uses" {
		t.Errorf("group phase change enqueued %q", got)
	}
	groups.OnUpdate(readyGroup("remote"), readyGroup("remote"))
	if got := drain(); len(got) != 0 {
		t.Errorf("unchanged group enqueued %q", got)
	}
	f.c.authHandler().OnAdd(authConfig("exchange"), false)
	if got := drain(); len(got) != 1 || got[0] != "uses" {
		t.Errorf("auth config enqueued %q", got)
	}
}

// A group being deleted is reported on its entry as ToolHive's group
// controller writes it on its members (GroupRefValidated False,
// GroupRefNotFound, "Referenced MCPGroup is being deleted"): here by the
// entry's own controller, woken by the start of the group's deletion.
func TestGroupBeingDeleted(t *testing.T) {
	g := readyGroup("remote")
	g.Finalizers = []string{thv1.MCPGroupFinalizer}
	ts := metav1.Now()
	g.DeletionTimestamp = &ts
	f := newFixture(t, g, newEntry("e"))
	wt.AssertActions(t, f.sync("e"), "patch mcpserverentries/status")
	e := f.get("e")
	c := meta.FindStatusCondition(e.Status.Conditions, thv1.ConditionGroupRefValidated)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != thv1.ReasonGroupRefNotFound || c.Message != "Referenced MCPGroup is being deleted" {
		t.Errorf("GroupRefValidated %+v", c)
	}
	if e.Status.Phase != thv1.MCPServerEntryPhaseFailed {
		t.Errorf("phase %q", e.Status.Phase)
	}
	for f.c.Queue.Len() > 0 {
		k, _ := f.c.Queue.Get()
		f.c.Queue.Done(k)
	}
	f.c.groupsHandler().OnUpdate(readyGroup("remote"), g)
	if n := f.c.Queue.Len(); n != 1 {
		t.Errorf("the start of the group's deletion enqueued %d entries, want 1", n)
	}
}
