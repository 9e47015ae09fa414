package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	thscheme "github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned/scheme"
)

// annotationResourcePolicy "keep" makes Helm leave an object in place
// when its release is uninstalled.
const annotationResourcePolicy = "helm.sh/resource-policy"

// servedVersions are the versions hivekeeper's CRDs serve, every kind
// alike (hack/crdversions writes them; a test reads config/crd).
var servedVersions = []string{"v1alpha1", "v1beta1"}

// CRD is one toolhive.stacklok.dev CRD of the cluster as preflight checked
// it.
type CRD struct {
	// Name is empty for a kind whose CRD is not installed.
	Name string `json:"name,omitempty"`
	Kind string `json:"kind"`
	// Stored are its status.storedVersions: the versions objects of the
	// kind may be stored in.
	Stored []string `json:"storedVersions,omitempty"`
	// Problem says what keeps a switch from being safe; empty when
	// nothing does.
	Problem string `json:"problem,omitempty"`
	// Note is something to know that does not block.
	Note string `json:"note,omitempty"`
}

// knownKinds are the kinds hivekeeper's API types define.
func knownKinds() []string {
	types := thscheme.Scheme.KnownTypes(thv1.SchemeGroupVersion)
	var kinds []string
	for k := range types {
		if _, ok := types[k+"List"]; ok {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// checkCRDs reads the cluster's toolhive.stacklok.dev CRDs. A version in
// storedVersions that hivekeeper's CRDs do not serve blocks: applying them
// would leave objects stored in a version no longer served, which the API
// server refuses or cannot read. A kind hivekeeper does not know is noted:
// its objects are left alone.
// listToolhiveCRDs are the cluster's CRDs of ToolHive's API group.
func listToolhiveCRDs(ctx context.Context, client apiextensionsclient.Interface) ([]apiextensionsv1.CustomResourceDefinition, error) {
	list, err := client.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the CRDs: %w", err)
	}
	return slices.DeleteFunc(list.Items, func(c apiextensionsv1.CustomResourceDefinition) bool { return c.Spec.Group != thv1.GroupName }), nil
}

func checkCRDs(ctx context.Context, client apiextensionsclient.Interface) ([]CRD, error) {
	list, err := listToolhiveCRDs(ctx, client)
	if err != nil {
		return nil, err
	}
	known := knownKinds()
	var out []CRD
	for _, c := range list {
		row := CRD{Name: c.Name, Kind: c.Spec.Names.Kind, Stored: c.Status.StoredVersions}
		var unserved []string
		for _, v := range c.Status.StoredVersions {
			if !slices.Contains(servedVersions, v) {
				unserved = append(unserved, v)
			}
		}
		switch {
		case !slices.Contains(known, row.Kind):
			row.Note = "hivekeeper does not know this kind and leaves its objects alone"
		case c.Annotations[annotationHelmRelease] != "" && c.Annotations[annotationResourcePolicy] != "keep":
			// Not a blocker of the switch, which keeps the CRDs; of an
			// uninstall of ToolHive's CRD release after it.
			row.Note = fmt.Sprintf("Helm release %s/%s would delete this CRD on uninstall, and with it every object of its kind: it lacks %s: keep",
				c.Annotations[annotationHelmNamespace], c.Annotations[annotationHelmRelease], annotationResourcePolicy)
		}
		switch {
		case !slices.Contains(known, row.Kind):
		case len(unserved) > 0:
			row.Problem = fmt.Sprintf("objects may be stored as %s, which hivekeeper's CRDs do not serve (%s): migrate them to v1beta1 and drop %s from status.storedVersions first",
				strings.Join(unserved, ", "), strings.Join(servedVersions, ", "), strings.Join(unserved, ", "))
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b CRD) int { return strings.Compare(a.Name, b.Name) })
	for _, k := range known {
		if !slices.ContainsFunc(out, func(c CRD) bool { return c.Kind == k }) {
			out = append(out, CRD{Kind: k, Note: "no CRD installed; hivekeeper's CRDs add it"})
		}
	}
	return out, nil
}
