package main

import (
	"context"
	"encoding/json"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
)

// childCopy creates one copy of a child hivekeeper made.
type childCopy struct {
	// resource is the child's resource, as in childResources.
	resource string
	// name is the copy's name; owner is the name of the MCPServer the
	// original belongs to.
	name, owner string
	// create creates the copy, controlled by owners.
	create func(ctx context.Context, owners []metav1.OwnerReference) error
}

// childCopies returns one create per child hivekeeper made in namespace
// from (every object an MCPServer controls: ToolHive labels only some of
// them toolhive=true), each creating the same object in namespace to, in
// the order of childResources.
func childCopies(ctx context.Context, kube kubernetes.Interface, from, to string) ([]childCopy, error) {
	all, create := metav1.ListOptions{}, metav1.CreateOptions{}
	sas, err := kube.CoreV1().ServiceAccounts(from).List(ctx, all)
	if err != nil {
		return nil, err
	}
	rbs, err := kube.RbacV1().RoleBindings(from).List(ctx, all)
	if err != nil {
		return nil, err
	}
	roles, err := kube.RbacV1().Roles(from).List(ctx, all)
	if err != nil {
		return nil, err
	}
	cms, err := kube.CoreV1().ConfigMaps(from).List(ctx, all)
	if err != nil {
		return nil, err
	}
	svcs, err := kube.CoreV1().Services(from).List(ctx, all)
	if err != nil {
		return nil, err
	}
	deps, err := kube.AppsV1().Deployments(from).List(ctx, all)
	if err != nil {
		return nil, err
	}
	out := copies("serviceaccounts", to, sas.Items, func(o *corev1.ServiceAccount) { o.Secrets = nil },
		func(ctx context.Context, o *corev1.ServiceAccount) error {
			_, err := kube.CoreV1().ServiceAccounts(to).Create(ctx, o, create)
			return err
		})
	out = append(out, copies("rolebindings", to, rbs.Items, func(o *rbacv1.RoleBinding) {
		for i := range o.Subjects {
			if o.Subjects[i].Namespace == from {
				o.Subjects[i].Namespace = to
			}
		}
	}, func(ctx context.Context, o *rbacv1.RoleBinding) error {
		_, err := kube.RbacV1().RoleBindings(to).Create(ctx, o, create)
		return err
	})...)
	out = append(out, copies("roles", to, roles.Items, nil, func(ctx context.Context, o *rbacv1.Role) error {
		_, err := kube.RbacV1().Roles(to).Create(ctx, o, create)
		return err
	})...)
	out = append(out, copies("configmaps", to, cms.Items, nil, func(ctx context.Context, o *corev1.ConfigMap) error {
		_, err := kube.CoreV1().ConfigMaps(to).Create(ctx, o, create)
		return err
	})...)
	out = append(out, copies("services", to, svcs.Items, func(o *corev1.Service) { o.Spec.ClusterIP, o.Spec.ClusterIPs = "", nil },
		func(ctx context.Context, o *corev1.Service) error {
			_, err := kube.CoreV1().Services(to).Create(ctx, o, create)
			return err
		})...)
	out = append(out, copies("deployments", to, deps.Items, nil, func(ctx context.Context, o *appsv1.Deployment) error {
		_, err := kube.AppsV1().Deployments(to).Create(ctx, o, create)
		return err
	})...)
	return out, nil
}

// copies returns a childCopy for each of items an MCPServer controls: the
// item created again in namespace to, with what the API server assigned
// cleared (and what clear clears of the kind), controlled by the owners
// the copy's create is given.
func copies[T any, P interface {
	*T
	metav1.Object
}](resource, to string, items []T, clear func(P), create func(context.Context, P) error) []childCopy {
	var out []childCopy
	for i := range items {
		o := P(&items[i])
		owner := serverOwning(o)
		if owner == "" {
			continue
		}
		o.SetNamespace(to)
		o.SetUID("")
		o.SetResourceVersion("")
		o.SetGeneration(0)
		o.SetCreationTimestamp(metav1.Time{})
		o.SetManagedFields(nil)
		o.SetOwnerReferences(nil)
		if clear != nil {
			clear(o)
		}
		out = append(out, childCopy{resource: resource, name: o.GetName(), owner: owner, create: func(ctx context.Context, owners []metav1.OwnerReference) error {
			o.SetOwnerReferences(owners)
			return create(ctx, o)
		}})
	}
	return out
}

