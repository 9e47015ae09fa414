package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestDeletionAmongLookalikes: the MCPServer finalizer deletes what the
// proxy runner created, found by name, and names are shared by accident.
// Deleting MCPServer "postgres" must not delete the application's own
// StatefulSet "postgres" and its Services; deleting MCPServer "foo-proxy"
// must not delete mcp-foo-proxy, the proxy Service of MCPServer "foo".
// Every such object stays (same UID), each with a Warning event naming it,
// and hivekeeper sends no delete at all.
func TestDeletionAmongLookalikes(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	hk := startHivekeeper(t, "hivekeeper", env.Kubeconfig, ns)
	hk.waitReady(t)

	// Someone's database, under the names the runner of "postgres" uses.
	kept := env.CreateRunnerObjects(t, ns, "postgres", map[string]string{"app": "postgres"})
	for _, name := range []string{"postgres", "foo", "foo-proxy"} {
		if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(ctx, newServer(ns, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, env, ns, []string{"postgres", "foo", "foo-proxy"})
	fooService, err := getService(env, ns, naming.MCPServerServiceName("foo"))
	if err != nil {
		t.Fatal(err)
	}
	kept["Service/"+fooService.Name] = fooService
	deletes := func(m samples) float64 { return m.sum(writesTotal, map[string]string{"verb": "delete"}) }
	base := hk.mustScrape(t)

	for _, name := range []string{"postgres", "foo-proxy"} {
		if err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, 30*time.Second, slowly(100*time.Millisecond, func() (bool, error) {
		c, err := observe(env, ns)
		if err != nil {
			return false, err
		}
		return c.servers["postgres"] == nil && c.servers["foo-proxy"] == nil, nil
	}), "the MCPServers to be deleted (their finalizer released)")
	m := hk.mustScrape(t)

	for key, want := range kept {
		kind, name, _ := strings.Cut(key, "/")
		var got metav1.Object
		if kind == "StatefulSet" {
			got, err = env.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		} else {
			got, err = getService(env, ns, name)
		}
		switch {
		case apierrors.IsNotFound(err):
			t.Errorf("%s was deleted by a finalizer that does not own it", key)
		case err != nil:
			t.Fatal(err)
		case got.GetUID() != want.GetUID():
			t.Errorf("%s was replaced (UID %s, want %s)", key, got.GetUID(), want.GetUID())
		}
	}
	if d := deletes(m) - deletes(base); d != 0 {
		t.Errorf("%g deletes: %s", d, m.series(writesTotal, map[string]string{"verb": "delete"}))
	}
	// "postgres" reports its three lookalikes; "foo-proxy" reports
	// mcp-foo-proxy (its runner's headless Service name is free).
	var reported []string
	framework.Eventually(t, 20*time.Second, func() (bool, error) {
		events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		reported = reported[:0]
		for _, e := range events.Items {
			if e.Reason == thv1.ReasonCleanupSkipped && e.Type == corev1.EventTypeWarning {
				reported = append(reported, e.InvolvedObject.Name+": "+e.Message)
			}
		}
		return len(reported) == len(kept), fmt.Errorf("%d %s events, want %d: %q", len(reported), thv1.ReasonCleanupSkipped, len(kept), reported)
	}, "a Warning event for each object left alone")
	for key := range kept {
		kind, name, _ := strings.Cut(key, "/")
		if !strings.Contains(strings.Join(reported, "\n"), "Left "+kind+" "+ns+"/"+name+" in place: it lacks the label") {
			t.Errorf("no event names %s and why: %q", key, reported)
		}
	}
	recordFault(t,
		fmt.Sprintf("finalizers released; the %d lookalikes kept with their UIDs, each named in a Warning event (%s)", len(kept), thv1.ReasonCleanupSkipped),
		fmt.Sprintf("%g deletes", deletes(m)-deletes(base)))
}
