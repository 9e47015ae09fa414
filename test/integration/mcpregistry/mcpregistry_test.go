// Package mcpregistry tests the MCPRegistry controller against a real API
// server: its children as ToolHive's operator writes them (the registry
// API's account bound to the chart's ClusterRole), the deprecation
// warning, the phase and URL following the Deployment, zero writes once
// converged (across informer resyncs), a configuration change rolling the
// API once, ToolHive's finalizer released on deletion.
package mcpregistry

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpregistry"
	"github.com/hivekeeper/hivekeeper/pkg/rbac"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

func writers() []string {
	var out []string
	for _, d := range app.Controllers() {
		out = append(out, d.Name)
	}
	return out
}

func TestMCPRegistryLifecycle(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	th := env.Toolhive.ToolhiveV1beta1()
	r := toolhivetest.NewMCPRegistry(ns, "reg", func(r *thv1.MCPRegistry) {
		r.Spec.PGPassSecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pg"}, Key: ".pgpass"}
		r.Spec.PodTemplateSpec = toolhivetest.Raw(toolhivetest.RegistryFullTemplate)
	})
	r.UID, r.ResourceVersion, r.Generation = "", "", 0
	if _, err := th.MCPRegistries(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		got, err := th.MCPRegistries(ns).Get(ctx, "reg", metav1.GetOptions{})
		return err == nil && got.Status.Phase == thv1.MCPRegistryPhasePending, err
	}, "the registry to be Pending")
	k := env.Kube
	cm, err := k.CoreV1().ConfigMaps(ns).Get(ctx, "reg-registry-server-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[naming.RegistryConfigKey] != r.Spec.ConfigYAML || cm.Annotations["toolhive.stacklok.dev/content-checksum"] == "" {
		t.Errorf("ConfigMap %+v", cm)
	}
	rb, err := k.RbacV1().RoleBindings(ns).Get(ctx, "reg-registry-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != rbac.DefaultRegistryAPIClusterRole || rb.Subjects[0].Name != "reg-registry-api" {
		t.Errorf("RoleBinding %+v", rb)
	}
	if _, err := k.CoreV1().ServiceAccounts(ns).Get(ctx, "reg-registry-api", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	dep, err := k.AppsV1().Deployments(ns).Get(ctx, "reg-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	if pod.Containers[0].Image != app.DefaultRegistryAPIImage || len(pod.InitContainers) != 1 || len(pod.Containers) != 2 ||
		*dep.Spec.Replicas != 1 || dep.Annotations[naming.AnnotationPodTemplateSpecHash] == "" {
		t.Errorf("Deployment %+v", dep)
	}
	if _, err := k.CoreV1().Services(ns).Get(ctx, "reg-api", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func() (bool, error) {
		evs, err := k.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", thv1.ReasonMCPRegistryDeprecated).String()})
		return err == nil && len(evs.Items) == 1 && evs.Items[0].Type == corev1.EventTypeWarning, err
	}, "one MCPRegistryDeprecated Warning event")
	workloadtest.AssertSteadyState(t, ctx, k, env.Toolhive, ns, 3*time.Second, writers()...)

	// Someone scaling the API is left alone (ToolHive's operator keeps the
	// count for autoscalers too).
	if _, err := k.AppsV1().Deployments(ns).Patch(ctx, "reg-api", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Ready follows the Deployment's status, with the URL.
	if _, err := k.AppsV1().Deployments(ns).Patch(ctx, "reg-api", types.MergePatchType,
		[]byte(`{"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		got, err := th.MCPRegistries(ns).Get(ctx, "reg", metav1.GetOptions{})
		return err == nil && got.Status.Phase == thv1.MCPRegistryPhaseReady && got.Status.URL == "http://reg-api."+ns+":8080" && got.Status.ReadyReplicas == 1, err
	}, "the registry to be Ready at its URL")
	workloadtest.AssertSteadyState(t, ctx, k, env.Toolhive, ns, 2*time.Second, writers()...)

	// A configuration change: the ConfigMap and the Deployment (the
	// spec's hash rolls the API), once, and the status's generation.
	before := workloadtest.Quiesce(t, 2*time.Second, time.Minute, writers()...)
	if _, err := th.MCPRegistries(ns).Patch(ctx, "reg", types.MergePatchType,
		[]byte(`{"spec":{"configYAML":"sources: []\nregistries: []\n"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		cm, err := k.CoreV1().ConfigMaps(ns).Get(ctx, "reg-registry-server-config", metav1.GetOptions{})
		return err == nil && strings.HasPrefix(cm.Data[naming.RegistryConfigKey], "sources: []"), err
	}, "the new configuration")
	delta := workloadtest.WritesBetween(before, workloadtest.Quiesce(t, 2*time.Second, time.Minute, writers()...))
	want := map[string]float64{
		mcpregistry.Name + " configmaps patch success":           1,
		mcpregistry.Name + " deployments patch success":          1,
		mcpregistry.Name + " mcpregistries/status patch success": 1,
	}
	if !maps.Equal(delta, want) {
		t.Errorf("writes for a configuration change = %v, want %v", delta, want)
	}
	if d, err := k.AppsV1().Deployments(ns).Get(ctx, "reg-api", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 3 {
		t.Errorf("the API's replicas after the change: %v %v", d.Spec.Replicas, err)
	}

	if err := th.MCPRegistries(ns).Delete(ctx, "reg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		_, err := th.MCPRegistries(ns).Get(ctx, "reg", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}, "the registry to be finalized and gone")
}
