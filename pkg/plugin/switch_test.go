package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
)

// hivekeeperDeployment is hivekeeper's chart installed scaled to 0.
func hivekeeperDeployment() *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": "hivekeeper", labelInstance: "hivekeeper", "app.kubernetes.io/component": "controller"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "hivekeeper-system", Name: "hivekeeper",
			Labels: map[string]string{"app.kubernetes.io/part-of": "hivekeeper", labelInstance: "hivekeeper", "app.kubernetes.io/component": "controller"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				ServiceAccountName: "hivekeeper", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "mirror"}},
				Containers: []corev1.Container{{Name: "controller", Image: "registry.example.com/hivekeeper:v1", Args: []string{"--workers=16"}}}}}},
	}
}

func policyBinding(actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hivekeeper-workloads", Labels: map[string]string{"app.kubernetes.io/part-of": "hivekeeper", labelInstance: "hivekeeper"}},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "hivekeeper-workloads", ValidationActions: actions},
	}
}

var (
	applications    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	applicationSets = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}
)

// argoApplication is an Application with automated sync on: "toolhive"
// is the one the operator's tracking annotation names.
func argoApplication(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"namespace": "argocd", "name": name},
		"spec":     map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}}},
	}}
}

// switchClients are fakes of a cluster that ToolHive's operator runs and
// hivekeeper's chart is installed in, scaled to 0. Reactors stand in for
// the cluster's controllers: a Deployment's status follows its replicas,
// a pod runs, a CRD is Established.
func switchClients(t *testing.T, crds ...runtime.Object) clients {
	t.Helper()
	kube, th := converged(t, server())
	c := fakeClients(append(kube, hivekeeperDeployment(), policyBinding(admissionregistrationv1.Deny)), th, crds...)
	k := c.kube.(*k8sfake.Clientset)
	k.PrependReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := k.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(clienttesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		n := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, ReadyReplicas: n}
		return true, d, nil
	})
	k.PrependReactor("get", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := k.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(clienttesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pull-check", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		return true, p, nil
	})
	// The fake names nothing created with a generateName.
	k.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Name == "" {
			p.Name = p.GenerateName + "x1"
		}
		return false, nil, nil
	})
	x := c.crds.(*apiextensionsfake.Clientset)
	x.PrependReactor("get", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj, err := x.Tracker().Get(a.GetResource(), "", a.(clienttesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		crd := obj.(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
		return true, crd, nil
	})
	lists := map[schema.GroupVersionResource]string{applications: "ApplicationList", applicationSets: "ApplicationSetList"}
	ours, err := hivekeeperCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range ours {
		for _, v := range crd.Spec.Versions {
			lists[schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}] = crd.Spec.Names.ListKind
		}
	}
	c.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, argoApplication("toolhive"), argoApplication("toolhive-crds"))
	return c
}

func testSwitchOptions() switchOptions {
	return switchOptions{preflight: preflightOptions{timeout: time.Minute}, replicas: 2,
		quiet: 50 * time.Millisecond, wait: 10 * time.Second, interval: 10 * time.Millisecond,
		yes: true, lockTimeout: time.Minute, host: "laptop", version: "v1.2.3", image: "registry.example.com/hivekeeper:v1",
		target: Target{Context: "prod", Cluster: "prod-eu", Server: "https://prod.example.com", User: "alice"}}
}

// writes are the writes the clients received, in order, as "verb
// resource[/subresource] name".
func writes(c clients) []string {
	var out []string
	for _, f := range []*clienttesting.Fake{&c.kube.(*k8sfake.Clientset).Fake, &c.crds.(*apiextensionsfake.Clientset).Fake, &c.dyn.(*dynamicfake.FakeDynamicClient).Fake, &c.toolhive.(*thfake.Clientset).Fake} {
		for _, a := range f.Actions() {
			w, ok := toWrite(a)
			if !ok || w.gvr.Resource == "events" {
				continue
			}
			if ca, ok := a.(clienttesting.CreateAction); ok && w.name == "" {
				w.name = objectMetaOf(ca.GetObject()).GetGenerateName()
			}
			r := w.gvr.Resource
			if w.subresource != "" {
				r += "/" + w.subresource
			}
			out = append(out, w.verb+" "+r+" "+w.name)
		}
		f.ClearActions()
	}
	return out
}

