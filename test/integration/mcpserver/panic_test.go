package mcpserver_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/metrics"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestPanicInOneSyncSparesTheOthers: the sync of one MCPServer panics
// (the drift observer, called in the middle of its sync, stands in for a
// builder's bug met by one stored object) every time it runs. The
// controllers run in this test's process, so an unrecovered panic would end
// it. The panic is recovered and counted, the server is retried with
// backoff, and the other servers' changes, and a new server, converge.
func TestPanicInOneSyncSparesTheOthers(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	var panicked atomic.Int32
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, Drift: func(_, resource string, obj klog.ObjectRef, _ []string) {
		if resource == "deployments" && obj.Name == "bad" {
			panicked.Add(1)
			panic("injected: a builder's bug met by one object")
		}
	}})
	panicsBefore := counter(t, "hivekeeper_sync_panics_total", map[string]string{"controller": mcpserver.Name})
	for _, name := range []string{"bad", "good"} {
		if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, newServerObj(ns, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConverged(t, env, ns, name)
	}

	// A new image changes both Deployments' templates: each sync finds
	// drift, and bad's panics.
	for _, name := range []string{"bad", "good"} {
		if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"image":"ghcr.io/example/fetch:2.0"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, settle, func() (bool, error) {
		return panicked.Load() >= 3, fmt.Errorf("%d panics", panicked.Load())
	}, "the panicking sync to be retried")
	if _, err := env.Dynamic.Resource(serversGVR).Namespace(ns).Create(ctx, newServerObj(ns, "later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, env, ns, "later")
	framework.Eventually(t, settle, func() (bool, error) {
		s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, "good", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Generation == 2 && s.Status.ObservedGeneration == 2, fmt.Errorf("good at generation %d, observed %d", s.Generation, s.Status.ObservedGeneration)
	}, "good's new image to be applied")
	if _, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "bad", metav1.GetOptions{}); err != nil {
		t.Fatalf("bad's Deployment: %v", err)
	}
	got := counter(t, "hivekeeper_sync_panics_total", map[string]string{"controller": mcpserver.Name}) - panicsBefore
	if got < 3 || got != float64(panicked.Load()) {
		t.Errorf("hivekeeper_sync_panics_total grew by %v, want every one of the %d panics", got, panicked.Load())
	}
	if keys := gauge(t, "hivekeeper_keys_in_backoff", map[string]string{"controller": mcpserver.Name}); keys != 1 {
		t.Errorf("hivekeeper_keys_in_backoff = %v, want 1 (bad)", keys)
	}
}

// gauge sums a hivekeeper gauge over the series whose labels match.
func gauge(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, match) {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
