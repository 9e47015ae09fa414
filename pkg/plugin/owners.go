package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	located := map[string]bool{}
	for i := 0; i < len(keepers); i++ {
		k := keepers[i]
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
			if k.optional && (apierrors.IsNotFound(err) || meta.IsNoMatchError(err)) {
				continue // no Argo CD here
			}
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
				if !k.optional {
					problems = append(problems, fmt.Sprintf("%s: no such object in any namespace", what))
				}
				continue
			case 1:
				ns = where[0]
			default:
				problems = append(problems, fmt.Sprintf("%s: one in each of the namespaces %s; name Argo CD's namespace with --argocd-namespace", what, strings.Join(where, ", ")))
				continue
			}
		}
		obj, err := c.dyn.Resource(kind.gvr).Namespace(ns).Get(ctx, k.Name, getOpts)
		switch {
		case apierrors.IsNotFound(err) && k.optional:
			continue
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("%s: no such object in namespace %s", what, ns))
			continue
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", what, readError(err, "get", kind.gvr.GroupResource().String(), ns)))
			continue
		}
		id := k.Kind + "/" + ns + "/" + k.Name
		if located[id] {
			continue
		}
		located[id] = true
		k.Namespace = ns
		out = append(out, k)
		// What generates an Application would put its automated sync
		// back: the ApplicationSet that owns it, and the Application
		// (app of apps) whose marks it carries.
		if k.Kind == "Argo CD Application" {
			keepers = append(keepers, generators(obj, k)...)
		}
	}
	return out, problems
}

// generators are the tools that generate the Application app, located
// at k, and would revert its pause: the ApplicationSet that owns it, and
// the Application whose tracking marks it carries (an app of apps).
func generators(app metav1.Object, k keeper) []keeper {
	what := fmt.Sprintf("Argo CD Application %s/%s, which keeps %s", k.Namespace, k.Name, k.what)
	var out []keeper
	for _, ref := range app.GetOwnerReferences() {
		if ref.Kind == "ApplicationSet" && strings.HasPrefix(ref.APIVersion, "argoproj.io/") {
			out = append(out, keeper{Owner: Owner{Kind: "Argo CD ApplicationSet", Namespace: k.Namespace, Name: ref.Name, Via: "owner reference"}, what: what})
		}
	}
	for _, o := range owners(app) {
		if o.Kind != "Argo CD Application" || (o.Name == k.Name && (o.Namespace == "" || o.Namespace == k.Namespace)) {
			continue
		}
		out = append(out, keeper{Owner: o, what: what, optional: o.Via == labelInstance})
	}
	return out
}
