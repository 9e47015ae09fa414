package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// installPolicy renders the chart for a release watching namespace and
// creates its ValidatingAdmissionPolicy and binding (the binding matches
// that namespace only, so other tests of the package are not affected).
// It returns once the API server enforces the policy.
func installPolicy(t *testing.T, env *framework.Env, namespace string) {
	t.Helper()
	// Generous bounds: on two busy cores compiling a policy's expressions
	// and the admission plugin's informer can take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	objs := render(t, uniqueRelease(t), "hivekeeper-system", "--skip-crds", "--set", "watchNamespaces={"+namespace+"}")
	admin := newApplier(t, env.Config)
	var policy string
	for _, obj := range append(find(objs, "ValidatingAdmissionPolicy"), find(objs, "ValidatingAdmissionPolicyBinding")...) {
		if obj.GetKind() == "ValidatingAdmissionPolicy" {
			policy = obj.GetName()
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := admin.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		})
		if err := admin.apply(ctx, obj, false); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	if policy == "" {
		t.Fatal("the chart rendered no ValidatingAdmissionPolicy")
	}
	// The API server compiles every expression when the policy is created;
	// the type-checking warnings in its status come from a controller in
	// kube-controller-manager, which the test server does not run.
	// The admission plugin learns of policies through an informer.
	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		err := create(ctx, env, namespace, workloadSpec{kind: thv1.KindMCPServer, name: "probe", spec: `{"podTemplateSpec":{"spec":{"hostPID":true}}}`}, true)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	}, "the policy to be enforced")

}

type workloadSpec struct {
	kind, name string
	// spec is merged over a minimal valid spec of the kind.
	spec string
}

// create sends the workload to the API server, as a dry run when dryRun is
// set (admission runs, nothing is stored).
func create(ctx context.Context, env *framework.Env, namespace string, w workloadSpec, dryRun bool) error {
	base := map[string]string{
		thv1.KindMCPServer:        `{"image":"ghcr.io/example/fetch:1"}`,
		thv1.KindMCPRemoteProxy:   `{"remoteUrl":"https://mcp.example.com/mcp"}`,
		thv1.KindVirtualMCPServer: `{"groupRef":{"name":"tools"},"incomingAuth":{"type":"anonymous"}}`,
		thv1.KindEmbeddingServer:  `{"model":"BAAI/bge-small-en-v1.5","image":"ghcr.io/huggingface/text-embeddings-inference:cpu-latest"}`,
		thv1.KindMCPRegistry:      `{"configYAML":"sources: []\n"}`,
	}[w.kind]
	spec := map[string]any{}
	for _, raw := range []string{base, w.spec} {
		if raw == "" {
			continue
		}
		if err := json.Unmarshal([]byte(raw), &spec); err != nil {
			return fmt.Errorf("test spec %s: %w", raw, err)
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": thv1.SchemeGroupVersion.String(),
		"kind":       w.kind,
		"metadata":   map[string]any{"name": w.name, "namespace": namespace},
		"spec":       spec,
	}}
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	resource := map[string]string{
		thv1.KindMCPServer: "mcpservers", thv1.KindMCPRemoteProxy: "mcpremoteproxies", thv1.KindVirtualMCPServer: "virtualmcpservers",
		thv1.KindEmbeddingServer: "embeddingservers", thv1.KindMCPRegistry: "mcpregistries",
	}[w.kind]
	_, err := env.Dynamic.Resource(thv1.Resource(resource).WithVersion("v1beta1")).Namespace(namespace).Create(ctx, obj, opts)
	return err
}

