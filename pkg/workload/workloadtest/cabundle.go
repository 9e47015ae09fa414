package workloadtest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// CABundleCheck drives a converged workload whose OIDC config names the
// CA bundle ConfigMap configMap (key ca.crt), which does not exist yet.
type CABundleCheck struct {
	Namespace, ConfigMap string
	// Handler is the controller's CA bundle ConfigMap handler, Queue its
	// queue; Sync converges the workload, Conditions reads its status.
	Handler    cache.ResourceEventHandler
	Queue      workqueue.TypedRateLimitingInterface[cache.ObjectName]
	Sync       func()
	Conditions func() []metav1.Condition
}

// CheckOIDCCABundle asserts CABundleRefValidated as ToolHive v0.63.0's
// operator reports it on the workload: CABundleRefNotFound while the
// ConfigMap is missing, True once it exists with the key; the ConfigMap's
// creation re-syncs the workload through its OIDC config, and the
// condition, advisory, records no Warning event.
func (f *Fixture) CheckOIDCCABundle(t *testing.T, c CABundleCheck) {
	t.Helper()
	want := func(status metav1.ConditionStatus, reason string) {
		t.Helper()
		got := meta.FindStatusCondition(c.Conditions(), thv1.ConditionCABundleRefValidated)
		if got == nil || got.Status != status || got.Reason != reason {
			t.Fatalf("CABundleRefValidated = %+v, want %s %s", got, status, reason)
		}
	}
	want(metav1.ConditionFalse, thv1.ReasonCABundleRefNotFound)
	if w := f.Warnings(); len(w) != 0 {
		t.Errorf("Warning events for an advisory condition: %q", w)
	}
	Drain(c.Queue)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.ConfigMap}, Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----"}}
	if _, err := f.Kube.CoreV1().ConfigMaps(c.Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Handler.OnAdd(cm, false)
	if keys := Drain(c.Queue); len(keys) != 1 {
		t.Errorf("the CA ConfigMap's creation enqueued %v, want the workload", keys)
	}
	f.Refresh()
	c.Sync()
	want(metav1.ConditionTrue, thv1.ReasonCABundleRefValid)
}
