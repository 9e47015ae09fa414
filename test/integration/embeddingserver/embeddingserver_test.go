// Package embeddingserver tests the EmbeddingServer controller against a
// real API server: its StatefulSet and Service as ToolHive's operator
// writes them, the phase following the StatefulSet's status, zero writes
// once converged (across informer resyncs), a spec change written once,
// ToolHive's finalizer released on deletion; and, with the VirtualMCPServer
// controller, that an EmbeddingServer becoming ready or moving with 100
// vMCPs naming it costs exactly the writes each of them needs.
package embeddingserver

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/embeddingserver"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// writers are every controller: at steady state none of them writes.
func writers() []string {
	var out []string
	for _, d := range app.Controllers() {
		out = append(out, d.Name)
	}
	return out
}

func createServer(t *testing.T, env *framework.Env, ns, name string, mut ...func(*thv1.EmbeddingServer)) {
	t.Helper()
	e := toolhivetest.NewEmbeddingServer(ns, name, mut...)
	e.UID, e.ResourceVersion, e.Generation = "", "", 0
	if _, err := env.Toolhive.ToolhiveV1beta1().EmbeddingServers(ns).Create(context.Background(), e, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating EmbeddingServer %s: %v", name, err)
	}
}

// markReady sets the StatefulSet's status as the StatefulSet controller
// and a kubelet would: replicas created, ready ones.
func markReady(t *testing.T, env *framework.Env, ns, name string, replicas, ready int32) {
	t.Helper()
	body := fmt.Sprintf(`{"status":{"replicas":%d,"readyReplicas":%d,"availableReplicas":%d}}`, replicas, ready, ready)
	if _, err := env.Kube.AppsV1().StatefulSets(ns).Patch(context.Background(), name, types.MergePatchType, []byte(body),
		metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("marking StatefulSet %s ready: %v", name, err)
	}
}

