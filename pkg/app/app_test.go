package app

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The caches NewDeps builds, filled by running informers (on fake
// clientsets, which apply label selectors to a list) through the real
// transforms: the proxy pods' cache holds only the MCPServers' and
// MCPRemoteProxies' proxy pods (not the MCP server's own pod the runner
// starts, labelled otherwise), each without its spec, so no credential of an environment variable is
// in memory; a labelled child is cached whole less its managedFields, but
// a runner's StatefulSet only as its metadata; a
// user's ConfigMap in the unfiltered cache keeps its keys, not its values.
func TestInformerTransforms(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	secretEnv := []corev1.EnvVar{{Name: "TOKEN", Value: "s3cr3t"}}
	proxyPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "remote-abc", Labels: naming.Labels(naming.AppMCPRemoteProxy, "remote"), ManagedFields: managed},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "toolhive", Image: "runner", Env: secretEnv}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "toolhive",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}}}}},
	}
	serverPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch-abc", Labels: naming.Labels(naming.AppMCPServer, "fetch")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "toolhive", Env: secretEnv}}},
	}
	runnerPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch-0", Labels: map[string]string{"toolhive": "true", "toolhive-name": "fetch", "app": "fetch"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mcp", Env: secretEnv}}},
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch", ManagedFields: managed,
		Labels: map[string]string{naming.LabelToolhive: "true"}}}
	runnerSTS := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch", ManagedFields: managed,
		Labels: map[string]string{naming.LabelToolhive: "true", naming.LabelToolhiveName: "fetch"}},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mcp", Env: secretEnv}}}}}}
	embeddingSTS := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "embed",
		Labels: map[string]string{naming.LabelName: "embeddingserver"}},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "embedding"}}}}}}
	userCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "corp-ca", ManagedFields: managed},
		Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----"}}

	d := NewDeps(k8sfake.NewClientset(proxyPod, serverPod, runnerPod, dep, runnerSTS, embeddingSTS, userCM), thfake.NewSimpleClientset(), Options{}, record.NewFakeRecorder(10))
	if len(d.Scopes) != 1 {
		t.Fatalf("%d scopes for all namespaces", len(d.Scopes))
	}
	s := d.Scopes[0]
	pods := s.Selected[naming.WorkloadPodSelector].Core().V1().Pods().Informer()
	deps := s.Kube.Apps().V1().Deployments().Informer()
	cms := s.KubeAll.Core().V1().ConfigMaps().Informer()
	runners := s.Kube.Apps().V1().StatefulSets().Informer()
	embeddings := s.Selected[naming.EmbeddingServerSelector].Apps().V1().StatefulSets().Informer()
	// A bound on a fake's list, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	for _, f := range s.Factories() {
		f.Start(ctx.Done())
	}
	// Shutdown waits for the informers, which stop once ctx is done.
	defer func() {
		cancel()
		for _, f := range s.Factories() {
			f.Shutdown()
		}
	}()
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, deps.HasSynced, cms.HasSynced, runners.HasSynced, embeddings.HasSynced) {
		t.Fatal("caches did not sync")
	}

	keys := func(inf cache.SharedIndexInformer) []string { return inf.GetStore().ListKeys() }
	if got := keys(pods); !slices.Equal(sorted(got), []string{"team-a/fetch-abc", "team-a/remote-abc"}) {
		t.Fatalf("proxy pods cache %v, want team-a/fetch-abc and team-a/remote-abc", got)
	}
	obj, _, _ := pods.GetStore().GetByKey("team-a/remote-abc")
	pod := obj.(*corev1.Pod)
	if len(pod.Spec.Containers) != 0 || pod.ManagedFields != nil {
		t.Errorf("pod cached with its spec or managedFields: %+v", pod)
	}
	if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "CrashLoopBackOff" {
		t.Errorf("pod status not kept: %+v", pod.Status)
	}
	obj, _, _ = deps.GetStore().GetByKey("team-a/fetch")
	if got, ok := obj.(*appsv1.Deployment); !ok || got.ManagedFields != nil || got.Labels[naming.LabelToolhive] != "true" {
		t.Errorf("deployment cached as %+v", obj)
	}
	// The runner's StatefulSet is cached as its metadata (its pod
	// template is the MCP server's, secrets included); an
	// EmbeddingServer's, from the factory of its own labels, whole.
	obj, _, _ = runners.GetStore().GetByKey("team-a/fetch")
	if got, ok := obj.(*appsv1.StatefulSet); !ok || len(got.Spec.Template.Spec.Containers) != 0 || got.ManagedFields != nil || got.Labels[naming.LabelToolhiveName] != "fetch" {
		t.Errorf("runner StatefulSet cached as %+v", obj)
	}
	obj, _, _ = embeddings.GetStore().GetByKey("team-a/embed")
	if got, ok := obj.(*appsv1.StatefulSet); !ok || len(got.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("EmbeddingServer StatefulSet cached as %+v", obj)
	}
	obj, _, _ = cms.GetStore().GetByKey("team-a/corp-ca")
	if got, ok := obj.(*corev1.ConfigMap); !ok || len(got.Data) != 1 || got.Data["ca.crt"] != "" || got.ManagedFields != nil {
		t.Errorf("user ConfigMap cached as %+v", obj)
	}
}

