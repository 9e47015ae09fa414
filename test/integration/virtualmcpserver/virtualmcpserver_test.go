// Package virtualmcpserver tests the VirtualMCPServer controller against a
// real API server: its children and backends, zero writes once converged
// (across informer resyncs), a volume-only change rolling the Deployment
// exactly once, the whole podTemplateSpec and the pod fields at steady
// state, a remote proxy member's URL change rolling it exactly once, and a
// missing group converging once it appears.
package virtualmcpserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpgroup"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpoidcconfig"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpremoteproxy"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/controller/virtualmcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// allControllers are every controller the test runs: steady state means
// none of them writes, not only the one under test.
var allControllers = []string{virtualmcpserver.Name, mcpserver.Name, mcpremoteproxy.Name, mcpgroup.Name, mcpoidcconfig.Name}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func createGroup(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPGroups(ns).Create(testCtx(t), &thv1.MCPGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating MCPGroup %s: %v", name, err)
	}
}

// createMember creates an MCPServer in group (none when empty).
func createMember(t *testing.T, env *framework.Env, ns, name, group string) {
	t.Helper()
	s := &thv1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       thv1.MCPServerSpec{Image: "ghcr.io/example/" + name + ":1"},
	}
	if group != "" {
		s.Spec.GroupRef = &thv1.GroupRef{Name: group}
	}
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Create(testCtx(t), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating MCPServer %s: %v", name, err)
	}
}

// createValidConfig creates an inline MCPOIDCConfig whose CA bundle is the
// ConfigMap caBundle and waits for the MCPOIDCConfig controller to mark it
// Valid.
func createValidConfig(t *testing.T, env *framework.Env, ns, name, caBundle string) *thv1.MCPOIDCConfig {
	t.Helper()
	ctx := testCtx(t)
	_, err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Create(ctx, &thv1.MCPOIDCConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: thv1.MCPOIDCConfigSpec{Type: thv1.OIDCConfigTypeInline, Inline: &thv1.InlineOIDCConfig{
			Issuer: "https://idp.example.com", JWKSURL: "https://idp.example.com/jwks", ClientID: "hive",
			CABundleRef: &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: caBundle}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating MCPOIDCConfig: %v", err)
	}
	var cfg *thv1.MCPOIDCConfig
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		cfg, err = env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(cfg.Status.Conditions, thv1.ConditionValid) && cfg.Status.ConfigHash != "", err
	}, "MCPOIDCConfig %s to be Valid", name)
	return cfg
}

