package mcpserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcptelemetryconfig"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// On a real API server, with the MCPTelemetryConfig controller publishing
// the hash: a server that references a config converges with its
// telemetry wired and then writes nothing through one-second resyncs; a
// change of the config rolls the proxy exactly once (the config's spec
// and its new hash arrive as separate events), and it is quiet again.
func TestTelemetryConfigChangeRollsOnce(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	controllers := []string{mcpserver.Name, mcptelemetryconfig.Name, mcpgroup.Name}

	th := env.Toolhive.ToolhiveV1beta1()
	if _, err := th.MCPTelemetryConfigs(ns).Create(ctx, &thv1.MCPTelemetryConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "otel"},
		Spec: thv1.MCPTelemetryConfigSpec{OpenTelemetry: &thv1.TelemetryOTelConfig{
			Enabled: true, Endpoint: "collector.monitoring:4318",
			Tracing:          &thv1.OpenTelemetryTracingConfig{Enabled: true, SamplingRate: "0.1"},
			SensitiveHeaders: []thv1.SensitiveHeader{{Name: "Authorization", SecretKeyRef: thv1.SecretKeyRef{Name: "otel", Key: "token"}}},
			CABundleRef:      &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "collector-ca"}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := th.MCPServers(ns).Create(ctx, &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "fetch"},
		Spec: thv1.MCPServerSpec{Image: "ghcr.io/example/fetch:1.0", Transport: thv1.TransportStreamableHTTP,
			TelemetryConfigRef: &thv1.TelemetryConfigReference{Name: "otel", ServiceName: "fetch-svc"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	converged := func(what string) *appsv1.Deployment {
		t.Helper()
		var dep *appsv1.Deployment
		framework.Eventually(t, settle, func() (bool, error) {
			cfg, err := th.MCPTelemetryConfigs(ns).Get(ctx, "otel", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s, err := th.MCPServers(ns).Get(ctx, "fetch", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			dep, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
			ok := err == nil && cfg.Status.ConfigHash != "" && s.Status.TelemetryConfigHash == cfg.Status.ConfigHash &&
				meta.IsStatusConditionTrue(s.Status.Conditions, thv1.ConditionTelemetryConfigRefValidated) &&
				len(cfg.Status.ReferencingWorkloads) == 1
			return ok, fmt.Errorf("server status %+v, config status %+v", s.Status, cfg.Status)
		}, "%s", what)
		return dep
	}
	dep := converged("fetch converged with its telemetry config")
	var header, volume bool
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		header = header || (e.Name == "TOOLHIVE_OTEL_HEADER_AUTHORIZATION" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil)
	}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		volume = volume || v.Name == "otel-ca-bundle-collector-ca"
	}
	if !header || !volume {
		t.Errorf("proxy Deployment: sensitive header env %v, CA bundle volume %v", header, volume)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, controllers...)

	dep, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	generation, checksum := dep.Generation, dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum]
	cfg, _ := th.MCPTelemetryConfigs(ns).Get(ctx, "otel", metav1.GetOptions{})
	oldHash := cfg.Status.ConfigHash
	if _, err := th.MCPTelemetryConfigs(ns).Patch(ctx, "otel", types.MergePatchType,
		[]byte(`{"spec":{"openTelemetry":{"tracing":{"samplingRate":"0.5"}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, settle, func() (bool, error) {
		s, err := th.MCPServers(ns).Get(ctx, "fetch", metav1.GetOptions{})
		return err == nil && s.Status.TelemetryConfigHash != oldHash, err
	}, "the server to take the new config hash")
	dep = converged("fetch converged with the changed config")
	workloadtest.Quiesce(t, 2*time.Second, settle, controllers...)
	dep, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Generation != generation+1 || dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == checksum {
		t.Errorf("Deployment generation %d -> %d, checksum changed %v: want exactly one rollout", generation, dep.Generation,
			dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] != checksum)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 2*time.Second, controllers...)
}