func waitPhase(t *testing.T, env *framework.Env, ns, name, phase string) *thv1.EmbeddingServer {
	t.Helper()
	var e *thv1.EmbeddingServer
	framework.Eventually(t, time.Minute, func() (bool, error) {
		var err error
		e, err = env.Toolhive.ToolhiveV1beta1().EmbeddingServers(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && e.Status.Phase == phase, err
	}, "EmbeddingServer %s in phase %s", name, phase)
	return e
}

func TestEmbeddingServerLifecycle(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	createServer(t, env, ns, "embed", toolhivetest.WithModelCache("5Gi"), func(e *thv1.EmbeddingServer) {
		e.Spec.HFTokenSecretRef = &thv1.SecretKeyRef{Name: "hf", Key: "token"}
		e.Spec.PodTemplateSpec = toolhivetest.Raw(toolhivetest.EmbeddingFullTemplate)
	})
	e := waitPhase(t, env, ns, "embed", thv1.EmbeddingServerPhasePending)
	if e.Status.URL != "http://embed."+ns+".svc.cluster.local:8080" || len(e.Finalizers) != 1 || e.Finalizers[0] != thv1.EmbeddingServerFinalizer {
		t.Errorf("status %+v, finalizers %v", e.Status, e.Finalizers)
	}
	sts, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, "embed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(sts.Labels, naming.EmbeddingServerLabels("embed")) || len(sts.Spec.VolumeClaimTemplates) != 1 ||
		sts.Spec.Template.Spec.NodeSelector["workload"] != "ml-inference" || len(sts.Spec.Template.Spec.InitContainers) != 1 {
		t.Errorf("StatefulSet %+v", sts)
	}
	if _, err := env.Kube.CoreV1().Services(ns).Get(ctx, "embed", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, writers()...)

	// The phase follows the StatefulSet's status, through its informer.
	markReady(t, env, ns, "embed", 1, 0)
	waitPhase(t, env, ns, "embed", thv1.EmbeddingServerPhaseDownloading)
	markReady(t, env, ns, "embed", 1, 1)
	if e := waitPhase(t, env, ns, "embed", thv1.EmbeddingServerPhaseReady); e.Status.ReadyReplicas != 1 {
		t.Errorf("readyReplicas %d", e.Status.ReadyReplicas)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 2*time.Second, writers()...)

	// A spec change is one StatefulSet patch.
	before := workloadtest.Quiesce(t, 2*time.Second, time.Minute, writers()...)
	if _, err := env.Toolhive.ToolhiveV1beta1().EmbeddingServers(ns).Patch(ctx, "embed", types.MergePatchType,
		[]byte(`{"spec":{"args":["--max-batch-tokens","16384"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		s, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, "embed", metav1.GetOptions{})
		return err == nil && strings.HasSuffix(strings.Join(s.Spec.Template.Spec.Containers[0].Args, " "), "--max-batch-tokens 16384"), err
	}, "the StatefulSet to carry the new arguments")
	delta := workloadtest.WritesBetween(before, workloadtest.Quiesce(t, 2*time.Second, time.Minute, writers()...))
	want := map[string]float64{
		embeddingserver.Name + " statefulsets patch success":            1,
		embeddingserver.Name + " embeddingservers/status patch success": 1, // observedGeneration
	}
	if !maps.Equal(delta, want) {
		t.Errorf("writes for a spec change = %v, want %v", delta, want)
	}

	// Deletion releases ToolHive's finalizer.
	if err := env.Toolhive.ToolhiveV1beta1().EmbeddingServers(ns).Delete(ctx, "embed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		_, err := env.Toolhive.ToolhiveV1beta1().EmbeddingServers(ns).Get(ctx, "embed", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}, "the EmbeddingServer to be finalized and gone")
}

// referrers is how many VirtualMCPServers name the EmbeddingServer.
const referrers = 100

// TestEmbeddingServerReadyWithHundredReferrers: 100 vMCPs naming one
// EmbeddingServer wait, with nothing written, while it is not ready; its
// readiness costs exactly the writes each of them needs to be deployed
// (session key Secret, account and its binding, config, Service,
// Deployment, status) and one status write of the EmbeddingServer; a new
// URL exactly a config and a Deployment patch each. Ten vMCPs naming another EmbeddingServer are not touched.
func TestEmbeddingServerReadyWithHundredReferrers(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, Workers: 4})
	th := env.Toolhive.ToolhiveV1beta1()
	if _, err := th.MCPGroups(ns).Create(ctx, &thv1.MCPGroup{ObjectMeta: metav1.ObjectMeta{Name: "g"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := th.MCPServers(ns).Create(ctx, &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: "backend"},
		Spec: thv1.MCPServerSpec{Image: "ghcr.io/example/mcp:1", GroupRef: &thv1.GroupRef{Name: "g"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createServer(t, env, ns, "embed")
	createServer(t, env, ns, "other")
	waitPhase(t, env, ns, "other", thv1.EmbeddingServerPhasePending)
	markReady(t, env, ns, "other", 1, 1)
	waitPhase(t, env, ns, "other", thv1.EmbeddingServerPhaseReady)
	for i := range referrers + 10 {
		es := "embed"
		if i >= referrers {
			es = "other"
		}
		v := &thv1.VirtualMCPServer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("v-%03d", i)},
			Spec: thv1.VirtualMCPServerSpec{IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous}, GroupRef: thv1.GroupRef{Name: "g"},
				EmbeddingServerRef: &thv1.EmbeddingServerRef{Name: es}}}
		if _, err := th.VirtualMCPServers(ns).Create(ctx, v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The referrers wait, Pending, with nothing deployed; the others run.
	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		list, err := th.VirtualMCPServers(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		waiting := 0
		for _, v := range list.Items {
			if v.Status.Message == "Waiting for EmbeddingServer to become ready" {
				waiting++
			}
		}
		return waiting == referrers && len(deployments(t, env, ns)) == 10, nil
	}, "%d vMCPs waiting and 10 deployed", referrers)

	before := workloadtest.Quiesce(t, 2*time.Second, 2*time.Minute, writers()...)
	old := deployments(t, env, ns)
	start := time.Now()
	markReady(t, env, ns, "embed", 1, 1)
	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		return len(deployments(t, env, ns)) == referrers+10, nil
	}, "the %d referrers to be deployed", referrers)
	t.Logf("the EmbeddingServer becoming ready deployed its %d referrers in %v", referrers, time.Since(start).Round(time.Millisecond))
	delta := workloadtest.WritesBetween(before, workloadtest.Quiesce(t, 2*time.Second, 2*time.Minute, writers()...))
	want := map[string]float64{
		embeddingserver.Name + " embeddingservers/status patch success":   1,
		virtualmcpserver.Name + " secrets create success":                 referrers,
		virtualmcpserver.Name + " serviceaccounts create success":         referrers,
		virtualmcpserver.Name + " rolebindings create success":            referrers,
		virtualmcpserver.Name + " configmaps create success":              referrers,
		virtualmcpserver.Name + " services create success":                referrers,
		virtualmcpserver.Name + " deployments create success":             referrers,
		virtualmcpserver.Name + " virtualmcpservers/status patch success": referrers,
	}
	if !maps.Equal(delta, want) {
		t.Errorf("writes for the EmbeddingServer becoming ready = %v, want %v", delta, want)
	}
	checkUntouched(t, old, deployments(t, env, ns))
	url := "http://embed." + ns + ".svc.cluster.local:8080"
	for i := range referrers {
		if name := fmt.Sprintf("v-%03d", i); !strings.Contains(configOf(t, env, ns, name), "embeddingService: "+url) {
			t.Errorf("%s: config.yaml does not call %s", name, url)
		}
	}

	// A new port: a new URL, rolled into each referrer once.
	before = workloadtest.Quiesce(t, 2*time.Second, 2*time.Minute, writers()...)
	old = deployments(t, env, ns)
	start = time.Now()
	if _, err := th.EmbeddingServers(ns).Patch(ctx, "embed", types.MergePatchType, []byte(`{"spec":{"port":9000}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		now := deployments(t, env, ns)
		rolled := 0
		for name, sum := range now {
			if sum != old[name] {
				rolled++
			}
		}
		return rolled == referrers, nil
	}, "the referrers to roll")
	took := time.Since(start)
	delta = workloadtest.WritesBetween(before, workloadtest.Quiesce(t, 2*time.Second, 2*time.Minute, writers()...))
	want = map[string]float64{
		embeddingserver.Name + " statefulsets patch success":            1,
		embeddingserver.Name + " services patch success":                1,
		embeddingserver.Name + " embeddingservers/status patch success": 1,
		virtualmcpserver.Name + " configmaps patch success":             referrers,
		virtualmcpserver.Name + " deployments patch success":            referrers,
	}
	if !maps.Equal(delta, want) {
		t.Errorf("writes for the EmbeddingServer's new URL = %v, want %v", delta, want)
	}
	checkUntouched(t, old, deployments(t, env, ns))
	t.Logf("a new EmbeddingServer URL with %d referrers rolled them in %v", referrers, took.Round(time.Millisecond))
}

// deployments are the vMCP Deployments of ns by name, with their config
// checksum.
func deployments(t *testing.T, env *framework.Env, ns string) map[string]string {
	t.Helper()
	list, err := env.Kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{LabelSelector: naming.LabelName + "=" + naming.AppVirtualMCPServer})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range list.Items {
		out[d.Name] = d.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
	}
	return out
}

// checkUntouched fails when one of the ten vMCPs naming the other
// EmbeddingServer changed.
func checkUntouched(t *testing.T, old, now map[string]string) {
	t.Helper()
	for i := referrers; i < referrers+10; i++ {
		if name := fmt.Sprintf("v-%03d", i); now[name] != old[name] {
			t.Errorf("%s names the other EmbeddingServer and rolled", name)
		}
	}
}

func configOf(t *testing.T, env *framework.Env, ns, name string) string {
	t.Helper()
	cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), naming.VMCPConfigMapName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data[naming.VMCPConfigKey]
}
