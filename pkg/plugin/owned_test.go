package plugin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	thfake "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/fake"
)

// neighbours are n ConfigMaps, ServiceAccounts and RoleBindings of each
// namespace that no operator writes: an application's configuration, a
// leader-election lock, another controller's bindings.
func neighbours(n int, namespaces ...string) []runtime.Object {
	var out []runtime.Object
	for _, ns := range namespaces {
		for i := range n {
			name := fmt.Sprintf("neighbour-%03d", i)
			out = append(out,
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1",
					Labels: map[string]string{"app.kubernetes.io/name": "shop"}}, Data: map[string]string{"k": "v"}},
				&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1",
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "shop", UID: "u"}}},
					RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"}})
		}
	}
	return out
}

// rewriting makes every list of ConfigMaps in kube first rewrite the
// neighbour ConfigMap ns/name, as a writer rewriting it every moment
// would: a new resourceVersion and new data each time.
func rewriting(t *testing.T, kube *k8sfake.Clientset, ns, name string) {
	rv := 100
	kube.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		rv++
		obj, err := kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), ns, name)
		if err != nil {
			t.Error(err)
			return false, nil, nil
		}
		cm := obj.(*corev1.ConfigMap).DeepCopy()
		cm.ResourceVersion, cm.Data = strconv.Itoa(rv), map[string]string{"k": strconv.Itoa(rv)}
		if err := kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), cm, ns); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
}

// A switch waits on and compares only what the operators write: the
// children labelled as theirs or owned by a custom resource (the runner's
// ServiceAccount and RoleBinding carry only an owner reference), and the
// custom resources. Hundreds of neighbours, one of them rewritten at
// every read, neither keep the namespaces from settling nor appear in the
// comparison; a child of an operator that changes does.
func TestTheSwitchWatchesOnlyWhatTheOperatorsWrite(t *testing.T) {
	ctx := context.Background()
	kubeObjs, th := converged(t, server())
	kube := k8sfake.NewClientset(append(kubeObjs, neighbours(300, "team-a", "team-b")...)...)
	c := clients{kube: kube, toolhive: thfake.NewSimpleClientset(th...)}

	before, err := ownedSnapshot(ctx, c.kube, c.toolhive, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range objectsOf(before) {
		keys = append(keys, k)
		if strings.Contains(k, "neighbour-") {
			t.Errorf("the switch's snapshot holds %s, which no operator writes", k)
		}
	}
	for _, want := range []string{"serviceaccounts/team-a/fetch-proxy-runner", "rolebindings/team-a/fetch-proxy-runner",
		"configmaps/team-a/fetch-runconfig", "deployments/team-a/fetch", "services/team-a/mcp-fetch-proxy", "mcpserver/team-a/fetch"} {
		if !slices.Contains(keys, want) {
			t.Errorf("the switch's snapshot lacks %s; it holds %v", want, keys)
		}
	}

	rewriting(t, kube, "team-b", "neighbour-007")
	after, settled, err := settle(ctx, c, nil, 50*time.Millisecond, 3*time.Second, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !settled {
		t.Fatal("a neighbour rewritten at every read kept the namespaces from settling")
	}
	if o := compareSnapshots(before, after, nil); len(o.Changed)+len(o.Rewritten)+len(o.Created)+len(o.Deleted) != 0 {
		t.Errorf("the comparison names what no operator wrote: %s", toJSON(o))
	}

	// The RunConfig rewritten by an operator is in the comparison.
	cm, err := kube.CoreV1().ConfigMaps("team-a").Get(ctx, "fetch-runconfig", getOpts)
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["runconfig.json"] = `{"changed":true}`
	cm.ResourceVersion = "999"
	if err := kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), cm, "team-a"); err != nil {
		t.Fatal(err)
	}
	after, err = ownedSnapshot(ctx, c.kube, c.toolhive, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := compareSnapshots(before, after, nil)
	if len(o.Rewritten) != 1 || o.Rewritten[0].Name != "fetch-runconfig" || o.Changed["ConfigMap"] != 1 || len(o.Changed) != 1 {
		t.Errorf("the comparison after the RunConfig's rewrite: %s", toJSON(o))
	}
}

// An operator's child rewritten at every read keeps the namespaces from
// settling: the wait is on the operators' writes.
func TestSettleWaitsOnTheOperatorsWrites(t *testing.T) {
	kubeObjs, th := converged(t, server())
	kube := k8sfake.NewClientset(kubeObjs...)
	rewriting(t, kube, "team-a", "fetch-runconfig")
	_, settled, err := settle(context.Background(), clients{kube: kube, toolhive: thfake.NewSimpleClientset(th...)}, nil,
		50*time.Millisecond, 500*time.Millisecond, 5*time.Millisecond)
	if err != nil || settled {
		t.Errorf("settled %v, %v while the RunConfig was rewritten at every read", settled, err)
	}
}

// A list is read in pages of pageSize, following each continue token to
// the end; a token that expired starts it over.
func TestListPaged(t *testing.T) {
	var all []corev1.ConfigMap
	for i := range 1234 {
		all = append(all, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)}})
	}
	calls, expired := 0, false
	items, err := listPaged(context.Background(), metav1.ListOptions{LabelSelector: "a=b"}, func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
		calls++
		if o.Limit != pageSize || o.LabelSelector != "a=b" {
			t.Errorf("listed with %+v", o)
		}
		from := 0
		if o.Continue != "" {
			from, _ = strconv.Atoi(o.Continue)
		}
		if from == 1000 && !expired {
			expired = true
			return nil, apierrors.NewResourceExpired("the continue token is too old")
		}
		to := min(from+int(o.Limit), len(all))
		page := &corev1.ConfigMapList{Items: all[from:to]}
		if to < len(all) {
			page.Continue = strconv.Itoa(to)
		}
		return page, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(all) || objectMetaOf(items[0]).GetName() != "cm-0000" || objectMetaOf(items[len(items)-1]).GetName() != "cm-1233" {
		t.Errorf("read %d items, want %d", len(items), len(all))
	}
	if calls != 2+1+3 {
		t.Errorf("%d list calls, want 2 pages, an expired token, 3 pages again", calls)
	}
}