func hasVolume(dep *appsv1.Deployment, name string) bool {
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// The vMCP converges to its children with both group members as backends,
// writes nothing for three seconds of one-second resyncs, and a new CA
// bundle ConfigMap on its OIDC config — a volume-only change — rolls the
// Deployment exactly once.
func TestChildrenSteadyStateAndVolumeRoll(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	ctx := testCtx(t)

	createGroup(t, env, ns, "tools")
	createMember(t, env, ns, "s1", "tools")
	createMember(t, env, ns, "s2", "tools")
	createMember(t, env, ns, "outsider", "")
	cfg := createValidConfig(t, env, ns, "auth", "ca-one")
	vmcps := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns)
	if _, err := vmcps.Create(ctx, &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "agg"},
		Spec: thv1.VirtualMCPServerSpec{
			// Inline: hivekeeper lists the backends in config.yaml and the
			// status (in discovered mode vmcp finds and reports them).
			OutgoingAuth: &thv1.OutgoingAuth{Source: thv1.OutgoingAuthSourceInline},
			IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthOIDC, OIDCConfigRef: &thv1.OIDCConfigReference{Name: "auth", Audience: "vmcp"}},
			GroupRef:     thv1.GroupRef{Name: "tools"},
			PodTemplateSpec: &runtime.RawExtension{Raw: []byte(`{"spec":{"volumes":[{"name":"scratch","emptyDir":{"sizeLimit":"64Mi"}},` +
				`{"name":"creds","secret":{"secretName":"creds"}}],` +
				`"containers":[{"name":"vmcp","volumeMounts":[{"name":"scratch","mountPath":"/scratch"},{"name":"creds","mountPath":"/creds"}]}]}}`)},
			Config: &thv1.VirtualMCPConfig{Aggregation: &thv1.VMCPAggregation{ConflictResolution: "prefix"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	framework.Eventually(t, 15*time.Second, func() (bool, error) {
		v, err := vmcps.Get(ctx, "agg", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := v.Status
		ok := s.ObservedGeneration == v.Generation && s.OIDCConfigHash == cfg.Status.ConfigHash &&
			s.URL == fmt.Sprintf("http://vmcp-agg.%s.svc.cluster.local:4483", ns) &&
			meta.IsStatusConditionTrue(s.Conditions, thv1.ConditionOIDCConfigRefValidated) &&
			meta.IsStatusConditionTrue(s.Conditions, thv1.ConditionGroupRefValidated) &&
			meta.IsStatusConditionTrue(s.Conditions, thv1.ConditionPodTemplateValid)
		return ok, fmt.Errorf("status %+v", s)
	}, "status of agg")

	k := env.Kube
	var dep *appsv1.Deployment
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		var err error
		dep, err = k.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{})
		return err == nil && hasVolume(dep, "oidc-ca-bundle-ca-one"), err
	}, "the vMCP Deployment with the CA bundle volume")
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Name != naming.VMCPContainerName || c.Ports[0].ContainerPort != naming.VMCPPort || !hasVolume(dep, "scratch") ||
		dep.Annotations[naming.AnnotationPodVolumesHash] == "" || dep.Spec.Template.Spec.ServiceAccountName != "agg-vmcp" {
		t.Errorf("deployment %+v", dep)
	}
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		cm, err := k.CoreV1().ConfigMaps(ns).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		y := cm.Data[naming.VMCPConfigKey]
		ok := strings.Contains(y, fmt.Sprintf("http://mcp-s1-proxy.%s.svc.cluster.local:8080", ns)) &&
			strings.Contains(y, fmt.Sprintf("http://mcp-s2-proxy.%s.svc.cluster.local:8080", ns)) &&
			!strings.Contains(y, "outsider") && strings.Contains(y, "conflictResolution: prefix") &&
			strings.Contains(y, "caBundlePath: /config/certs/ca-one/ca.crt")
		return ok, fmt.Errorf("config.yaml:\n%s", y)
	}, "config.yaml with both backends")
	svc, err := k.CoreV1().Services(ns).Get(ctx, "vmcp-agg", metav1.GetOptions{})
	if err != nil || svc.Spec.Ports[0].Port != naming.VMCPPort {
		t.Errorf("service %+v: %v", svc, err)
	}
	if _, err := k.CoreV1().ServiceAccounts(ns).Get(ctx, "agg-vmcp", metav1.GetOptions{}); err != nil {
		t.Errorf("service account: %v", err)
	}

	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)

	// A volume-only change: the CA bundle ConfigMap behind the reference.
	dep, err = k.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	generation, hash := dep.Generation, dep.Annotations[naming.AnnotationPodVolumesHash]
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPOIDCConfigs(ns).Patch(ctx, "auth", types.MergePatchType,
		[]byte(`{"spec":{"inline":{"caBundleRef":{"configMapRef":{"name":"ca-two"}}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		dep, err = k.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{})
		return err == nil && hasVolume(dep, "oidc-ca-bundle-ca-two"), err
	}, "the Deployment to mount the new CA bundle")
	workloadtest.Quiesce(t, 2*time.Second, 30*time.Second, allControllers...)
	dep, err = k.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Generation != generation+1 {
		t.Errorf("Deployment generation %d -> %d, want exactly one rollout", generation, dep.Generation)
	}
	if h := dep.Annotations[naming.AnnotationPodVolumesHash]; h == "" || h == hash || hasVolume(dep, "oidc-ca-bundle-ca-one") {
		t.Errorf("hash %q -> %q, volumes %+v", hash, h, dep.Spec.Template.Spec.Volumes)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 2*time.Second, allControllers...)
}

// A vMCP whose group does not exist yet is Failed, as ToolHive's operator
// reports it, and nothing is deployed; the group's creation (an event, no
// resync here) makes it converge, and a server joining the group reaches
// its config.
func TestMissingGroupConvergesWhenItAppears(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	ctx := testCtx(t)
	vmcps := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns)
	if _, err := vmcps.Create(ctx, &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "agg"},
		Spec: thv1.VirtualMCPServerSpec{
			// Inline: hivekeeper lists the backends in config.yaml and the
			// status (in discovered mode vmcp finds and reports them).
			OutgoingAuth: &thv1.OutgoingAuth{Source: thv1.OutgoingAuthSourceInline},
			IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous},
			GroupRef:     thv1.GroupRef{Name: "late"},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	groupCond := func(status metav1.ConditionStatus, reason string) func() (bool, error) {
		return func() (bool, error) {
			v, err := vmcps.Get(ctx, "agg", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionGroupRefValidated)
			return c != nil && c.Status == status && c.Reason == reason, fmt.Errorf("GroupRefValidated %+v", c)
		}
	}
	framework.Eventually(t, 10*time.Second, groupCond(metav1.ConditionFalse, thv1.ReasonGroupRefNotFound), "GroupRefNotFound")
	// No group: nothing is deployed, and the status says why.
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		v, err := vmcps.Get(ctx, "agg", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionReady)
		return v.Status.Phase == thv1.VirtualMCPServerPhaseFailed && c != nil && c.Reason == thv1.ReasonGroupRefNotFound &&
			v.Status.Message == "Referenced MCPGroup late not found", fmt.Errorf("phase %s, message %q, Ready %+v", v.Status.Phase, v.Status.Message, c)
	}, "Failed while the group is missing")
	if _, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a vMCP without its group was deployed: %v", err)
	}

	createGroup(t, env, ns, "late")
	framework.Eventually(t, 5*time.Second, groupCond(metav1.ConditionTrue, thv1.ReasonGroupRefValid), "GroupRefValid once the group exists")

	createMember(t, env, ns, "joiner", "late")
	framework.Eventually(t, 5*time.Second, func() (bool, error) {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return strings.Contains(cm.Data[naming.VMCPConfigKey], "mcp-joiner-proxy"), nil
	}, "the new member in config.yaml")
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		_, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{})
		return err == nil, err
	}, "the Deployment once the group has a member")
}

// The whole podTemplateSpec, imagePullSecrets and Redis session storage
// reach the vMCP pod, and a group of one MCPServer and one MCPRemoteProxy
// is two backends; the API server's defaults make no write at steady
// state. The remote proxy changing its URL (transport) updates config.yaml
// and rolls the Deployment exactly once; its leaving drops it.
func TestPodFieldsAndRemoteProxyBackends(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}, ResyncPeriod: time.Second})
	ctx := testCtx(t)

	createGroup(t, env, ns, "tools")
	createMember(t, env, ns, "s1", "tools")
	proxies := env.Toolhive.ToolhiveV1beta1().MCPRemoteProxies(ns)
	if _, err := proxies.Create(ctx, &thv1.MCPRemoteProxy{
		ObjectMeta: metav1.ObjectMeta{Name: "far"},
		Spec:       thv1.MCPRemoteProxySpec{RemoteURL: "https://mcp.example.com/mcp", GroupRef: &thv1.GroupRef{Name: "tools"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vmcps := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns)
	if _, err := vmcps.Create(ctx, &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "agg"},
		Spec: thv1.VirtualMCPServerSpec{
			// Inline: hivekeeper lists the backends in config.yaml and the
			// status (in discovered mode vmcp finds and reports them).
			OutgoingAuth:     &thv1.OutgoingAuth{Source: thv1.OutgoingAuthSourceInline},
			IncomingAuth:     thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous},
			GroupRef:         thv1.GroupRef{Name: "tools"},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "spec-pull"}},
			SessionStorage: &thv1.SessionStorageConfig{Provider: thv1.SessionStorageProviderRedis, Address: "redis:6379",
				PasswordRef: &thv1.SecretKeyRef{Name: "redis", Key: "password"}},
			PodTemplateSpec: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"team":"a"}},"spec":{` +
				`"nodeSelector":{"disk":"ssd"},"tolerations":[{"key":"dedicated","operator":"Exists"}],` +
				`"imagePullSecrets":[{"name":"tpl-pull"}],"terminationGracePeriodSeconds":45,` +
				`"initContainers":[{"name":"init","image":"busybox:1","command":["true"]}],` +
				`"volumes":[{"name":"scratch","emptyDir":{}}],` +
				`"containers":[{"name":"vmcp","env":[{"name":"EXTRA","value":"1"}],"resources":{"limits":{"memory":"256Mi"}},` +
				`"volumeMounts":[{"name":"scratch","mountPath":"/scratch"}]}]}}`)},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	k := env.Kube
	farURL := fmt.Sprintf("http://mcp-far-remote-proxy.%s.svc.cluster.local:8080", ns)
	configHas := func(want ...string) func() (bool, error) {
		return func() (bool, error) {
			cm, err := k.CoreV1().ConfigMaps(ns).Get(ctx, "agg-vmcp-config", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			y := cm.Data[naming.VMCPConfigKey]
			for _, w := range want {
				if !strings.Contains(y, w) {
					return false, fmt.Errorf("config.yaml lacks %q:\n%s", w, y)
				}
			}
			return true, nil
		}
	}
	framework.Eventually(t, 15*time.Second, configHas(fmt.Sprintf("http://mcp-s1-proxy.%s.svc.cluster.local:8080/mcp", ns), farURL+"/mcp",
		"sessionStorage:\n    provider: redis\n    address: redis:6379"), "config.yaml with both backends and session storage")
	var dep *appsv1.Deployment
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		var err error
		dep, err = k.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{})
		return err == nil && hasVolume(dep, "scratch"), err
	}, "the vMCP Deployment with the template merged")
	pod := dep.Spec.Template.Spec
	var pull []string
	for _, r := range pod.ImagePullSecrets {
		pull = append(pull, r.Name)
	}
	if len(pull) != 2 || pod.NodeSelector["disk"] != "ssd" || len(pod.Tolerations) != 1 || len(pod.InitContainers) != 1 ||
		*pod.TerminationGracePeriodSeconds != 45 || dep.Spec.Template.Labels["team"] != "a" {
		t.Errorf("pod spec %+v (pull secrets %v)", pod, pull)
	}
	env1 := map[string]corev1.EnvVar{}
	for _, e := range pod.Containers[0].Env {
		env1[e.Name] = e
	}
	if r := env1[wiring.EnvSessionRedisPassword].ValueFrom; r == nil || r.SecretKeyRef == nil || r.SecretKeyRef.Name != "redis" ||
		env1["EXTRA"].Value != "1" || env1["VMCP_NAME"].Value != "agg" || env1["VMCP_NAMESPACE"].Value != ns {
		t.Errorf("vmcp env %+v", pod.Containers[0].Env)
	}
	if dep.Annotations[naming.AnnotationPodTemplateSpecHash] == "" || dep.Annotations[naming.AnnotationPodVolumesHash] == "" {
		t.Errorf("annotations %v", dep.Annotations)
	}

	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 3*time.Second, allControllers...)

	dep, err := k.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	generation := dep.Generation
	if _, err := proxies.Patch(ctx, "far", types.MergePatchType, []byte(`{"spec":{"transport":"sse"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 10*time.Second, configHas(farURL+"/sse"), "the remote proxy's SSE endpoint in config.yaml")
	workloadtest.Quiesce(t, 2*time.Second, 30*time.Second, allControllers...)
	if dep, err = k.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{}); err != nil || dep.Generation != generation+1 {
		t.Errorf("Deployment generation %d -> %d (%v), want exactly one rollout", generation, dep.Generation, err)
	}
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 2*time.Second, allControllers...)

	if err := proxies.Delete(ctx, "far", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 10*time.Second, func() (bool, error) {
		ok, err := configHas("mcp-s1-proxy")()
		if !ok {
			return false, err
		}
		gone, _ := configHas("mcp-far-remote-proxy")()
		return !gone, fmt.Errorf("the remote proxy is still in config.yaml")
	}, "config.yaml without the remote proxy")
}

// TestBackendHealthFromVmcpReport: vmcp reports its backends' health in
// status.runtime (a read and a status update, as its reporter writes it);
// the controller projects it into discoveredBackends and backendCount, and
// a serving vMCP whose every backend is down is Degraded and not Ready.
// The report survives the controller's status writes, each report costs
// one write and nothing follows it, and a recovered backend makes the
// server Ready again.
func TestBackendHealthFromVmcpReport(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	ctx := testCtx(t)
	createGroup(t, env, ns, "tools")
	createMember(t, env, ns, "s1", "tools")
	vmcps := env.Toolhive.ToolhiveV1beta1().VirtualMCPServers(ns)
	if _, err := vmcps.Create(ctx, &thv1.VirtualMCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "agg"},
		Spec: thv1.VirtualMCPServerSpec{
			IncomingAuth: thv1.IncomingAuth{Type: thv1.IncomingAuthAnonymous},
			GroupRef:     thv1.GroupRef{Name: "tools"},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No kubelet here: the test plays the Deployment controller's part.
	framework.Eventually(t, 15*time.Second, func() (bool, error) {
		dep, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "agg", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.ObservedGeneration = 1, 1, dep.Generation
		_, err = env.Kube.AppsV1().Deployments(ns).UpdateStatus(ctx, dep, metav1.UpdateOptions{})
		return err == nil, err
	}, "the Deployment ready")
	phase := func(want, reason string, count int32) {
		t.Helper()
		framework.Eventually(t, 10*time.Second, func() (bool, error) {
			v, err := vmcps.Get(ctx, "agg", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(v.Status.Conditions, thv1.ConditionReady)
			return v.Status.Phase == want && c != nil && c.Reason == reason && v.Status.BackendCount == count,
				fmt.Errorf("phase %s, Ready %+v, backendCount %d", v.Status.Phase, c, v.Status.BackendCount)
		}, want+" "+reason)
	}
	phase(thv1.VirtualMCPServerPhaseReady, thv1.ReasonDeploymentReady, 0)
	report := func(status string) {
		t.Helper()
		framework.Eventually(t, 10*time.Second, func() (bool, error) {
			v, err := vmcps.Get(ctx, "agg", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			v.Status.Runtime = &thv1.VirtualMCPServerRuntimeStatus{Phase: thv1.VirtualMCPServerPhaseDegraded, Message: "from vmcp",
				DiscoveredBackends: []thv1.DiscoveredBackend{{Name: "s1", Status: status, URL: "http://mcp-s1-proxy." + ns + ".svc.cluster.local:8080"}},
				Conditions: []metav1.Condition{{Type: thv1.ConditionBackendsDiscovered, Status: metav1.ConditionTrue, Reason: "BackendsDiscovered",
					Message: "Discovered 1 backends", LastTransitionTime: metav1.Now()}}}
			_, err = vmcps.UpdateStatus(ctx, v, metav1.UpdateOptions{})
			return err == nil, err
		}, "vmcp's report")
	}
	report(thv1.BackendStatusUnavailable)
	phase(thv1.VirtualMCPServerPhaseDegraded, thv1.ReasonBackendsUnavailable, 0)
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 2*time.Second, allControllers...)
	v, err := vmcps.Get(ctx, "agg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status.Runtime == nil || v.Status.Runtime.Message != "from vmcp" || len(v.Status.DiscoveredBackends) != 1 ||
		!meta.IsStatusConditionTrue(v.Status.Conditions, thv1.ConditionBackendsDiscovered) {
		t.Errorf("runtime %+v, discoveredBackends %+v, conditions %+v: want vmcp's report kept and projected",
			v.Status.Runtime, v.Status.DiscoveredBackends, v.Status.Conditions)
	}
	report(thv1.BackendStatusReady)
	phase(thv1.VirtualMCPServerPhaseReady, thv1.ReasonDeploymentReady, 1)
	workloadtest.AssertSteadyState(t, ctx, env.Kube, env.Toolhive, ns, 2*time.Second, allControllers...)
}
