package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// RunnerLabels are labels the ToolHive proxy runner puts on the StatefulSet
// and Services it creates for MCPServer n (among others of its own).
func RunnerLabels(n string) map[string]string {
	return map[string]string{"app": n, naming.LabelToolhive: "true", naming.LabelToolhiveName: n}
}

// CreateRunnerObjects creates, in ns, the objects the proxy runner creates
// for MCPServer n (there is no kubelet to run it): StatefulSet <n> and
// Services mcp-<n>-headless and mcp-<n>, carrying labels. With other
// labels they are lookalikes: someone else's objects under those names. It
// returns them by "Kind/name".
func (e *Env) CreateRunnerObjects(t testing.TB, ns, n string, labels map[string]string) map[string]metav1.Object {
	t.Helper()
	ctx := context.Background()
	out := map[string]metav1.Object{}
	selector := map[string]string{"app": n}
	sts, err := e.Kube.AppsV1().StatefulSets(ns).Create(ctx, RunnerStatefulSet(ns, n, labels), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out["StatefulSet/"+n] = sts
	for _, name := range []string{"mcp-" + n + "-headless", "mcp-" + n} {
		svc, err := e.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}, Selector: selector},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out["Service/"+name] = svc
	}
	return out
}

// RunnerStatefulSet is a stand-in for the StatefulSet the proxy runner
// creates for MCPServer n in ns (naming.MCPServerRunnerStatefulSetName),
// carrying labels (RunnerLabels(n) for the runner's own), its pods
// selected by app=n.
func RunnerStatefulSet(ns, n string, labels map[string]string) *appsv1.StatefulSet {
	selector := map[string]string{"app": n}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: naming.MCPServerRunnerStatefulSetName(n), Namespace: ns, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mcp", Image: "example.com/mcp:1"}}}},
		},
	}
}

// UnlabelChild removes the label key from a child of hivekeeper, as a hand
// edit would, and waits until the label is back with its value. It
// returns the child's UID before and after: taking the child back must
// keep the same object.
func (e *Env) UnlabelChild(t testing.TB, resource schema.GroupVersionResource, ns, name, key string) (before, after types.UID) {
	t.Helper()
	ctx := context.Background()
	client := e.Dynamic.Resource(resource).Namespace(ns)
	obj, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before = obj.GetUID()
	value := obj.GetLabels()[key]
	unlabel := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)
	if _, err := client.Patch(ctx, name, types.MergePatchType, []byte(unlabel), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, func() (bool, error) {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		after = obj.GetUID()
		return value != "" && obj.GetLabels()[key] == value, fmt.Errorf("labels %v", obj.GetLabels())
	}, "the %s label of %s %s/%s to be restored", key, resource.Resource, ns, name)
	return before, after
}