// Build makes the set Start runs; run on fakes, it is not idle before
// every controller has synced what it had at start, and once idle the
// MCPServer's children exist.
func TestBuildRunIdle(t *testing.T) {
	server := &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch", UID: "uid-fetch"},
		Spec: thv1.MCPServerSpec{Image: "example.com/fetch:1", Transport: thv1.TransportStdio, ProxyPort: 8080}}
	kube := k8sfake.NewClientset()
	set, err := Build(kube, thfake.NewSimpleClientset(server), Options{}, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	if set.Idle() {
		t.Fatal("idle before it ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- set.Run(ctx, nil) }()
	// A bound on the fakes' work, not a timing assertion.
	deadline := time.Now().Add(time.Minute)
	for !set.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("never idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AppsV1().Deployments("team-a").Get(context.Background(), "fetch", metav1.GetOptions{}); err != nil {
		t.Errorf("no proxy Deployment once idle: %v", err)
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// A standby (RunElected before it leads) keeps warm caches and does
// nothing else: its caches sync (ready closes), its queues stay empty, no
// write reaches the API server, and the usage metrics (whose instance id
// is a write) are not resolved. Once it leads, its workers start on those
// caches with every object enqueued once, and converge the MCPServer.
func TestWarmStandby(t *testing.T) {
	server := &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch", UID: "uid-fetch"},
		Spec: thv1.MCPServerSpec{Image: "example.com/fetch:1", Transport: thv1.TransportStdio, ProxyPort: 8080}}
	group := &thv1.MCPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "tools"}}
	kube := k8sfake.NewClientset()
	th := thfake.NewSimpleClientset(server, group)
	var resolved atomic.Int32
	opts := Options{ResolveUsageMetrics: func(context.Context) (wiring.UsageMetrics, error) {
		resolved.Add(1)
		return wiring.UsageMetrics{}, nil
	}}
	set, err := Build(kube, th, opts, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	lead := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- set.RunElected(ctx, ready, func(ctx context.Context, run func(context.Context) error) error {
			select {
			case <-lead:
				return run(ctx)
			case <-ctx.Done():
				return nil
			}
		})
	}()
	// A bound on the fakes' work, not a timing assertion.
	select {
	case <-ready:
	case <-time.After(time.Minute):
		t.Fatal("the standby's caches never synced")
	}
	// Every handler has seen every object once its registration synced.
	for _, c := range set.controllers {
		if !cache.WaitForCacheSync(ctx.Done(), c.(interface{ HasSynced() bool }).HasSynced) {
			t.Fatal("handlers never synced")
		}
	}
	for i, c := range set.controllers {
		if !c.Idle() {
			t.Errorf("controller %s of the standby has keys queued", Controllers()[i].Name)
		}
	}
	if w := writeActions(kube.Actions(), th.Actions()); len(w) != 0 {
		t.Fatalf("the standby wrote: %v", w)
	}
	if resolved.Load() != 0 {
		t.Fatal("the standby resolved the usage metrics (the instance id is a write)")
	}

	close(lead)
	deadline := time.Now().Add(time.Minute)
	for !set.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("the leader never went idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := kube.AppsV1().Deployments("team-a").Get(context.Background(), "fetch", metav1.GetOptions{}); err != nil {
		t.Errorf("no proxy Deployment once the leader is idle: %v", err)
	}
	if g, err := th.ToolhiveV1beta1().MCPGroups("team-a").Get(context.Background(), "tools", metav1.GetOptions{}); err != nil || g.Status.Phase == "" {
		t.Errorf("the group's status was never written: %+v, %v", g, err)
	}
	if n := resolved.Load(); n != 1 {
		t.Errorf("usage metrics resolved %d times by the leader, want once", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// writeActions are the actions that change something.
func writeActions(lists ...[]k8stesting.Action) []string {
	var out []string
	for _, acts := range lists {
		for _, a := range acts {
			switch a.GetVerb() {
			case "get", "list", "watch":
			default:
				out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
			}
		}
	}
	return out
}

// A replica whose leadership ends (elect returns) while its process goes
// on stops its informers and returns elect's result: the process then
// exits instead of waiting for informers that only a signal would stop.
func TestRunElectedReturnsWhenLeadershipEnds(t *testing.T) {
	set, err := Build(k8sfake.NewClientset(), thfake.NewSimpleClientset(), Options{}, record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	errLost := errors.New("leader election lost")
	done := make(chan error, 1)
	go func() {
		done <- set.RunElected(context.Background(), nil, func(ctx context.Context, lead func(context.Context) error) error {
			lctx, cancel := context.WithCancel(ctx)
			cancel()
			_ = lead(lctx)
			return errLost
		})
	}()
	// A bound on the fakes' work, not a timing assertion.
	select {
	case err := <-done:
		if !errors.Is(err, errLost) {
			t.Fatalf("RunElected returned %v, want %v", err, errLost)
		}
	case <-time.After(time.Minute):
		t.Fatal("RunElected never returned after leadership ended")
	}
}
