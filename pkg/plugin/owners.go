package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// locateOwners finds, before anything is written, each tool switch is to
// pause: in the namespace its mark names; else, for an Argo CD
// Application, in argoNamespace when given, or in whichever namespace
// holds an Application of that name (Argo CD may run in any namespace:
// argocd, openshift-gitops, ...). It returns the keepers with their
// namespaces, and what keeps the switch from pausing each one it cannot:
// not found, found in more than one namespace, or not readable. Helm
// releases need no pause (a note says so later) and are returned as they
// are.
func locateOwners(ctx context.Context, c clients, keepers []keeper, argoNamespace string) ([]keeper, []string) {
	var out []keeper
	var problems []string
	for _, k := range keepers {
		kind, ok := pausable[k.Kind]
		if !ok {
			out = append(out, k)
			continue
		}
		what := fmt.Sprintf("%s %s, which keeps %s (%s)", k.Kind, k.Name, k.what, k.Via)
		ns := k.Namespace
		if ns == "" && k.Kind == "Argo CD Application" {
			ns = argoNamespace
		}
		if ns == "" {
			found, err := listPaged(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.dyn.Resource(kind.gvr).List(ctx, o)
			})
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: looking for it in every namespace: %v; name Argo CD's namespace with --argocd-namespace", what,
					readError(err, "list", kind.gvr.GroupResource().String(), "")))
				continue
			}
			var where []string
			for _, obj := range found {
				if m := objectMetaOf(obj); m.GetName() == k.Name {
					where = append(where, m.GetNamespace())
				}
			}
			slices.Sort(where)
			switch len(where) {
			case 0:
				problems = append(problems, fmt.Sprintf("%s: no such object in any namespace", what))
				continue
			case 1:
				ns = where[0]
			default:
				problems = append(problems, fmt.Sprintf("%s: one in each of the namespaces %s; name Argo CD's namespace with --argocd-namespace", what, strings.Join(where, ", ")))
				continue
			}
		}
		if _, err := c.dyn.Resource(kind.gvr).Namespace(ns).Get(ctx, k.Name, getOpts); apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("%s: no such object in namespace %s", what, ns))
			continue
		} else if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", what, readError(err, "get", kind.gvr.GroupResource().String(), ns)))
			continue
		}
		k.Namespace = ns
		out = append(out, k)
	}
	return out, problems
}