// The chart's policy, on a real API server, refuses each way of running
// something privileged through a workload with a message naming the field,
// and accepts ordinary workloads, including a pod template override that
// sets what users legitimately set.
func TestAdmissionPolicyRefusesPrivilegedWorkloads(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	installPolicy(t, env, ns)
	ctx := context.Background()

	server, vmcp, proxy := thv1.KindMCPServer, thv1.KindVirtualMCPServer, thv1.KindMCPRemoteProxy
	embedding, registry := thv1.KindEmbeddingServer, thv1.KindMCPRegistry
	pod := func(podSpec string) string { return `{"podTemplateSpec":{"spec":` + podSpec + `}}` }
	container := func(securityContext string) string {
		return pod(`{"containers":[{"name":"mcp","securityContext":` + securityContext + `}]}`)
	}
	refused := []struct {
		kind, spec, field string
	}{
		{server, container(`{"privileged":true}`), "spec.podTemplateSpec.spec.containers[].securityContext.privileged"},
		{vmcp, container(`{"privileged":true}`), "spec.podTemplateSpec.spec.containers[].securityContext.privileged"},
		{server, pod(`{"initContainers":[{"name":"init","securityContext":{"privileged":true}}]}`), "securityContext.privileged"},
		{server, pod(`{"ephemeralContainers":[{"name":"debug","securityContext":{"privileged":true}}]}`), "securityContext.privileged"},
		{server, container(`{"allowPrivilegeEscalation":true}`), "securityContext.allowPrivilegeEscalation"},
		{server, container(`{"capabilities":{"add":["NET_ADMIN"]}}`), "securityContext.capabilities.add"},
		{server, pod(`{"hostNetwork":true}`), "spec.podTemplateSpec.spec.hostNetwork"},
		{server, pod(`{"hostPID":true}`), "spec.podTemplateSpec.spec.hostPID"},
		{vmcp, pod(`{"hostIPC":true}`), "spec.podTemplateSpec.spec.hostIPC"},
		{server, pod(`{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}`), "spec.podTemplateSpec.spec.volumes[].hostPath"},
		{server, `{"volumes":[{"name":"root","hostPath":"/","mountPath":"/host"}]}`, "spec.volumes[].hostPath"},
		// Another workload's accounts, named as hivekeeper names them.
		{server, `{"serviceAccount":"` + naming.ProxyRunnerName("other") + `"}`, "spec.serviceAccount"},
		{server, `{"serviceAccount":"` + naming.ProxyRunnerName("w") + `"}`, "spec.serviceAccount"},
		{server, `{"serviceAccount":"` + naming.BackendServiceAccountName("other") + `"}`, "spec.serviceAccount"},
		{proxy, `{"serviceAccount":"` + naming.RemoteProxyRunnerName("other") + `"}`, "spec.serviceAccount"},
		{proxy, `{"serviceAccount":"` + naming.RemoteProxyRunnerName("w") + `"}`, "spec.serviceAccount"},
		{vmcp, `{"serviceAccount":"` + naming.VMCPServiceAccountName("other") + `"}`, "spec.serviceAccount"},
		{vmcp, `{"serviceAccount":"` + naming.BackendServiceAccountName("w") + `"}`, "spec.serviceAccount"},
		{proxy, `{"serviceAccount":"w-sa"}`, "spec.serviceAccount"},
		// The kinds whose pod template is merged into a pod hivekeeper
		// writes, every container list of each.
		{embedding, container(`{"privileged":true}`), "spec.podTemplateSpec.spec.containers[].securityContext.privileged"},
		{embedding, pod(`{"initContainers":[{"name":"init","securityContext":{"capabilities":{"add":["SYS_ADMIN"]}}}]}`), "securityContext.capabilities.add"},
		{embedding, pod(`{"hostNetwork":true}`), "spec.podTemplateSpec.spec.hostNetwork"},
		{embedding, pod(`{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}`), "spec.podTemplateSpec.spec.volumes[].hostPath"},
		{registry, pod(`{"ephemeralContainers":[{"name":"debug","securityContext":{"privileged":true}}]}`), "securityContext.privileged"},
		{registry, pod(`{"hostPID":true}`), "spec.podTemplateSpec.spec.hostPID"},
		{registry, pod(`{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}`), "spec.podTemplateSpec.spec.volumes[].hostPath"},
		{registry, `{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}`, "spec.volumes[].hostPath"},
		// The template's account, of every kind: another workload's.
		{server, pod(`{"serviceAccountName":"` + naming.VMCPServiceAccountName("other") + `"}`), "spec.podTemplateSpec.spec.serviceAccountName"},
		{proxy, pod(`{"serviceAccountName":"` + naming.ProxyRunnerName("other") + `"}`), "spec.podTemplateSpec.spec.serviceAccountName"},
		{vmcp, pod(`{"serviceAccountName":"` + naming.VMCPServiceAccountName("other") + `"}`), "spec.podTemplateSpec.spec.serviceAccountName"},
		{vmcp, pod(`{"serviceAccountName":"` + naming.RegistryAPIAccountName("w") + `"}`), "spec.podTemplateSpec.spec.serviceAccountName"},
		{embedding, pod(`{"serviceAccountName":"` + naming.VMCPServiceAccountName("w") + `"}`), "spec.podTemplateSpec.spec.serviceAccountName"},
		{registry, pod(`{"serviceAccountName":"` + naming.RemoteProxyRunnerName("other") + `"}`), "spec.podTemplateSpec.spec.serviceAccountName"},
		{registry, pod(`{"serviceAccountName":"` + naming.RegistryAPIAccountName("other") + `"}`), "spec.podTemplateSpec.spec.serviceAccountName"},
	}
	for _, tc := range refused {
		err := create(ctx, env, ns, workloadSpec{kind: tc.kind, name: "w", spec: tc.spec}, true)
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			t.Errorf("%s %s: want refused, got %v", tc.kind, tc.spec, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s %s: the message does not name %s: %v", tc.kind, tc.spec, tc.field, err)
		}
		t.Logf("%s refused: %v", tc.kind, err)
	}

	// 200 containers with every field the checks read: well inside the
	// API server's CEL cost budget.
	var many []string
	for i := range 200 {
		many = append(many, fmt.Sprintf(`{"name":"c%d","image":"x","securityContext":{"privileged":false,"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"],"add":[]}}}`, i))
	}
	accepted := []struct{ kind, spec string }{
		{server, ""},
		{proxy, ""},
		{vmcp, ""},
		{server, pod(`{"nodeSelector":{"pool":"mcp"},"tolerations":[{"key":"mcp","operator":"Exists"}],` +
			`"volumes":[{"name":"cache","emptyDir":{}}],` +
			`"containers":[{"name":"mcp","resources":{"limits":{"memory":"1Gi"}},` +
			`"securityContext":{"allowPrivilegeEscalation":false,"privileged":false,"capabilities":{"drop":["ALL"]}}}]}`)},
		{server, pod(`{"containers":[` + strings.Join(many, ",") + `]}`)},
		{vmcp, pod(`{"hostNetwork":false,"hostPID":false,"hostIPC":false}`)},
		// Malformed overrides are the controller's to report, not a
		// policy evaluation error.
		{server, pod(`{"containers":{"mcp":{}},"volumes":"none","hostNetwork":"yes"}`)},
		{server, `{"podTemplateSpec":{"spec":null}}`},
		{server, `{"podTemplateSpec":{}}`},
		// Accounts of the user's own, and this object's own.
		{server, `{"serviceAccount":"github-reader"}`},
		{server, `{"serviceAccount":"` + naming.BackendServiceAccountName("w") + `"}`},
		{vmcp, `{"serviceAccount":"` + naming.VMCPServiceAccountName("w") + `"}`},
		{embedding, ""},
		{registry, ""},
		{embedding, pod(`{"nodeSelector":{"pool":"gpu"},"containers":[{"name":"embedding","securityContext":{"privileged":false}}],` +
			`"volumes":[{"name":"cache","emptyDir":{}}]}`)},
		{registry, `{"volumes":[{"name":"data","configMap":{"name":"extra"}}]}`},
		// The template's account: the user's own, or the one hivekeeper
		// gives this object's pod.
		{server, pod(`{"serviceAccountName":"github-reader"}`)},
		{embedding, pod(`{"serviceAccountName":"github-reader"}`)},
		{proxy, pod(`{"serviceAccountName":"` + naming.RemoteProxyRunnerName("w") + `"}`)},
		{vmcp, pod(`{"serviceAccountName":"` + naming.VMCPServiceAccountName("w") + `"}`)},
		{registry, pod(`{"serviceAccountName":"` + naming.RegistryAPIAccountName("w") + `"}`)},
	}
	for _, tc := range accepted {
		if err := create(ctx, env, ns, workloadSpec{kind: tc.kind, name: "w", spec: tc.spec}, true); err != nil {
			t.Errorf("%s %.200s: want accepted, got %v", tc.kind, tc.spec, err)
		}
	}
}

