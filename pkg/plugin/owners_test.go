package plugin

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/ptr"
)

// moveApplication puts the Application name of c in namespace ns instead
// of argocd ("" deletes it), and adds one of the same name in each of
// also.
func moveApplication(t *testing.T, c clients, name, ns string, also ...string) {
	t.Helper()
	ctx := context.Background()
	if err := c.dyn.Resource(applications).Namespace("argocd").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, at := range append([]string{ns}, also...) {
		if at == "" {
			continue
		}
		app := argoApplication(name)
		app.SetNamespace(at)
		if _, err := c.dyn.Resource(applications).Namespace(at).Create(ctx, app, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func automatedIn(t *testing.T, c clients, ns, name string) any {
	t.Helper()
	app, err := c.dyn.Resource(applications).Namespace(ns).Get(context.Background(), name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedFieldCopy(app.Object, "spec", "syncPolicy", "automated")
	return v
}

// An Application whose tracking names no namespace is found in whichever
// namespace holds it (OpenShift GitOps keeps them in openshift-gitops),
// paused there, and resumed there by switch --back.
func TestArgoCDApplicationInAnyNamespace(t *testing.T) {
	ctx := context.Background()
	c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
	moveApplication(t, c, "toolhive", "openshift-gitops")
	var out bytes.Buffer
	r, err := switchTo(ctx, c, testSwitchOptions(), &progress{w: &out, text: true}, logr.Discard())
	if err != nil || r.ExitCode != exitOK {
		t.Fatalf("switch: %v, %+v\n%s", err, r, out.String())
	}
	if !strings.Contains(out.String(), "- paused Argo CD Application openshift-gitops/toolhive, which keeps ToolHive's operator") || automatedIn(t, c, "openshift-gitops", "toolhive") != nil {
		t.Errorf("the Application in openshift-gitops was not paused:\n%s", out.String())
	}
	rec, err := readRecord(ctx, c.kube, "hivekeeper-system")
	if err != nil || !slices.ContainsFunc(rec.Paused, func(p pausedOwner) bool { return p.Namespace == "openshift-gitops" && p.Name == "toolhive" }) {
		t.Errorf("the record's pauses: %+v, %v", rec, err)
	}
}

// An owner the operator's marks name that cannot be found, is ambiguous,
// or cannot be read blocks the switch before anything is written, naming
// it; --leave-owners (paused by hand) and --argocd-namespace (Argo CD's
// namespace named) let it go on.
func TestOwnersThatCannotBePausedBlock(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, c clients)
		says  string
		fix   func(o *switchOptions)
		fixed func(t *testing.T, c clients)
	}{
		{name: "not found", says: "Argo CD Application toolhive, which keeps ToolHive's operator (argocd.argoproj.io/tracking-id): no such object in any namespace",
			setup: func(t *testing.T, c clients) { moveApplication(t, c, "toolhive", "") },
			fix:   func(o *switchOptions) { o.leaveOwners = true }},
		{name: "in two namespaces", says: "one in each of the namespaces argocd, gitops; name Argo CD's namespace with --argocd-namespace",
			setup: func(t *testing.T, c clients) { moveApplication(t, c, "toolhive", "argocd", "gitops") },
			fix:   func(o *switchOptions) { o.argoNamespace = "gitops" },
			fixed: func(t *testing.T, c clients) {
				if automatedIn(t, c, "gitops", "toolhive") != nil || automatedIn(t, c, "argocd", "toolhive") == nil {
					t.Error("--argocd-namespace gitops did not pause gitops/toolhive alone")
				}
			}},
		{name: "not readable", says: "missing permission: list applications.argoproj.io cluster-wide",
			setup: func(t *testing.T, c clients) {
				forbid(&c.dyn.(*dynamicfake.FakeDynamicClient).Fake, "list", "applications", "")
			},
			fix: func(o *switchOptions) { o.argoNamespace = "argocd" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := switchClients(t, crd("mcpservers", "MCPServer", "v1beta1"))
			tc.setup(t, c)
			writes(c)
			r, err := switchTo(context.Background(), c, testSwitchOptions(), &progress{w: &bytes.Buffer{}}, logr.Discard())
			if err != nil || r.ExitCode != exitBlocked || !strings.Contains(r.Refused, tc.says) || !strings.Contains(r.Refused, "run switch --leave-owners") {
				t.Errorf("switch: %v, exit %d, refused %q; want exit 4 saying %q", err, r.ExitCode, r.Refused, tc.says)
			}
			if w := writes(c); len(w) != 0 {
				t.Errorf("a switch refused for an owner wrote %v", w)
			}
			o := testSwitchOptions()
			tc.fix(&o)
			if r, err := switchTo(context.Background(), c, o, &progress{w: &bytes.Buffer{}}, logr.Discard()); err != nil || r.ExitCode != exitOK {
				t.Fatalf("switch with the fix: %v, %+v", err, r)
			}
			if tc.fixed != nil {
				tc.fixed(t, c)
			}
		})
	}
}

// What generates the Application that keeps ToolHive's operator would
// put its automated sync back, and hivekeeper's own Application would
// scale hivekeeper back to 0: switch pauses the ApplicationSet that owns
// it (create-only), the Application of apps whose tracking label it
// carries, and the Application that tracks hivekeeper's Deployment, each
// recorded; switch --back resumes each as it was.
func TestGeneratorsAndHivekeepersOwnApplicationPaused(t *testing.T) {
	ctx := context.Background()
	mcpservers := crd("mcpservers", "MCPServer", "v1beta1")
	mcpservers.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true, Storage: true}}
	c := switchClients(t, mcpservers)
	app, err := c.dyn.Resource(applications).Namespace("argocd").Get(ctx, "toolhive", getOpts)
	if err != nil {
		t.Fatal(err)
	}
	app.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "platform", UID: "uid-platform", Controller: ptr.To(true)}})
	app.SetLabels(map[string]string{labelInstance: "root"})
	if _, err := c.dyn.Resource(applications).Namespace("argocd").Update(ctx, app, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	set := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
		"metadata": map[string]any{"namespace": "argocd", "name": "platform"}, "spec": map[string]any{"generators": []any{}}}}
	if _, err := c.dyn.Resource(applicationSets).Namespace("argocd").Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"root", "hk"} {
		if _, err := c.dyn.Resource(applications).Namespace("argocd").Create(ctx, argoApplication(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hk, err := c.kube.AppsV1().Deployments("hivekeeper-system").Get(ctx, "hivekeeper", getOpts)
	if err != nil {
		t.Fatal(err)
	}
	hk.Annotations = map[string]string{annotationArgoTracking: "hk:apps/Deployment:hivekeeper-system/hivekeeper"}
	if _, err := c.kube.AppsV1().Deployments("hivekeeper-system").Update(ctx, hk, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	r, err := switchTo(ctx, c, testSwitchOptions(), &progress{w: &out, text: true}, logr.Discard())
	if err != nil || r.ExitCode != exitOK {
		t.Fatalf("switch: %v, %+v\n%s", err, r, out.String())
	}
	for _, line := range []string{
		"- paused Argo CD Application argocd/toolhive, which keeps ToolHive's operator",
		"- paused Argo CD Application argocd/hk, which keeps hivekeeper's Deployment",
		"  note: Argo CD Application argocd/hk installed hivekeeper scaled to 0: set its replica count",
		"- paused Argo CD ApplicationSet argocd/platform, which keeps Argo CD Application argocd/toolhive, which keeps ToolHive's operator",
		"- paused Argo CD Application argocd/root, which keeps Argo CD Application argocd/toolhive, which keeps ToolHive's operator",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the switch's output lacks %q:\n%s", line, out.String())
		}
	}
	policy := func() (string, bool) {
		obj, err := c.dyn.Resource(applicationSets).Namespace("argocd").Get(ctx, "platform", getOpts)
		if err != nil {
			t.Fatal(err)
		}
		v, found, _ := unstructured.NestedString(obj.Object, "spec", "syncPolicy", "applicationsSync")
		return v, found
	}
	if v, _ := policy(); v != "create-only" || automatedIn(t, c, "argocd", "root") != nil || automatedIn(t, c, "argocd", "hk") != nil {
		t.Errorf("after the switch: ApplicationSet policy %q, root's automated %v, hk's automated %v", v, automatedIn(t, c, "argocd", "root"), automatedIn(t, c, "argocd", "hk"))
	}

	out.Reset()
	back, err := switchBack(ctx, c, testSwitchOptions(), &progress{w: &out, text: true})
	if err != nil || back.ExitCode != exitOK {
		t.Fatalf("switch --back: %v, %+v\n%s", err, back, out.String())
	}
	if v, found := policy(); found {
		t.Errorf("after switch --back the ApplicationSet's policy is %q, not unset as it was", v)
	}
	for _, name := range []string{"toolhive", "root", "hk"} {
		if automatedIn(t, c, "argocd", name) == nil {
			t.Errorf("after switch --back, Application %s is not resumed", name)
		}
	}
}
