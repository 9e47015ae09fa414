package main

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// childCopies returns one create per child hivekeeper made in namespace
// from (label toolhive=true), each creating the same object in namespace
// to with only what the API server assigns cleared. Creates are grouped
// by kind, in the order of childResources.
func childCopies(ctx context.Context, kube kubernetes.Interface, from, to string) ([][]func(context.Context) error, error) {
	sel := metav1.ListOptions{LabelSelector: "toolhive=true"}
	meta := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: to, Labels: m.Labels, Annotations: m.Annotations}
	}
	var kinds [][]func(context.Context) error
	var out []func(context.Context) error
	next := func() {
		kinds = append(kinds, out)
		out = nil
	}
	create := metav1.CreateOptions{}

	sas, err := kube.CoreV1().ServiceAccounts(from).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range sas.Items {
		o.ObjectMeta = meta(o.ObjectMeta)
		o.Secrets = nil
		out = append(out, func(ctx context.Context) error {
			_, err := kube.CoreV1().ServiceAccounts(to).Create(ctx, &o, create)
			return err
		})
	}
	next()
	rbs, err := kube.RbacV1().RoleBindings(from).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range rbs.Items {
		o.ObjectMeta = meta(o.ObjectMeta)
		for i := range o.Subjects {
			if o.Subjects[i].Namespace == from {
				o.Subjects[i].Namespace = to
			}
		}
		out = append(out, func(ctx context.Context) error {
			_, err := kube.RbacV1().RoleBindings(to).Create(ctx, &o, create)
			return err
		})
	}
	next()
	roles, err := kube.RbacV1().Roles(from).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range roles.Items {
		o.ObjectMeta = meta(o.ObjectMeta)
		out = append(out, func(ctx context.Context) error {
			_, err := kube.RbacV1().Roles(to).Create(ctx, &o, create)
			return err
		})
	}
	next()
	cms, err := kube.CoreV1().ConfigMaps(from).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range cms.Items {
		o.ObjectMeta = meta(o.ObjectMeta)
		out = append(out, func(ctx context.Context) error {
			_, err := kube.CoreV1().ConfigMaps(to).Create(ctx, &o, create)
			return err
		})
	}
	next()
	svcs, err := kube.CoreV1().Services(from).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range svcs.Items {
		o.ObjectMeta = meta(o.ObjectMeta)
		o.Spec.ClusterIP, o.Spec.ClusterIPs = "", nil
		out = append(out, func(ctx context.Context) error {
			_, err := kube.CoreV1().Services(to).Create(ctx, &o, create)
			return err
		})
	}
	next()
	deps, err := kube.AppsV1().Deployments(from).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range deps.Items {
		o.ObjectMeta = meta(o.ObjectMeta)
		out = append(out, func(ctx context.Context) error {
			_, err := kube.AppsV1().Deployments(to).Create(ctx, &o, create)
			return err
		})
	}
	next()
	return kinds, nil
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

// collectGarbage deletes the children left in the controller's namespace
// once its MCPServers are gone, as the garbage collector of a real cluster
// does through their owner references (the benchmark runs no
// kube-controller-manager). Without it the cold start and the floor would
// run beside N leftover Services, and every Service create costs the API
// server time in proportion to the Services that exist (its ClusterIP
// allocator counts the allocated addresses on each allocation).
func (e *env) collectGarbage(ctx context.Context, r *result) error {
	start := time.Now()
	var names []func(context.Context) error
	for _, gvr := range childResources {
		l, err := e.dyn.Resource(gvr).Namespace(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "toolhive=true"})
		if err != nil {
			return err
		}
		for _, o := range l.Items {
			name := o.GetName()
			names = append(names, func(ctx context.Context) error {
				return e.dyn.Resource(gvr).Namespace(e.ns).Delete(ctx, name, metav1.DeleteOptions{})
			})
		}
	}
	if err := parallel(len(names), 16, func(i int) error { return names[i](ctx) }); err != nil {
		return err
	}
	logf("N=%d: deleted the %d children left in %s in %.2fs", r.N, len(names), e.ns, time.Since(start).Seconds())
	return nil
}
