package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// settle waits until hivekeeper's write count holds still for quiet, and
// returns the last scrape. A converged controller writes nothing.
func settle(t *testing.T, hk *hivekeeper, quiet time.Duration) samples {
	t.Helper()
	var last samples
	var lastWrites float64 = -1
	var since time.Time
	framework.Eventually(t, 60*time.Second, slowly(200*time.Millisecond, func() (bool, error) {
		m, err := hk.scrape()
		if err != nil {
			return false, err
		}
		w := m.sum(writesTotal, all)
		if w != lastWrites {
			lastWrites, since = w, time.Now()
		}
		last = m
		return time.Since(since) >= quiet, nil
	}), "hivekeeper's writes to hold still for %v", quiet)
	return last
}

// TestHandEditsOfChildren edits the proxy Deployment by hand (runner image,
// the runconfig-checksum template annotation, the replica count with
// spec.replicas unset), then deletes the Service and the ConfigMap, then
// removes a ToolHive label of the ConfigMap. hivekeeper repairs the
// template with exactly one patch, leaves the replica count alone (hands
// off), recreates what was deleted, takes the unlabelled ConfigMap back
// with one patch (no create first), and then writes nothing more.
func TestHandEditsOfChildren(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	hk := startHivekeeper(t, "hivekeeper", env.Kubeconfig, ns)
	hk.waitReady(t)
	name := createServers(t, env, ns, "edited", 1)[0]
	waitConverged(t, env, ns, []string{name})
	base := settle(t, hk, 2*time.Second)
	ctx := context.Background()

	orig := getDeployment(t, env, ns, name)
	wantImage := orig.Spec.Template.Spec.Containers[0].Image
	wantChecksum := orig.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
	if wantChecksum == "" {
		t.Fatalf("Deployment %s has no %s template annotation", name, naming.AnnotationRunConfigChecksum)
	}
	// One write by hand, so one repair is the right answer.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := getDeployment(t, env, ns, name)
		d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/evil:latest"
		delete(d.Spec.Template.Annotations, naming.AnnotationRunConfigChecksum)
		d.Spec.Replicas = ptr.To[int32](5)
		_, err := env.Kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, slowly(100*time.Millisecond, func() (bool, error) {
		d := getDeployment(t, env, ns, name)
		return d.Spec.Template.Spec.Containers[0].Image == wantImage &&
			d.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == wantChecksum, nil
	}), "the hand-edited template to be repaired")
	m := settle(t, hk, 2*time.Second)

	delta := func(name string, match map[string]string) float64 { return m.sum(name, match) - base.sum(name, match) }
	patches := delta(writesTotal, map[string]string{"resource": "deployments", "verb": "patch"})
	t.Logf("repair: %g Deployment patch(es); drift: %s", patches, m.series(driftTotal, map[string]string{"resource": "deployments"}))
	if patches != 1 {
		t.Errorf("the hand edit was repaired with %g Deployment patches, want exactly 1", patches)
	}
	if other := delta(writesTotal, all) - patches; other != 0 {
		t.Errorf("%g writes besides the Deployment patch: %s", other, m.series(writesTotal, all))
	}
	for _, field := range []string{drift.FieldContainerImage, drift.FieldTemplateAnnotations} {
		if delta(driftTotal, map[string]string{"resource": "deployments", "field": field}) < 1 {
			t.Errorf("no drift detection counted for %s", field)
		}
	}
	if n := delta(driftTotal, map[string]string{"resource": "deployments", "field": drift.FieldReplicas}); n != 0 {
		t.Errorf("spec.replicas counted as drift %g times with spec.replicas unset on the MCPServer", n)
	}
	if d := getDeployment(t, env, ns, name); d.Spec.Replicas == nil || *d.Spec.Replicas != 5 {
		t.Errorf("replicas = %v after the repair, want the hand-set 5 (hands off)", d.Spec.Replicas)
	}

	// Hand deletions are recreated, one at a time: deleting both at once
	// would let a sync run before the watch delivered the first recreated
	// child, and the duplicate create (AlreadyExists) is informer lag, not
	// what this test is about.
	svcName, cmName := naming.MCPServerServiceName(name), naming.RunConfigName(name)
	oldSvc, err := getService(env, ns, svcName)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.CoreV1().Services(ns).Delete(ctx, svcName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, slowly(100*time.Millisecond, func() (bool, error) {
		svc, err := getService(env, ns, svcName)
		if err != nil {
			return false, err
		}
		return svc.UID != oldSvc.UID, fmt.Errorf("not recreated yet")
	}), "the deleted Service to be recreated")
	settle(t, hk, time.Second)
	oldCM, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, cmName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, slowly(100*time.Millisecond, func() (bool, error) {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, cmName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if cm.UID == oldCM.UID {
			return false, fmt.Errorf("not recreated yet")
		}
		if !apiEqualMaps(cm.Data, oldCM.Data) {
			return false, fmt.Errorf("recreated ConfigMap differs: %v", cm.Data)
		}
		return true, nil
	}), "the deleted ConfigMap to be recreated")
	m2 := settle(t, hk, 2*time.Second)
	creates := m2.sum(writesTotal, map[string]string{"verb": "create"}) - m.sum(writesTotal, map[string]string{"verb": "create"})
	if other := m2.sum(writesTotal, all) - m.sum(writesTotal, all) - creates; other != 0 {
		t.Errorf("%g writes besides the two creates after the deletions: %s", other, m2.series(writesTotal, all))
	}
	if creates != 2 {
		t.Errorf("%g creates after deleting the Service and the ConfigMap, want 2", creates)
	}
	if d := getDeployment(t, env, ns, name); d.Spec.Replicas == nil || *d.Spec.Replicas != 5 {
		t.Errorf("replicas = %v at the end, want the hand-set 5", d.Spec.Replicas)
	}
	if churn := m2.sum(churnTotal, all); churn != 0 {
		t.Errorf("churn writes: %s, want none", m2.series(churnTotal, all))
	}

	// A label removed by hand: ConfigMaps are cached whatever their labels
	// (the RunConfig carries ToolHive's, not toolhive=true), so hivekeeper
	// sees the label drift and restores it with one patch, without trying
	// to create the ConfigMap first.
	before, after := env.UnlabelChild(t, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, cmName, "toolhive.stacklok.io/component")
	m3 := settle(t, hk, 2*time.Second)
	relabel := map[string]string{"resource": "configmaps", "verb": "patch"}
	relabelPatches := m3.sum(writesTotal, relabel) - m2.sum(writesTotal, relabel)
	if relabelPatches != 1 {
		t.Errorf("the label was restored with %g ConfigMap patches, want 1: %s", relabelPatches, m3.series(writesTotal, all))
	}
	if others := m3.sum(writesTotal, all) - m2.sum(writesTotal, all) - relabelPatches; others != 0 {
		t.Errorf("%g writes besides the ConfigMap patch after the label was removed: %s", others, m3.series(writesTotal, all))
	}
	if after != before {
		t.Errorf("the ConfigMap was replaced instead of taken back: UID %s -> %s", before, after)
	}
	if s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if s.Status.Phase == thv1.MCPServerPhaseFailed {
		t.Errorf("the server failed over its unlabelled ConfigMap: %+v", s.Status)
	}

	// And then it holds still: nothing more within a further quiet period.
	time.Sleep(2 * time.Second)
	if m4 := hk.mustScrape(t); m4.sum(writesTotal, all) != m3.sum(writesTotal, all) {
		t.Errorf("writes after converging: %s", m4.series(writesTotal, all))
	}
	recordFault(t,
		fmt.Sprintf("template repaired, hand-set replicas (5) kept, deleted children recreated, the unlabelled ConfigMap taken back (same UID); churn %g", m3.sum(churnTotal, all)),
		fmt.Sprintf("repair: %g Deployment patch; deletions: %g creates; label removal: %g ConfigMap patch",
			patches, creates, relabelPatches))
}

func apiEqualMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