// withoutRenewals are ws without the patches of the record: a run
// renews it at every step.
func withoutRenewals(ws []string) []string {
	return slices.DeleteFunc(ws, func(w string) bool { return w == "patch configmaps hivekeeper-switch" })
}

func replicasOf(t *testing.T, c clients, ns, name string) int32 {
	t.Helper()
	d, err := c.kube.AppsV1().Deployments(ns).Get(context.Background(), name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(d.Spec.Replicas, 1)
}

func automated(t *testing.T, c clients, name string) any {
	t.Helper()
	app, err := c.dyn.Resource(applications).Namespace("argocd").Get(context.Background(), name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedFieldCopy(app.Object, "spec", "syncPolicy", "automated")
	return v
}

// A switch on a cluster whose children hivekeeper would leave as they are
// writes exactly this, in this order for each client (the writes of the
// three clients are listed one client after the other): the image check,
// the record, the Argo CD pauses, ToolHive's operator to 0, the CRDs,
// hivekeeper up, the record's phase. switch --back undoes each from the record, sets the
// admission policy to Warn and deletes the record; a second switch
// restores the policy.
func TestSwitchAndBack(t *testing.T) {
	mcpservers := crd("mcpservers", "MCPServer", "v1beta1")
	mcpservers.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true}, {Name: "v1beta1", Served: true, Storage: true}}
	mcpservers.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	// Argo CD keeps ToolHive's CRDs too, through another Application.
	mcpservers.Annotations = map[string]string{annotationArgoTracking: "toolhive-crds:apiextensions.k8s.io/CustomResourceDefinition:/" + mcpservers.Name}
	c := switchClients(t, mcpservers)
	ours, err := hivekeeperCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := &progress{w: &out, text: true}
	writes(c) // the seed
	r, err := switchTo(context.Background(), c, testSwitchOptions(), p, logr.Discard())
	if err != nil {
		t.Fatalf("switch: %v\n%s", err, out.String())
	}
	if r.ExitCode != exitOK || r.Refused != "" {
		t.Fatalf("switch exit %d: %s\n%s", r.ExitCode, r.Summary, out.String())
	}
	want := []string{
		"create configmaps hivekeeper-switch", // the lock, first
		"create pods hivekeeper-pull-check-",
		"delete pods hivekeeper-pull-check-x1",
		"patch deployments toolhive-operator",
		"patch deployments hivekeeper",
	}
	var crdWrites []string
	for _, crd := range ours {
		verb := "create"
		if crd.Name == mcpservers.Name {
			verb = "update"
		}
		crdWrites = append(crdWrites, verb+" customresourcedefinitions "+crd.Name)
	}
	want = append(want, crdWrites...)
	want = append(want, "patch applications toolhive", "patch applications toolhive-crds")
	if got := withoutRenewals(writes(c)); !slices.Equal(got, want) {
		t.Errorf("switch wrote\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
	if n := replicasOf(t, c, "toolhive-system", "toolhive-operator"); n != 0 {
		t.Errorf("ToolHive's operator runs %d replicas after the switch", n)
	}
	if n := replicasOf(t, c, "hivekeeper-system", "hivekeeper"); n != 2 {
		t.Errorf("hivekeeper runs %d replicas after the switch", n)
	}
	for _, app := range []string{"toolhive", "toolhive-crds"} {
		if a := automated(t, c, app); a != nil {
			t.Errorf("Application %s's automated sync is %v after the switch", app, a)
		}
	}
	got, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), mcpservers.Name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Versions) == 0 || got.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the MCPServer CRD after the switch: %d versions, labels %v", len(got.Spec.Versions), got.Labels)
	}
	rec, err := readRecord(context.Background(), c.kube, "hivekeeper-system")
	if err != nil || rec == nil || rec.Phase != phaseSwitched || rec.Operator.Replicas != 1 || len(rec.Paused) != 2 {
		t.Errorf("record %+v, %v", rec, err)
	}
	for _, line := range []string{
		"- hivekeeper's image registry.example.com/hivekeeper:v1 pulled and started",
		"- recorded ToolHive's operator toolhive-system/toolhive-operator (1 replica) and its 1 CRD in ConfigMap hivekeeper-system/hivekeeper-switch",
		"  note: Helm release toolhive-system/toolhive-operator installed ToolHive's operator",
		"- paused Argo CD Application argocd/toolhive, which keeps ToolHive's operator",
		"- paused Argo CD Application argocd/toolhive-crds, which keeps ToolHive's CRDs",
		"- scaled ToolHive's operator toolhive-system/toolhive-operator to 0; its pods are gone",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the switch's output lacks %q:\n%s", line, out.String())
		}
	}

	// A composite tool definition hivekeeper finalized, beside another
	// controller's finalizer, and one it did not.
	for _, d := range []*thv1.VirtualMCPCompositeToolDefinition{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "held", Finalizers: []string{"example.com/keep", thv1.VirtualMCPCompositeToolDefinitionFinalizer}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "free"}},
	} {
		if _, err := c.toolhive.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions("team-a").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// ToolHive's Role of the runner, which hivekeeper left in place.
	if _, err := c.kube.RbacV1().Roles("team-a").Create(context.Background(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch-proxy-runner"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	writes(c)
	out.Reset()
	back, err := switchBack(context.Background(), c, testSwitchOptions(), p)
	if err != nil {
		t.Fatalf("switch --back: %v\n%s", err, out.String())
	}
	if back.ExitCode != exitOK {
		t.Fatalf("switch --back exit %d: %s\n%s", back.ExitCode, back.Summary, out.String())
	}
	want = []string{
		"patch deployments hivekeeper",
		"patch validatingadmissionpolicybindings hivekeeper-workloads",
		// hivekeeper's runner binding, bound to ToolHive's Role again
		// (ToolHive's operator never changes a binding's roleRef).
		"delete rolebindings fetch-proxy-runner",
		"create rolebindings fetch-proxy-runner",
		"patch deployments toolhive-operator",
		"update customresourcedefinitions " + mcpservers.Name,
		"patch applications toolhive",
		"patch applications toolhive-crds",
		"patch virtualmcpcompositetooldefinitions held",
	}
	if got := withoutRenewals(writes(c)); !slices.Equal(got, want) {
		t.Errorf("switch --back wrote\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
	if n := replicasOf(t, c, "toolhive-system", "toolhive-operator"); n != 1 {
		t.Errorf("ToolHive's operator runs %d replicas after switch --back", n)
	}
	if held, err := c.toolhive.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions("team-a").Get(context.Background(), "held", getOpts); err != nil || !slices.Equal(held.Finalizers, []string{"example.com/keep"}) {
		t.Errorf("the composite tool definition's finalizers after switch --back: %v, %v", held.Finalizers, err)
	}
	if n := replicasOf(t, c, "hivekeeper-system", "hivekeeper"); n != 0 {
		t.Errorf("hivekeeper runs %d replicas after switch --back", n)
	}
	for _, app := range []string{"toolhive", "toolhive-crds"} {
		if a := automated(t, c, app); !equalJSON(a, map[string]any{"prune": true, "selfHeal": true}) {
			t.Errorf("Application %s's automated sync is %v after switch --back", app, a)
		}
	}
	got, err = c.crds.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), mcpservers.Name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(got.Spec, mcpservers.Spec) {
		t.Errorf("the MCPServer CRD after switch --back: %s, want %s", toJSON(got.Spec), toJSON(mcpservers.Spec))
	}
	b, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(context.Background(), "hivekeeper-workloads", getOpts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(actions(b.Spec.ValidationActions), []string{"Warn"}) || b.Annotations[annotationSetAside] != `["Deny"]` {
		t.Errorf("the policy binding after switch --back: %v, annotations %v", b.Spec.ValidationActions, b.Annotations)
	}
	// The record stays, released, as the trace of the switch.
	if rec, err := readRecord(context.Background(), c.kube, "hivekeeper-system"); err != nil || rec == nil || rec.Phase != phaseBack || rec.Holder != nil || rec.Finished == nil {
		t.Errorf("the record after switch --back: %+v, %v", rec, err)
	}

	// Forward again: the policy's actions come back.
	if r, err := switchTo(context.Background(), c, testSwitchOptions(), &progress{w: &out}, logr.Discard()); err != nil || r.ExitCode != exitOK {
		t.Fatalf("the second switch: %v, %+v", err, r)
	}
	b, err = c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(context.Background(), "hivekeeper-workloads", getOpts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(actions(b.Spec.ValidationActions), []string{"Deny"}) || b.Annotations[annotationSetAside] != "" {
		t.Errorf("the policy binding after the second switch: %v, annotations %v", b.Spec.ValidationActions, b.Annotations)
	}
}

// A switch refused writes nothing: a predicted restart without
// --allow-restarts, hivekeeper already running, a switch already
// recorded, no ToolHive operator, an image of another version than the
// plugin's that --image does not name; --back with no record.
func TestSwitchRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, c clients)
		back  bool
		code  int
		says  string
		opts  func(*switchOptions)
	}{
		{name: "restart predicted", code: exitRestarts, says: "1 pod restarts, 0 objects recreated, 0 ConfigMaps rewritten: run switch --allow-restarts",
			setup: func(t *testing.T, c clients) {
				patch := `{"spec":{"template":{"spec":{"containers":[{"name":"toolhive","image":"registry.example.com/toolhive/proxyrunner:v0.62.0"}]}}}}`
				if _, err := c.kube.AppsV1().Deployments("team-a").Patch(context.Background(), "fetch", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "hivekeeper runs", code: exitBlocked, says: "already runs 2 replicas",
			setup: func(t *testing.T, c clients) {
				if _, err := c.kube.AppsV1().Deployments("hivekeeper-system").Patch(context.Background(), "hivekeeper", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "switch recorded", code: exitBlocked, says: "records a switch (switched)",
			setup: func(t *testing.T, c clients) {
				cm, err := recordConfigMap("hivekeeper-system", &switchRecord{Phase: phaseSwitched})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.kube.CoreV1().ConfigMaps("hivekeeper-system").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "no operator", code: exitBlocked, says: "no ToolHive operator runs here",
			setup: func(t *testing.T, c clients) {
				if err := c.kube.AppsV1().Deployments("toolhive-system").Delete(context.Background(), "toolhive-operator", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "back without a record", back: true, code: exitBlocked, says: "no switch is recorded"},
		{name: "another version's image", code: exitBlocked, opts: func(o *switchOptions) { o.image = "" },
			says: "hivekeeper's Deployment hivekeeper-system/hivekeeper runs registry.example.com/hivekeeper:v1 (v1), not the plugin's version v1.2.3: use the plugin of that release, or pass --image registry.example.com/hivekeeper:v1"},
		{name: "--image names another image", code: exitBlocked, opts: func(o *switchOptions) { o.image = "registry.example.com/hivekeeper:v2" },
			says: "--image names registry.example.com/hivekeeper:v2, but hivekeeper's Deployment hivekeeper-system/hivekeeper runs registry.example.com/hivekeeper:v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
			if tc.setup != nil {
				tc.setup(t, c)
			}
			writes(c)
			var r *SwitchReport
			var err error
			p := &progress{w: &bytes.Buffer{}}
			o := testSwitchOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			if tc.back {
				r, err = switchBack(context.Background(), c, o, p)
			} else {
				r, err = switchTo(context.Background(), c, o, p, logr.Discard())
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != tc.code || !strings.Contains(r.Refused, tc.says) {
				t.Errorf("exit %d, refused %q; want %d, %q", r.ExitCode, r.Refused, tc.code, tc.says)
			}
			if w := writes(c); len(w) != 0 {
				t.Errorf("a refused switch wrote %v", w)
			}
		})
	}
}

// The image check waits out a first ErrImagePull (the kubelet pulls
// again) and fails on a back-off, naming it, before the switch changed
// anything: no record, no pause.
func TestPullCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		states []string // the container's waiting reasons, read in turn; "" runs
		fails  string
	}{
		{"a pull that fails once", []string{"ContainerCreating", "ErrImagePull", ""}, ""},
		{"a pull that backs off", []string{"ErrImagePull", "ImagePullBackOff"}, "ImagePullBackOff"},
		{"an image name that cannot be", []string{"InvalidImageName"}, "InvalidImageName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
			k := c.kube.(*k8sfake.Clientset)
			read := 0
			k.PrependReactor("get", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				obj, err := k.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(clienttesting.GetAction).GetName())
				if err != nil {
					return true, nil, err
				}
				p := obj.(*corev1.Pod).DeepCopy()
				state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
				if r := tc.states[min(read, len(tc.states)-1)]; r != "" {
					state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r}}
				}
				read++
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pull-check", State: state}}
				return true, p, nil
			})
			writes(c)
			o := testSwitchOptions()
			_, err := switchTo(context.Background(), c, o, &progress{w: io.Discard}, logr.Discard())
			switch {
			case tc.fails == "" && err != nil:
				t.Fatalf("switch: %v", err)
			case tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)):
				t.Fatalf("switch: %v, want an error naming %s", err, tc.fails)
			case tc.fails != "":
				want := []string{"create configmaps hivekeeper-switch", "create pods hivekeeper-pull-check-", "delete pods hivekeeper-pull-check-x1", "delete configmaps hivekeeper-switch"}
				if got := withoutRenewals(writes(c)); !slices.Equal(got, want) {
					t.Errorf("a switch whose image does not pull wrote %v, want %v: nothing but the record, put back", got, want)
				}
			}
		})
	}
}

