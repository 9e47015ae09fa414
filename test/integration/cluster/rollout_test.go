package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// A change of an MCPOIDCConfig rolls each MCPServer that references it
// exactly once: one new ReplicaSet per referrer, whose pods replace the
// old ones. While the controller manager turns the ReplicaSets over (pods
// created, scheduled, Ready; the old ones scaled down and deleted;
// Deployment status updated at every step, each an event hivekeeper's
// informers receive), hivekeeper writes nothing but a RunConfig and a
// Deployment per referrer and statuses; a server that does not reference
// the config is not touched. Then, resync after resync, nothing at all.
func TestConfigChangeRollsEachReferrerOnce(t *testing.T) {
	env, ns := start(t)
	ctx := testCtx(t)
	th := env.Toolhive.ToolhiveV1beta1()
	_, err := th.MCPOIDCConfigs(ns).Create(ctx, &thv1.MCPOIDCConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "idp"},
		Spec: thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeInline,
			Inline: &thv1.InlineOIDCConfig{Issuer: "https://idp.example.com"}},
	}, metav1.CreateOptions{})
	must(t, err)
	referrers := []string{"a", "b", "c"}
	for _, name := range append(slices.Clone(referrers), "other") {
		s := &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: thv1.MCPServerSpec{Image: "ghcr.io/example/fetch:1", Transport: thv1.TransportStreamableHTTP}}
		if name != "other" {
			s.Spec.OIDCConfigRef = &thv1.OIDCConfigReference{Name: "idp", Audience: "mcp"}
		}
		_, err := th.MCPServers(ns).Create(ctx, s, metav1.CreateOptions{})
		must(t, err)
		env.CreateRunnerObjects(t, ns, name, framework.RunnerLabels(name))
	}
	server := kinds[0]
	before := map[string]*appsv1.Deployment{}
	for _, name := range append(slices.Clone(referrers), "other") {
		before[name] = waitReady(ctx, t, env, server, ns, name)
		if rs := replicaSets(ctx, t, env, before[name]); len(rs) != 1 {
			t.Fatalf("%s: %d ReplicaSets before the change: %v", name, len(rs), rs)
		}
	}
	writes := workloadtest.Quiesce(t, resync*3, timeout, workloadControllers...)

	_, err = th.MCPOIDCConfigs(ns).Patch(ctx, "idp", types.MergePatchType,
		[]byte(`{"spec":{"inline":{"issuer":"https://idp2.example.com"}}}`), metav1.PatchOptions{})
	must(t, err)
	for _, name := range referrers {
		framework.Eventually(t, timeout, func() (bool, error) {
			d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			old := before[name].Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
			return d.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] != old && rolledOut(d), fmt.Errorf("status %+v", d.Status)
		}, "%s to roll out the new RunConfig", name)
		waitReady(ctx, t, env, server, ns, name)
	}
	delta := workloadtest.WritesBetween(writes, workloadtest.Quiesce(t, resync*3, timeout, workloadControllers...))

	for name, b := range before {
		d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		must(t, err)
		rolls, sets := int64(1), 2
		if name == "other" {
			rolls, sets = 0, 1
		}
		if d.Generation != b.Generation+rolls {
			t.Errorf("%s: Deployment generation %d -> %d, want %d roll(s)", name, b.Generation, d.Generation, rolls)
		}
		if rs := replicaSets(ctx, t, env, d); len(rs) != sets {
			t.Errorf("%s: %d ReplicaSets after the change, want %d: %v", name, len(rs), sets, rs)
		}
	}
	n := float64(len(referrers))
	want := map[string]float64{
		mcpserver.Name + " configmaps patch success":  n,
		mcpserver.Name + " deployments patch success": n,
	}
	if got := nonStatusWrites(delta); !maps.Equal(got, want) {
		t.Errorf("writes other than statuses while the referrers rolled: %v, want %v (all writes: %v)", got, want, delta)
	}
	t.Logf("writes while %d referrers rolled and their ReplicaSets turned over: %v", len(referrers), delta)
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*resync, workloadControllers...)
}

// `kubectl rollout restart` (an annotation on the pod template) and
// `kubectl scale` (the Deployment's scale subresource) are someone
// else's decisions: hivekeeper neither reverts them nor rolls the
// Deployment again, for each kind it deploys. Only the status follows
// (readyReplicas).
func TestRolloutRestartAndScaleAreLeftAlone(t *testing.T) {
	env, ns := start(t)
	ctx := testCtx(t)
	deps := map[string]*appsv1.Deployment{}
	for _, k := range kinds {
		k.create(ctx, t, env, ns, "w-"+strings.ToLower(k.kind))
	}
	for _, k := range kinds {
		deps[k.kind] = waitReady(ctx, t, env, k, ns, "w-"+strings.ToLower(k.kind))
	}
	writes := workloadtest.Quiesce(t, resync*3, timeout, workloadControllers...)

	const restartedAt = "kubectl.kubernetes.io/restartedAt"
	for _, k := range kinds {
		name := "w-" + strings.ToLower(k.kind)
		// What kubectl sends: a strategic merge patch of the template.
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:"2026-11-26T00:00:00Z"}}}}}`, restartedAt)
		_, err := env.Kube.AppsV1().Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		must(t, err)
		// What kubectl scale sends: a patch of the scale subresource.
		_, err = env.Kube.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}, "scale")
		must(t, err)
	}
	for _, k := range kinds {
		name := "w-" + strings.ToLower(k.kind)
		d := waitReady(ctx, t, env, k, ns, name)
		if d.Spec.Template.Annotations[restartedAt] == "" || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
			t.Errorf("%s: the restart or the replica count was reverted: annotations %v, replicas %v", k.kind, d.Spec.Template.Annotations, d.Spec.Replicas)
		}
		if d.Generation != deps[k.kind].Generation+2 {
			t.Errorf("%s: Deployment generation %d -> %d, want the restart and the scale only", k.kind, deps[k.kind].Generation, d.Generation)
		}
	}
	delta := workloadtest.WritesBetween(writes, workloadtest.Quiesce(t, resync*3, timeout, workloadControllers...))
	if got := nonStatusWrites(delta); len(got) != 0 {
		t.Errorf("hivekeeper wrote more than statuses after a restart and a scale: %v", got)
	}
	t.Logf("writes while the three Deployments restarted and scaled: %v", delta)
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*resync, workloadControllers...)
}
