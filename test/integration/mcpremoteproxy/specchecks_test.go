package mcpremoteproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// patchSpec merge-patches an MCPRemoteProxy's spec, as kubectl would.
func patchSpec(t *testing.T, env *framework.Env, ns, name, spec string) {
	t.Helper()
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Patch(testCtx(t), name, types.MergePatchType,
		[]byte(`{"spec":`+spec+`}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitConfigurationValid waits until the proxy's status describes its
// current generation with ConfigurationValid of the given status and
// reason, and returns the proxy.
func waitConfigurationValid(t *testing.T, env *framework.Env, ns, name string, status metav1.ConditionStatus, reason string) *thv1.MCPRemoteProxy {
	t.Helper()
	var p *thv1.MCPRemoteProxy
	framework.Eventually(t, settle, func() (bool, error) {
		var err error
		p, err = env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionConfigurationValid)
		return p.Status.ObservedGeneration == p.Generation && c != nil && c.Status == status && c.Reason == reason,
			fmt.Errorf("status %+v", p.Status)
	}, "%s: ConfigurationValid=%s %s", name, status, reason)
	return p
}

// warnings counts the Warning events of one reason about an object.
func warnings(t *testing.T, env *framework.Env, ns, name, reason string) int32 {
	t.Helper()
	evs, err := env.Kube.CoreV1().Events(ns).List(testCtx(t), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=" + reason + ",type=Warning",
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range evs.Items {
		n += max(e.Count, 1)
	}
	return n
}

// On a real API server: a proxy to a private address without
// allowPrivateEndpoint gets no child at all, only a Failed status and one
// Warning event; allowing it deploys the proxy; a later refused URL
// leaves the running Deployment exactly as it was. Then nothing is
// written at steady state.
func TestRemoteURLGate(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	ctx := testCtx(t)
	k := env.Kube
	const name, private = "internal", "http://10.20.30.40:8080/mcp"

	if _, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Create(ctx, &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: private},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitConfigurationValid(t, env, ns, name, metav1.ConditionFalse, thv1.ReasonRemoteURLInvalid)
	if p.Status.Phase != thv1.MCPRemoteProxyPhaseFailed || !strings.Contains(p.Status.Message, "allowPrivateEndpoint") ||
		meta.IsStatusConditionTrue(p.Status.Conditions, thv1.ConditionReady) {
		t.Errorf("status %+v", p.Status)
	}
	// The status is written; give a wrongly eager controller a moment,
	// then nothing of the proxy may exist.
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	for what, get := range map[string]func() error{
		"Deployment": func() error { _, err := k.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); return err },
		"ConfigMap": func() error {
			_, err := k.CoreV1().ConfigMaps(ns).Get(ctx, naming.RunConfigName(name), metav1.GetOptions{})
			return err
		},
		"Service": func() error {
			_, err := k.CoreV1().Services(ns).Get(ctx, naming.RemoteProxyServiceName(name), metav1.GetOptions{})
			return err
		},
		"ServiceAccount": func() error {
			_, err := k.CoreV1().ServiceAccounts(ns).Get(ctx, naming.RemoteProxyRunnerName(name), metav1.GetOptions{})
			return err
		},
		"RoleBinding": func() error {
			_, err := k.RbacV1().RoleBindings(ns).Get(ctx, naming.RemoteProxyRunnerName(name), metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("%s of a refused proxy: %v, want NotFound", what, err)
		}
	}
	framework.Eventually(t, settle, func() (bool, error) {
		n := warnings(t, env, ns, name, thv1.ReasonRemoteURLInvalid)
		return n == 1, fmt.Errorf("%d events", n)
	}, "one RemoteURLInvalid Warning event")

	patchSpec(t, env, ns, name, `{"allowPrivateEndpoint":true}`)
	waitConfigurationValid(t, env, ns, name, metav1.ConditionTrue, thv1.ReasonConfigurationValid)
	dep := waitDeployment(t, env, ns, name)
	if cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), naming.RunConfigName(name), metav1.GetOptions{}); err != nil ||
		!strings.Contains(cm.Data[schema.Key], `"remote_url": "`+private+`"`) {
		t.Fatalf("runconfig %v %v", cm, err)
	}
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	dep = waitDeployment(t, env, ns, name)

	// Metadata is never allowed; the Deployment that runs is left alone.
	patchSpec(t, env, ns, name, `{"remoteUrl":"http://169.254.169.254/latest/meta-data","replicas":0}`)
	p = waitConfigurationValid(t, env, ns, name, metav1.ConditionFalse, thv1.ReasonRemoteURLInvalid)
	if strings.Contains(p.Status.Message, "allowPrivateEndpoint") {
		t.Errorf("message %q suggests allowPrivateEndpoint for a metadata address", p.Status.Message)
	}
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	if after := waitDeployment(t, env, ns, name); after.ResourceVersion != dep.ResourceVersion {
		t.Errorf("the running Deployment was written after the refusal: resourceVersion %s -> %s, args %v",
			dep.ResourceVersion, after.ResourceVersion, after.Spec.Template.Spec.Containers[0].Args)
	}
	if n := warnings(t, env, ns, name, thv1.ReasonRemoteURLInvalid); n != 2 {
		t.Errorf("%d RemoteURLInvalid events, want one per refusal (2)", n)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)
}

// On a real API server: headers from a Secret reach the proxy container
// as secretKeyRef variables and nothing of the Secret reaches the
// ConfigMap; changing a header rolls the proxy exactly once (one new
// Deployment generation), then nothing is written.
func TestHeaderForward(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	ctx := testCtx(t)
	const name = "vendor"
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns).Create(ctx, &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: thv1.MCPRemoteProxySpec{
			RemoteURL: "https://mcp.vendor.example.com/mcp",
			HeaderForward: &thv1.HeaderForwardConfig{
				AddPlaintextHeaders: map[string]string{"X-Tenant-ID": "team-a"},
				AddHeadersFromSecret: []thv1.HeaderFromSecret{{
					HeaderName: "X-API-Key", ValueSecretRef: &thv1.SecretKeyRef{Name: "vendor-api", Key: "key"},
				}},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConfigurationValid(t, env, ns, name, metav1.ConditionTrue, thv1.ReasonConfigurationValid)
	dep := waitDeployment(t, env, ns, name)
	var ref string
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref = e.Name + "=" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	if ref != "TOOLHIVE_SECRET_HEADER_FORWARD_X_API_KEY_VENDOR=vendor-api/key" {
		t.Errorf("secret env %q", ref)
	}
	readHeaders := func() *schema.HeaderForward {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, naming.RunConfigName(name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var rc schema.RunConfig
		if err := json.Unmarshal([]byte(cm.Data[schema.Key]), &rc); err != nil {
			t.Fatal(err)
		}
		if rc.HeaderForward == nil {
			t.Fatalf("no header_forward: %s", cm.Data[schema.Key])
		}
		return rc.HeaderForward
	}
	if hf := readHeaders(); hf.AddPlaintextHeaders["X-Tenant-ID"] != "team-a" || hf.AddHeadersFromSecret["X-API-Key"] != "HEADER_FORWARD_X_API_KEY_VENDOR" {
		t.Errorf("header_forward %+v", hf)
	}
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	dep = waitDeployment(t, env, ns, name)

	patchSpec(t, env, ns, name, `{"headerForward":{"addPlaintextHeaders":{"X-Tenant-ID":"team-b"}}}`)
	framework.Eventually(t, settle, func() (bool, error) {
		return readHeaders().AddPlaintextHeaders["X-Tenant-ID"] == "team-b", nil
	}, "the new header value in the RunConfig")
	workloadtest.Quiesce(t, quiet, settle, allControllers...)
	after := waitDeployment(t, env, ns, name)
	if after.Generation != dep.Generation+1 {
		t.Errorf("Deployment generation %d -> %d, want exactly one rollout", dep.Generation, after.Generation)
	}
	if after.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == dep.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] {
		t.Errorf("the RunConfig checksum on the pod template did not change")
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)
}

// waitDeployment waits for the proxy Deployment and returns it.
func waitDeployment(t *testing.T, env *framework.Env, ns, name string) *appsv1.Deployment {
	t.Helper()
	var dep *appsv1.Deployment
	framework.Eventually(t, settle, func() (bool, error) {
		var err error
		dep, err = env.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}, "Deployment %s/%s", ns, name)
	return dep
}