// When something the switch did not pause scales ToolHive's operator back
// up while hivekeeper takes over (here, as hivekeeper is scaled up), the
// switch fails, says so, and keeps the record for switch --back.
func TestSwitchFailsWhenToolHiveComesBack(t *testing.T) {
	c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
	k := c.kube.(*k8sfake.Clientset)
	k.PrependReactor("patch", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.PatchAction).GetName() == "hivekeeper" {
			obj, err := k.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), "toolhive-system", "toolhive-operator")
			if err != nil {
				return true, nil, err
			}
			op := obj.(*appsv1.Deployment).DeepCopy()
			op.Spec.Replicas = ptr.To[int32](1)
			if err := k.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), op, "toolhive-system"); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	r, err := switchTo(context.Background(), c, testSwitchOptions(), &progress{w: io.Discard}, logr.Discard())
	if err == nil || !strings.Contains(err.Error(), "was scaled back to 1 while hivekeeper took over") {
		t.Fatalf("switch: %v, %+v", err, r)
	}
	if rec, err := readRecord(context.Background(), c.kube, "hivekeeper-system"); err != nil || rec == nil || rec.Phase != phaseSwitching {
		t.Errorf("the record after the failed switch: %+v, %v", rec, err)
	}
}

// switch --back refuses when objects may be stored in a version the
// recorded CRDs do not serve (going back to a release that served only
// v1alpha1 after hivekeeper stored v1beta1), before it changes anything.
func TestSwitchBackRefusesAnUnservedStoredVersion(t *testing.T) {
	alpha := crd("mcpservers", "MCPServer", "v1alpha1")
	alpha.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true}}
	c := switchClients(t, alpha)
	if r, err := switchTo(context.Background(), c, testSwitchOptions(), &progress{w: &bytes.Buffer{}}, logr.Discard()); err != nil || r.ExitCode != exitOK {
		t.Fatalf("switch: %v, %+v", err, r)
	}
	cur, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), alpha.Name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.StoredVersions = []string{"v1alpha1", "v1beta1"}
	if _, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().UpdateStatus(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writes(c)
	r, err := switchBack(context.Background(), c, testSwitchOptions(), &progress{w: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != exitBlocked || !strings.Contains(r.Refused, "mcpservers.toolhive.stacklok.dev: objects may be stored as v1beta1") {
		t.Errorf("exit %d, refused %q", r.ExitCode, r.Refused)
	}
	if w := writes(c); len(w) != 0 {
		t.Errorf("a refused switch --back wrote %v", w)
	}
}

// The comparison names what changed between two reads: a pod template
// (with its first field), a new UID, ConfigMap data, new and gone
// objects, and counts new resourceVersions by kind; a restart preflight
// did not predict is listed.
func TestCompareSnapshots(t *testing.T) {
	dep := func(name, uid, rv, image string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID(uid), ResourceVersion: rv},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}}}
	}
	cm := func(name, rv, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: "cm-" + types.UID(name), ResourceVersion: rv}, Data: map[string]string{"k": v}}
	}
	snap := func(objs ...runtime.Object) *snapshot {
		s := &snapshot{live: map[string]runtime.Object{}}
		for _, o := range objs {
			m := objectMetaOf(o)
			r := map[string]string{"Deployment": "deployments", "ConfigMap": "configmaps", "Pod": "pods"}[kindOf(o)]
			s.live[r+"/"+m.GetNamespace()+"/"+m.GetName()] = o
		}
		return s
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", ResourceVersion: "1"}}
	podAfter := pod.DeepCopy()
	podAfter.ResourceVersion = "2"
	before := snap(dep("same", "1", "1", "x"), dep("rolled", "2", "1", "x"), dep("predicted", "3", "1", "x"), dep("recreated", "4", "1", "x"),
		dep("deleted", "5", "1", "x"), cm("cfg", "1", "a"), cm("labelled", "1", "a"), cm("gone", "1", "a"), pod)
	after := snap(dep("same", "1", "1", "x"), dep("rolled", "2", "2", "y"), dep("predicted", "3", "2", "y"), dep("recreated", "40", "5", "x"),
		cm("cfg", "2", "b"), cm("labelled", "2", "a"), cm("new", "1", "a"), podAfter)
	o := compareSnapshots(before, after, []Restart{{Change: Change{Kind: "Deployment", Namespace: "a", Name: "predicted"}}})
	want := &Outcome{
		Restarted: []Change{
			{Kind: "Deployment", Namespace: "a", Name: "predicted", Field: "spec.template.spec.containers[0].image"},
			{Kind: "Deployment", Namespace: "a", Name: "recreated"},
			{Kind: "Deployment", Namespace: "a", Name: "rolled", Field: "spec.template.spec.containers[0].image"},
		},
		Recreated:   []Change{{Kind: "Deployment", Namespace: "a", Name: "recreated"}},
		Rewritten:   []Change{{Kind: "ConfigMap", Namespace: "a", Name: "cfg", Field: "data", Detail: describe("data", cm("cfg", "1", "a"), cm("cfg", "2", "b"))}},
		Created:     []Change{{Kind: "ConfigMap", Namespace: "a", Name: "new"}},
		Deleted:     []Change{{Kind: "ConfigMap", Namespace: "a", Name: "gone"}, {Kind: "Deployment", Namespace: "a", Name: "deleted"}},
		Changed:     map[string]int{"ConfigMap": 2, "Deployment": 3},
		Unpredicted: []string{"Deployment a/recreated", "Deployment a/rolled", "Deployment a/deleted (deleted)"},
	}
	if !equalJSON(o, want) {
		t.Errorf("outcome\n got %s\nwant %s", toJSON(o), toJSON(want))
	}
}

