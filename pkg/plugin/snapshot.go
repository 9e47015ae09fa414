package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
)

// snapshot is what the controllers would read of a cluster: every object
// their informers list, read once.
type snapshot struct {
	kube     []runtime.Object
	toolhive []runtime.Object
	// live are the Kubernetes objects by "<resource>/<namespace>/<name>".
	live map[string]runtime.Object
	// unserved are the ToolHive resources the cluster does not serve as
	// v1beta1 (no CRD, or an older one), which hivekeeper's clients read.
	unserved []string
}

// kubeList is one list of Kubernetes objects the controllers' informers
// make: a resource under a label selector ("" for every object).
type kubeList struct {
	resource, selector string
	list               func(ctx context.Context, kube kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error)
}

// kubeLists are the lists of app.NewDeps's informer factories that the
// controllers use: the children labelled toolhive=true, the kinds read
// whole, and the kinds ToolHive's operator labels its own way. A test
// builds the controllers and checks that every informer they start is
// here.
var kubeLists = []kubeList{
	{resource: "deployments", selector: app.ChildLabelSelector, list: listDeployments},
	{resource: "deployments", selector: naming.RegistrySelector, list: listDeployments},
	{resource: "services", selector: app.ChildLabelSelector, list: listServices},
	{resource: "services", selector: naming.EmbeddingServerSelector, list: listServices},
	{resource: "services", selector: naming.RegistrySelector, list: listServices},
	{resource: "statefulsets", selector: app.ChildLabelSelector, list: listStatefulSets},
	{resource: "statefulsets", selector: naming.EmbeddingServerSelector, list: listStatefulSets},
	{resource: "pods", selector: naming.WorkloadPodSelector, list: func(ctx context.Context, k kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return k.CoreV1().Pods(ns).List(ctx, o)
	}},
	{resource: "configmaps", list: func(ctx context.Context, k kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return k.CoreV1().ConfigMaps(ns).List(ctx, o)
	}},
	{resource: "serviceaccounts", list: func(ctx context.Context, k kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return k.CoreV1().ServiceAccounts(ns).List(ctx, o)
	}},
	{resource: "rolebindings", list: func(ctx context.Context, k kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return k.RbacV1().RoleBindings(ns).List(ctx, o)
	}},
}

func listDeployments(ctx context.Context, k kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
	return k.AppsV1().Deployments(ns).List(ctx, o)
}

func listStatefulSets(ctx context.Context, k kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
	return k.AppsV1().StatefulSets(ns).List(ctx, o)
}

func listServices(ctx context.Context, k kubernetes.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
	return k.CoreV1().Services(ns).List(ctx, o)
}

// toolhiveList lists one ToolHive kind.
type toolhiveList struct {
	resource string
	list     func(ctx context.Context, th versioned.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error)
}

// toolhiveLists are the ToolHive kinds hivekeeper reconciles or reads.
var toolhiveLists = []toolhiveList{
	{"mcpservers", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPServers(ns).List(ctx, o)
	}},
	{"mcpremoteproxies", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPRemoteProxies(ns).List(ctx, o)
	}},
	{"virtualmcpservers", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().VirtualMCPServers(ns).List(ctx, o)
	}},
	{"mcpgroups", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPGroups(ns).List(ctx, o)
	}},
	{"mcpserverentries", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPServerEntries(ns).List(ctx, o)
	}},
	{"mcpoidcconfigs", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPOIDCConfigs(ns).List(ctx, o)
	}},
	{"mcptoolconfigs", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPToolConfigs(ns).List(ctx, o)
	}},
	{"mcpauthzconfigs", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPAuthzConfigs(ns).List(ctx, o)
	}},
	{"mcpexternalauthconfigs", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPExternalAuthConfigs(ns).List(ctx, o)
	}},
	{"mcptelemetryconfigs", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPTelemetryConfigs(ns).List(ctx, o)
	}},
	{"mcpwebhookconfigs", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPWebhookConfigs(ns).List(ctx, o)
	}},
	{"virtualmcpcompositetooldefinitions", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions(ns).List(ctx, o)
	}},
	{"embeddingservers", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().EmbeddingServers(ns).List(ctx, o)
	}},
	{"mcpregistries", func(ctx context.Context, t versioned.Interface, ns string, o metav1.ListOptions) (runtime.Object, error) {
		return t.ToolhiveV1beta1().MCPRegistries(ns).List(ctx, o)
	}},
}

// ownedLists are the lists of the children the operators write, as a
// switch compares and waits on them: the controllers' own selectors for
// the kinds they watch by label, the ConfigMaps by the labels either
// operator puts on its ConfigMaps (a RunConfig, a vMCP's config, a
// registry's, an inline authorization policy), and the ServiceAccounts
// and RoleBindings whole, as the runners' carry no label, only an owner
// reference: owned keeps those.
var ownedLists = func() []kubeList {
	var out []kubeList
	for _, l := range kubeLists {
		switch l.resource {
		case "pods":
			// The kubelet's, not an operator's.
		case "configmaps":
			for _, sel := range []string{app.ChildLabelSelector, labelOperatorManagedBy, labelManagedBy + "=" + naming.ManagedByToolHive} {
				out = append(out, kubeList{resource: l.resource, selector: sel, list: l.list})
			}
		default:
			out = append(out, l)
		}
	}
	return out
}()

// labelOperatorManagedBy marks the ConfigMaps ToolHive's operator writes
// the runtime's configuration to (RunConfig, vMCP config), whichever
// operator wrote them.
const labelOperatorManagedBy = "toolhive.stacklok.io/managed-by"

