package workloadtest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/pkg/drift/drifttest"
)

// ApplyServerBehaviour changes what the fakes store the way a real API
// server and its neighbours would: a JSON round trip, defaulting, and the
// labels and annotations other controllers add. A comparator that looked
// at any of these would see drift forever.
func (f *Fixture) ApplyServerBehaviour() {
	f.T.Helper()
	ctx := context.Background()
	deps, err := f.Kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for i := range deps.Items {
		d := drifttest.RoundTrip(&deps.Items[i])
		drifttest.DefaultDeployment(d)
		if _, err := f.Kube.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	sets, err := f.Kube.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for i := range sets.Items {
		s := drifttest.RoundTrip(&sets.Items[i])
		drifttest.DefaultStatefulSet(s)
		if _, err := f.Kube.AppsV1().StatefulSets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	svcs, err := f.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for i := range svcs.Items {
		s := drifttest.RoundTrip(&svcs.Items[i])
		drifttest.DefaultService(s)
		if _, err := f.Kube.CoreV1().Services(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	sas, err := f.Kube.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for i := range sas.Items {
		sa := sas.Items[i].DeepCopy()
		sa.Secrets = []corev1.ObjectReference{{Name: sa.Name + "-token"}}
		if _, err := f.Kube.CoreV1().ServiceAccounts(sa.Namespace).Update(ctx, sa, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
}
