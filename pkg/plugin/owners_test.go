package plugin

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	dynamicfake "k8s.io/client-go/dynamic/fake"
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