// serverOwning is the name of the MCPServer that controls o, "" when none
// does.
func serverOwning(o metav1.Object) string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == "MCPServer" {
		return ref.Name
	}
	return ""
}

// childResources are the kinds of the children hivekeeper makes for an
// MCPServer.
var childResources = []schema.GroupVersionResource{
	{Version: "v1", Resource: "serviceaccounts"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "services"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
}

// deleteChildren deletes the children hivekeeper made in namespace ns
// (what an MCPServer controls), while their owners stay: the floors start from
// the same objects as the cold start did. It returns once the garbage
// collector has removed the Deployments' ReplicaSets and pods too.
func (e *env) deleteChildren(ctx context.Context, r *result, ns string, child func(resource string, o metav1.Object) bool) error {
	start := time.Now()
	var deletes []func(context.Context) error
	for _, gvr := range childResources {
		l, err := e.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, o := range l.Items {
			if !child(gvr.Resource, &o) {
				continue
			}
			name := o.GetName()
			deletes = append(deletes, func(ctx context.Context) error {
				return e.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
			})
		}
	}
	if err := parallel(len(deletes), 16, func(i int) error { return deletes[i](ctx) }); err != nil {
		return err
	}
	// Wait out the garbage collection of their ReplicaSets and pods, or
	// the floor that follows shares the API server with it.
	if err := e.waitPodsGone(ctx, ns); err != nil {
		return err
	}
	logf("N=%d: deleted the %d children in %s, and their pods, in %.2fs", r.N, len(deletes), ns, time.Since(start).Seconds())
	return nil
}

// floorNS is where the floors of the first cold round create their
// copies; later rounds add their number.
const floorNS = "floor"

// floor measures, in the same run as the cold start, the least time the
// API server needs for what the cold start did, twice:
//
//   - creates: the same children created again by plain client-go on
//     c.concurrency clients, one kind after another (Services timed
//     apart);
//   - spec: what any controller that writes these children must send for
//     the same MCPServers (the finalizer patch, the six creates, the status
//     patch, in that order per MCPServer, on c.concurrency clients), with
//     no watches and no work of its own. Cold ÷ spec floor is hivekeeper's
//     own overhead.
//
// It stops the controller and deletes the originals first, and the first
// floor's copies before the second, so that every run creates its
// Services beside the same number of them.
func (e *env) floor(ctx context.Context, c config, r *result) error {
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.floorNS}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The floors' children travel as protobuf, as hivekeeper's do: the
	// same encoding on both sides of the ratio.
	// Their requests are timed on the client side, as hivekeeper's
	// client-go metrics time its own.
	timed := newTimings()
	cfg := timed.wrap(e.srv.Config)
	kube, _, err := app.NewClients(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	copies, err := childCopies(ctx, kube, e.ns, e.floorNS)
	if err != nil {
		return err
	}
	servers, err := e.dyn.Resource(serversGVR).Namespace(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	e.stopController()
	if err := e.deleteChildren(ctx, r, e.ns, func(_ string, o metav1.Object) bool { return serverOwning(o) != "" }); err != nil {
		return err
	}

	// One kind after another, in childCopies' order.
	var byKind [][]childCopy
	for i, cp := range copies {
		if i == 0 || cp.resource != copies[i-1].resource {
			byKind = append(byKind, nil)
		}
		byKind[len(byKind)-1] = append(byKind[len(byKind)-1], cp)
	}
	start := time.Now()
	for _, kind := range byKind {
		began := time.Now()
		if err := parallel(len(kind), c.concurrency, func(i int) error { return kind[i].create(ctx, nil) }); err != nil {
			return err
		}
		if kind[0].resource == "services" {
			r.floorServiceSeconds = time.Since(began).Seconds()
		}
	}
	r.floorSeconds = time.Since(start).Seconds()
	r.floorCreates = len(copies)
	logf("N=%d: floor %.2fs for %d creates, of which Services %.2fs", r.N, r.floorSeconds, r.floorCreates, r.floorServiceSeconds)

	// The copies carry no owner: they are found by name.
	copied := map[string]bool{}
	for _, cp := range copies {
		copied[cp.resource+"/"+cp.name] = true
	}
	isCopy := func(resource string, o metav1.Object) bool { return copied[resource+"/"+o.GetName()] }
	if err := e.deleteChildren(ctx, r, e.floorNS, isCopy); err != nil {
		return err
	}
	return e.specFloor(ctx, c, r, dyn, timed, servers.Items, copies)
}

// specFloor stores copies of the cold start's MCPServers (untimed), then
// times the requests any controller writing these children sends for each: the
// finalizer merge patch carrying resourceVersion, its children (copies
// in childResources order, the Deployment last), and the status merge
// patch with the status hivekeeper wrote. It ends as the cold start does:
// when a tracker's watches have seen every child.
func (e *env) specFloor(ctx context.Context, c config, r *result, dyn dynamic.Interface, timed *timings, servers []unstructured.Unstructured, copies []childCopy) error {
	children := map[string][]childCopy{}
	for _, cp := range copies {
		children[cp.owner] = append(children[cp.owner], cp)
	}
	// The children are controlled by the floor's own MCPServers, as
	// hivekeeper's are by theirs: the same bodies, and the same work for
	// the garbage collector's graph.
	resourceVersions := make([]string, len(servers))
	owners := make([][]metav1.OwnerReference, len(servers))
	if err := parallel(len(servers), c.concurrency, func(i int) error {
		o := servers[i]
		stored := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
			"metadata": map[string]any{"name": o.GetName(), "namespace": e.floorNS},
			"spec":     o.Object["spec"],
		}}
		got, err := e.dyn.Resource(serversGVR).Namespace(e.floorNS).Create(ctx, stored, metav1.CreateOptions{})
		if err == nil {
			resourceVersions[i] = got.GetResourceVersion()
			owners[i] = []metav1.OwnerReference{*metav1.NewControllerRef(got, got.GroupVersionKind())}
		}
		return err
	}); err != nil {
		return err
	}
	client := dyn.Resource(serversGVR).Namespace(e.floorNS)
	// The same observer as the cold start's: a tracker's watches on the
	// namespace, and the end when it has seen every child.
	track := newTracker(ctx, e.watch, e.dyn, e.floorNS)
	defer track.stop()
	apiBefore, err := e.apiScrape(ctx)
	if err != nil {
		return err
	}
	timed.take()
	cpuBefore := e.cpu()
	cpuBefore["bench"] = cpuSeconds(os.Getpid())
	if c.profile != "" {
		profiled := e.profileLater(ctx, 0, c.profile+"-specfloor", r.N)
		defer func() { <-profiled }()
	}
	start := time.Now()
	if err := parallel(len(servers), c.concurrency, func(i int) error {
		o := servers[i]
		finalizer, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": []string{thv1.MCPServerFinalizer}, "resourceVersion": resourceVersions[i]}})
		if _, err := client.Patch(ctx, o.GetName(), types.MergePatchType, finalizer, metav1.PatchOptions{}); err != nil {
			return err
		}
		for _, cp := range children[o.GetName()] {
			if err := cp.create(ctx, owners[i]); err != nil {
				return err
			}
		}
		status, _ := json.Marshal(map[string]any{"status": o.Object["status"]})
		_, err := client.Patch(ctx, o.GetName(), types.MergePatchType, status, metav1.PatchOptions{}, "status")
		return err
	}); err != nil {
		return err
	}
	if err := waitChildren(track, len(servers)); err != nil {
		return err
	}
	r.specFloorSeconds = time.Since(start).Seconds()
	apiAfter, err := e.apiScrape(ctx)
	if err != nil {
		return err
	}
	cpuAfter := e.cpu()
	cpuAfter["bench"] = cpuSeconds(os.Getpid())
	if r.specFloorStats, err = e.phaseStatsOf(ctx, "spec floor", timed.take(), apiBefore, apiAfter, diff(cpuBefore, cpuAfter), e.srv.Config, e.floorNS); err != nil {
		return err
	}
	logf("N=%d: spec floor %.2fs", r.N, r.specFloorSeconds)
	return nil
}
