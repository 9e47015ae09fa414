package plugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// labelNeighbour marks the objects of a cluster's neighbours: what no
// operator writes, which the test's own reads leave out as the plugin
// must.
const labelNeighbour = "example.com/neighbour"

func isNeighbour(m metav1.Object) bool { return m.GetLabels()[labelNeighbour] == "true" }

// addNeighbours creates perNamespace ConfigMaps, ServiceAccounts and
// RoleBindings in each of namespaces that no operator writes (an
// application's configuration, its accounts and bindings), and starts a
// writer rewriting the ConfigMap "lock" of each of rewritten every 2 to 4
// seconds, as a leader-election lock or an autoscaler's status is. The
// writer stops when the test ends (or after an hour at most).
func addNeighbours(t *testing.T, env *framework.Env, perNamespace int, namespaces, rewritten []string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{labelNeighbour: "true", "app.kubernetes.io/name": "shop"}
	for _, ns := range namespaces {
		for i := range perNamespace {
			name := fmt.Sprintf("shop-%03d", i)
			meta := metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
			if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
			if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ns := range rewritten {
		lock := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lock", Labels: labels}, Data: map[string]string{"holder": "0"}}
		if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, lock, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Hour)
	var wg sync.WaitGroup
	for _, ns := range rewritten {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; ; n++ {
				select {
				case <-wctx.Done():
					return
				case <-time.After(2*time.Second + rand.N(2*time.Second)):
				}
				patch := `{"data":{"holder":"` + strconv.Itoa(n) + `"}}`
				_, err := env.Kube.CoreV1().ConfigMaps(ns).Patch(wctx, "lock", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				if err != nil && wctx.Err() == nil && !apierrors.IsNotFound(err) {
					t.Errorf("rewriting %s/lock: %v", ns, err)
					return
				}
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}