// owned reports whether obj is one the operators write: a child labelled
// as theirs (toolhive=true, a managed-by of ToolHive's operator, which
// hivekeeper keeps) or owned by a ToolHive custom resource. Nothing else
// in a namespace (an application's ConfigMaps, a leader election lock,
// other controllers' RoleBindings) can keep a switch from settling or
// appear in its comparison.
func owned(obj runtime.Object) bool {
	m := objectMetaOf(obj)
	l := m.GetLabels()
	if l[naming.LabelToolhive] == "true" || l[labelManagedBy] == naming.ManagedByToolHive || l[labelOperatorManagedBy] != "" {
		return true
	}
	for _, ref := range m.GetOwnerReferences() {
		if group, _, _ := strings.Cut(ref.APIVersion, "/"); group == thv1.GroupName {
			return true
		}
	}
	return false
}

// pageSize is how many objects one list request returns at most: a
// namespace with thousands of ConfigMaps is read in pages, never in one
// response.
const pageSize = 500

// listPaged lists with list page by page (Limit and Continue), and
// returns every item. A continue token that expired (410) starts the list
// over, a few times at most.
func listPaged(ctx context.Context, opts metav1.ListOptions, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) ([]runtime.Object, error) {
	opts.Limit = pageSize
	var out []runtime.Object
	for restarts := 0; ; {
		page, err := list(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" && restarts < 3 {
			restarts++
			out, opts.Continue = nil, ""
			continue
		}
		if err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(page)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		lm, err := meta.ListAccessor(page)
		if err != nil {
			return nil, err
		}
		if opts.Continue = lm.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// takeSnapshot lists what the controllers would read in namespaces (every
// namespace when empty). It only lists.
func takeSnapshot(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, namespaces []string) (*snapshot, error) {
	return readSnapshot(ctx, kube, th, namespaces, kubeLists, nil)
}

// ownedSnapshot lists the children the operators write in namespaces,
// and the custom resources: what a switch waits on and compares.
func ownedSnapshot(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, namespaces []string) (*snapshot, error) {
	return readSnapshot(ctx, kube, th, namespaces, ownedLists, owned)
}

// readSnapshot makes lists and the ToolHive kinds' in namespaces (every
// namespace when empty), keeping of the Kubernetes objects those keep
// accepts (all when nil).
func readSnapshot(ctx context.Context, kube kubernetes.Interface, th versioned.Interface, namespaces []string, lists []kubeList, keep func(runtime.Object) bool) (*snapshot, error) {
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	s := &snapshot{live: map[string]runtime.Object{}}
	seen := map[string]bool{}
	add := func(dst *[]runtime.Object, resource string, items []runtime.Object) error {
		for _, obj := range items {
			m, err := meta.Accessor(obj)
			if err != nil {
				return err
			}
			key := resource + "/" + m.GetNamespace() + "/" + m.GetName()
			if seen[key] || (dst == &s.kube && keep != nil && !keep(obj)) {
				continue
			}
			seen[key] = true
			m.SetManagedFields(nil)
			*dst = append(*dst, obj)
			if dst == &s.kube {
				s.live[key] = obj
			}
		}
		return nil
	}
	for _, ns := range scopes {
		for _, l := range lists {
			items, err := listPaged(ctx, metav1.ListOptions{LabelSelector: l.selector}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return l.list(ctx, kube, ns, o)
			})
			if err != nil {
				return nil, readError(err, "list", l.resource, ns)
			}
			if err := add(&s.kube, l.resource, items); err != nil {
				return nil, err
			}
		}
		for _, l := range toolhiveLists {
			items, err := listPaged(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				list, err := l.list(ctx, th, ns, o)
				if apierrors.IsNotFound(err) && o.Continue == "" {
					// ToolHive's own CRDs serve some kinds as v1alpha1 only
					// (MCPWebhookConfig at v0.63.0): the same schema as
					// v1beta1, which hivekeeper's CRDs serve beside it.
					list, err = listAlpha(ctx, th, l.resource, ns, list)
				}
				return list, err
			})
			if apierrors.IsNotFound(err) {
				if !slices.Contains(s.unserved, l.resource) {
					s.unserved = append(s.unserved, l.resource)
				}
				continue
			}
			if err != nil {
				return nil, readError(err, "list", l.resource+"."+thv1.GroupName, ns)
			}
			if err := add(&s.toolhive, l.resource, items); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// alphaVersion is the version ToolHive's CRDs serve every kind in.
const alphaVersion = "v1alpha1"

// listAlpha lists resource as v1alpha1 into a list of typed's type, the
// v1beta1 one: every ToolHive kind has the same schema in both versions.
// It returns the API server's NotFound when v1alpha1 is not served either.
func listAlpha(ctx context.Context, th versioned.Interface, resource, ns string, typed runtime.Object) (runtime.Object, error) {
	notFound := apierrors.NewNotFound(thv1.Resource(resource), "")
	rc := th.ToolhiveV1beta1().RESTClient()
	if rc == nil || reflect.ValueOf(rc).IsNil() || typed == nil || reflect.ValueOf(typed).IsNil() {
		// The generated fake has no REST client, and serves every kind.
		return nil, notFound
	}
	into := reflect.New(reflect.TypeOf(typed).Elem()).Interface().(runtime.Object)
	path := "/apis/" + thv1.GroupName + "/" + alphaVersion
	if ns != "" {
		path += "/namespaces/" + ns
	}
	raw, err := rc.Get().AbsPath(path, resource).DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return nil, fmt.Errorf("reading %s as %s: %w", resource, alphaVersion, err)
	}
	return into, nil
}
