package main

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// childCopies returns one create per child hivekeeper made in namespace
// from (label toolhive=true), each creating the same object in namespace
// to with only what the API server assigns cleared.
func childCopies(ctx context.Context, kube kubernetes.Interface, from, to string) ([]func(context.Context) error, error) {
	sel := metav1.ListOptions{LabelSelector: "toolhive=true"}
	meta := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: to, Labels: m.Labels, Annotations: m.Annotations}
	}
	var out []func(context.Context) error
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
	return out, nil
}