func TestFlagValue(t *testing.T) {
	args := []string{"--leader-elect", "--leader-elect-id=hk", "--namespaces", "a,b", "--x=false"}
	for _, tc := range []struct{ name, want string }{{"leader-elect", "true"}, {"leader-elect-id", "hk"}, {"namespaces", "a,b"}, {"x", "false"}, {"y", ""}} {
		if got, _ := flagValue(args, tc.name); got != tc.want {
			t.Errorf("--%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The record keeps ToolHive's CRDs whole, compressed, and gives them back.
func TestRecordKeepsTheCRDs(t *testing.T) {
	kube := k8sfake.NewClientset()
	ours, err := hivekeeperCRDs()
	if err != nil {
		t.Fatal(err)
	}
	rec := &switchRecord{Phase: phaseSwitching, Hivekeeper: deploymentRef{Namespace: "hk", Name: "hivekeeper", Replicas: 2}}
	if err := createRecord(context.Background(), kube, rec, ours, nil); err != nil {
		t.Fatal(err)
	}
	back, err := recordedCRDs(context.Background(), kube, "hk")
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSON(back, ours) {
		t.Error("the CRDs read back from the record differ from those written")
	}
	cm, err := kube.CoreV1().ConfigMaps("hk").Get(context.Background(), recordName, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ours)
	if n := len(cm.BinaryData[crdsKey]); n*4 > len(raw) {
		t.Errorf("the record holds %d bytes for %d bytes of CRDs", n, len(raw))
	}
	if err := createRecord(context.Background(), kube, rec, ours, nil); !errors.Is(err, errTaken) {
		t.Errorf("a second record over the first: %v, want errTaken", err)
	}
}

// The namespaces count as quiet while only what changes on its own
// changes (a Deployment's status, vmcp's report of its backends), and not
// while an operator writes a spec, metadata, a phase, a condition or a
// ConfigMap.
func TestSameState(t *testing.T) {
	vmcp := &thv1.VirtualMCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "v", ResourceVersion: "1", Generation: 1},
		Status: thv1.VirtualMCPServerStatus{Phase: "Ready", ObservedGeneration: 1,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}}}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "v", ResourceVersion: "1", Generation: 1}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c", ResourceVersion: "1"}}
	snap := func(v *thv1.VirtualMCPServer, d *appsv1.Deployment, c *corev1.ConfigMap) *snapshot {
		return &snapshot{live: map[string]runtime.Object{"deployments/a/v": d, "configmaps/a/c": c}, toolhive: []runtime.Object{v}}
	}
	base := snap(vmcp, dep, cm)
	for _, tc := range []struct {
		name string
		edit func(v *thv1.VirtualMCPServer, d *appsv1.Deployment, c *corev1.ConfigMap)
		same bool
	}{
		{"nothing", func(*thv1.VirtualMCPServer, *appsv1.Deployment, *corev1.ConfigMap) {}, true},
		{"a Deployment's status", func(_ *thv1.VirtualMCPServer, d *appsv1.Deployment, _ *corev1.ConfigMap) {
			d.ResourceVersion, d.Status.ReadyReplicas = "2", 1
		}, true},
		{"vmcp's report", func(v *thv1.VirtualMCPServer, _ *appsv1.Deployment, _ *corev1.ConfigMap) {
			v.ResourceVersion, v.Status.BackendCount = "2", 3
			v.Status.DiscoveredBackends = []thv1.DiscoveredBackend{{Name: "b"}}
			v.Status.Conditions[0].LastTransitionTime = metav1.Now()
		}, true},
		{"a Deployment's annotation", func(_ *thv1.VirtualMCPServer, d *appsv1.Deployment, _ *corev1.ConfigMap) {
			d.ResourceVersion, d.Annotations = "2", map[string]string{"a": "b"}
		}, false},
		{"a pod template", func(_ *thv1.VirtualMCPServer, d *appsv1.Deployment, _ *corev1.ConfigMap) {
			d.ResourceVersion, d.Spec.Template.Labels = "2", map[string]string{"a": "b"}
		}, false},
		{"a phase", func(v *thv1.VirtualMCPServer, _ *appsv1.Deployment, _ *corev1.ConfigMap) {
			v.ResourceVersion, v.Status.Phase = "2", "Pending"
		}, false},
		{"a condition's reason", func(v *thv1.VirtualMCPServer, _ *appsv1.Deployment, _ *corev1.ConfigMap) {
			v.ResourceVersion, v.Status.Conditions[0].Reason = "2", "Other"
		}, false},
		{"a finalizer", func(v *thv1.VirtualMCPServer, _ *appsv1.Deployment, _ *corev1.ConfigMap) {
			v.ResourceVersion, v.Finalizers = "2", []string{"f"}
		}, false},
		{"a ConfigMap", func(_ *thv1.VirtualMCPServer, _ *appsv1.Deployment, c *corev1.ConfigMap) { c.ResourceVersion = "2" }, false},
	} {
		v, d, c := vmcp.DeepCopy(), dep.DeepCopy(), cm.DeepCopy()
		tc.edit(v, d, c)
		if got := sameState(base, snap(v, d, c)); got != tc.same {
			t.Errorf("%s: same %v, want %v", tc.name, got, tc.same)
		}
	}
}

// A switch whose namespaces were still changing at --wait does not pass:
// its comparison leaves out whatever changed after it.
func TestConcludeUnsettled(t *testing.T) {
	for _, settled := range []bool{true, false} {
		r := &SwitchReport{Direction: "hivekeeper", Outcome: &Outcome{Settled: settled, Took: "1s", Changed: map[string]int{}}}
		r.conclude()
		want := exitOK
		if !settled {
			want = exitFailed
		}
		if r.ExitCode != want || strings.Contains(r.Summary, "still changing") == settled {
			t.Errorf("settled %v: exit %d, summary %q", settled, r.ExitCode, r.Summary)
		}
	}
}