// A workload stored before the policy existed keeps working: the
// controller's metadata patches (finalizer, restart bookkeeping) are not
// refused, and neither is its deletion; only a change of its spec must
// pass the policy.
func TestAdmissionPolicyLetsExistingWorkloadsBe(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	privileged := workloadSpec{kind: thv1.KindMCPServer, name: "old", spec: `{"podTemplateSpec":{"spec":{"hostNetwork":true}}}`}
	if err := create(ctx, env, ns, privileged, false); err != nil {
		t.Fatal(err)
	}
	servers := env.Toolhive.ToolhiveV1beta1().MCPServers(ns)
	// Leave nothing behind for the controllers other tests run in every
	// namespace, whatever happens below.
	t.Cleanup(func() {
		_, _ = servers.Patch(context.Background(), "old", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = servers.Delete(context.Background(), "old", metav1.DeleteOptions{})
	})
	installPolicy(t, env, ns)

	patch := func(body string) error {
		_, err := servers.Patch(ctx, "old", types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	if err := patch(`{"metadata":{"finalizers":["` + thv1.MCPServerFinalizer + `"],"annotations":{"x":"y"}}}`); err != nil {
		t.Errorf("metadata patch of a stored workload: %v", err)
	}
	if err := patch(`{"spec":{"image":"ghcr.io/example/fetch:2"}}`); !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		t.Errorf("spec change keeping hostNetwork: want refused, got %v", err)
	}
	if err := patch(`{"spec":{"podTemplateSpec":null}}`); err != nil {
		t.Errorf("spec change removing hostNetwork: %v", err)
	}
	if err := servers.Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete: %v", err)
	}
	if err := patch(`{"metadata":{"finalizers":null}}`); err != nil {
		t.Errorf("finalizer release: %v", err)
	}
}

// Without the policy, the controllers themselves refuse a pod that
// reaches the node, through every kind with a pod template: each object
// reports PodSecurityNotAllowed with the field, records a Warning event,
// and no Deployment or StatefulSet is created.
func TestControllersRefuseWithoutThePolicy(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	env.StartControllers(t, app.Options{Namespaces: []string{ns}})
	group := toolhivetest.NewGroup(ns, "tools")
	group.UID, group.ResourceVersion = "", ""
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPGroups(ns).Create(ctx, group, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{
		thv1.KindMCPServer:        `{"podTemplateSpec":{"spec":{"hostPID":true}}}`,
		thv1.KindMCPRemoteProxy:   `{"podTemplateSpec":{"spec":{"containers":[{"name":"toolhive","securityContext":{"privileged":true}}]}}}`,
		thv1.KindVirtualMCPServer: `{"podTemplateSpec":{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}}`,
		thv1.KindEmbeddingServer:  `{"podTemplateSpec":{"spec":{"initContainers":[{"name":"i","image":"x","securityContext":{"capabilities":{"add":["SYS_ADMIN"]}}}]}}}`,
		thv1.KindMCPRegistry:      `{"podTemplateSpec":{"spec":{"hostNetwork":true}}}`,
	}
	resources := map[string]string{
		thv1.KindMCPServer: "mcpservers", thv1.KindMCPRemoteProxy: "mcpremoteproxies", thv1.KindVirtualMCPServer: "virtualmcpservers",
		thv1.KindEmbeddingServer: "embeddingservers", thv1.KindMCPRegistry: "mcpregistries",
	}
	for kind, spec := range refused {
		if err := create(ctx, env, ns, workloadSpec{kind: kind, name: strings.ToLower(kind), spec: spec}, false); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
	for kind := range refused {
		client := env.Dynamic.Resource(thv1.Resource(resources[kind]).WithVersion("v1beta1")).Namespace(ns)
		framework.Eventually(t, time.Minute, func() (bool, error) {
			obj, err := client.Get(ctx, strings.ToLower(kind), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, c := range conds {
				c, _ := c.(map[string]any)
				if c["type"] == thv1.ConditionPodTemplateValid && c["status"] == "False" && c["reason"] == thv1.ReasonPodSecurityNotAllowed &&
					strings.HasPrefix(fmt.Sprint(c["message"]), "spec.podTemplateSpec.spec.") {
					return true, nil
				}
			}
			return false, fmt.Errorf("conditions %v", conds)
		}, "%s to report PodSecurityNotAllowed", kind)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		kinds := map[string]bool{}
		for _, e := range evs.Items {
			if e.Type == "Warning" && e.Reason == thv1.ReasonPodSecurityNotAllowed {
				kinds[e.InvolvedObject.Kind] = true
			}
		}
		return len(kinds) == len(refused), fmt.Errorf("Warning events for %v", kinds)
	}, "a Warning event for each kind")
	deps, err := env.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sets, err := env.Kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items)+len(sets.Items) != 0 {
		t.Errorf("%d Deployments and %d StatefulSets created for refused workloads", len(deps.Items), len(sets.Items))
	}
}
