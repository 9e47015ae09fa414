package handover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// dayTwo is a small load of every kind that carries one of ToolHive's
// finalizers or references (servers, a remote proxy, config kinds, a group
// with an entry and a vMCP, an EmbeddingServer), run on a cluster with
// the garbage collector and the namespace controller.
var dayTwo = scenario{name: "day-two", cluster: true, only: []string{
	"table/01-stdio-minimal.yaml",
	"table/10-remote-proxy-oidc.yaml",
	"table/14-tool-config.yaml",
	"table/24-vmcp-config.yaml",
	"examples/mcp-server-entries/mcpserverentry_mixed_group.yaml",
	"examples/embedding-servers/basic-embedding.yaml",
}}

// edited is the workload an edit is made to after each switch.
const editedCase, edited = "table/01-stdio-minimal.yaml", "fetch"

// TestDayTwo is what a cluster goes through after a switch from ToolHive's
// operator (v0.63.0, its chart's defaults): under hivekeeper an edit to a
// workload rolls it exactly once; ToolHive's CRD chart applied over
// hivekeeper's CRDs (a `helm upgrade` of it) and hivekeeper's again change
// nothing and cost no write; back under ToolHive's operator an edit rolls
// the Deployment for nothing its rolls before the switch did not change
// too; and, switched to hivekeeper again, `kubectl delete` of every
// custom resource finishes (every finalizer ToolHive's operator put is
// released) and so does the deletion of every namespace of the load.
func TestDayTwo(t *testing.T) {
	built := buildHivekeeper(t)
	s := newSuite(t, dayTwo)
	s.applyLoad()
	thv := s.waitDeployments(s.startToolHive())
	s.settle("ToolHive's operator", thvUser, thv.Exited, "")
	// What an edit costs under ToolHive's operator before any switch: it
	// rolls a Deployment more than once of its own accord, and how many
	// times varies from run to run; after the switch back, each of its
	// rolls must change only paths its rolls changed before (nothing
	// hivekeeper left behind gives it more to change).
	baseline := s.editRolls(thvUser, "0", func() { s.settle("ToolHive's operator", thvUser, thv.Exited, "") })
	thv.Stop(t)

	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	hivekeeperCRDs := filepath.Join(root, "deploy", "charts", "hivekeeper", "crds")
	controller, _ := built()
	hk := s.switchToHivekeeper(controller, hivekeeperCRDs)
	if rolls := s.editRolls(hiveUser, "1", func() { s.settle("hivekeeper", hiveUser, hk.exited, hk.metricsURL) }); len(rolls) != 1 {
		t.Errorf("under hivekeeper an edit rolled the Deployment %d times (%v), want once", len(rolls), rolls)
	}

	// ToolHive's CRD chart over hivekeeper's and back: the objects stay
	// and hivekeeper, running all along, writes nothing but, once per
	// object, the status fields of the config kinds ToolHive v0.63.0's
	// schema lacks (referencingWorkloads, referenceCount): the API server
	// drops them from what it serves under ToolHive's CRDs, and hivekeeper
	// writes them back once under its own.
	chart, err := toolhive.CRDChart(s.module, filepath.Join(s.dir, "toolhive-crd-chart"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{chart, hivekeeperCRDs} {
		if err := s.audit.Mark(); err != nil {
			t.Fatal(err)
		}
		if errs := s.applyCRDs(dir); len(errs) > 0 {
			t.Errorf("applying %s over the other CRDs: %v", dir, errs)
		}
		s.settle("hivekeeper", hiveUser, hk.exited, hk.metricsURL)
		w := s.writesBy(hiveUser)
		if bad := unexpectedAfterCRDs(w); len(bad) > 0 {
			t.Errorf("hivekeeper wrote %v after the CRDs of %s were applied", describe(bad), dir)
		}
		t.Logf("after the CRDs of %s were applied, hivekeeper wrote: %s", dir, describe(w))
	}
	hk.stop(t)

	// Back under ToolHive's operator.
	if err := s.audit.Mark(); err != nil {
		t.Fatal(err)
	}
	s.applyCRDs(toolhive.CRDDir(s.module))
	thv = s.startToolHive()
	s.settle("ToolHive's operator", thvUser, thv.Exited, "")
	rolls := s.editRolls(thvUser, "2", func() { s.settle("ToolHive's operator", thvUser, thv.Exited, "") })
	if foreign := foreignRollPaths(rolls, baseline); len(foreign) > 0 {
		t.Errorf("back under ToolHive's operator an edit rolled the Deployment for %v, which its rolls before the switch never changed (%v then, %v now)",
			foreign, baseline, rolls)
	}
	thv.Stop(t)

	// To hivekeeper again, and delete everything.
	hk = s.switchToHivekeeper(controller, hivekeeperCRDs)
	s.deleteEverything()
	hk.stop(t)
}

// switchToHivekeeper applies hivekeeper's CRDs, starts it and waits until
// it settled.
func (s *suite) switchToHivekeeper(bin, crds string) *hivekeeper {
	s.t.Helper()
	if err := s.audit.Mark(); err != nil {
		s.t.Fatal(err)
	}
	if errs := s.applyCRDs(crds); len(errs) > 0 {
		s.t.Fatalf("applying hivekeeper's CRDs: %v", errs)
	}
	hk := s.startHivekeeper(bin)
	s.settle("hivekeeper", hiveUser, hk.exited, hk.metricsURL)
	return hk
}

// editRolls sets an environment variable of the edited MCPServer, waits
// for settled, and returns each pod template its Deployment rolled to, as
// the paths where it differs from the one before (watched, so a template
// the Deployment held for a moment is counted too).
func (s *suite) editRolls(user, value string, settled func()) [][]string {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := toolhive.CaseNamespace(editedCase)
	d, err := s.env.Kube.AppsV1().Deployments(ns).Get(ctx, edited, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	w, err := s.env.Kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + edited, ResourceVersion: d.ResourceVersion})
	if err != nil {
		s.t.Fatal(err)
	}
	templates := make(chan []any)
	go func() {
		defer close(templates)
		var seen []any
		generation := d.Generation
		for e := range w.ResultChan() {
			if cur, ok := e.Object.(*appsv1.Deployment); ok && cur.Generation != generation {
				generation = cur.Generation
				seen = append(seen, podTemplate(s.t, cur))
			}
		}
		templates <- seen
	}()
	patch := fmt.Sprintf(`{"spec":{"env":[{"name":"DAY_TWO","value":%q}]}}`, value)
	if _, err := s.env.Dynamic.Resource(resource("mcpservers")).Namespace(ns).Patch(ctx, edited, types.MergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		s.t.Fatal(err)
	}
	settled()
	w.Stop()
	var rolls [][]string
	prev := podTemplate(s.t, d)
	for _, cur := range <-templates {
		var paths []string
		for _, diff := range toolhive.Diff("", prev, cur) {
			paths = append(paths, diff.Path)
		}
		rolls = append(rolls, paths)
		prev = cur
	}
	s.t.Logf("%s: an edit of MCPServer %s rolled its Deployment %d times: %v", user, edited, len(rolls), rolls)
	return rolls
}

// podTemplate is a Deployment's pod template as a document Diff walks.
func podTemplate(t *testing.T, d *appsv1.Deployment) any {
	t.Helper()
	raw, err := json.Marshal(d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// foreignRollPaths returns the paths an operator's rolls changed that none
// of its rolls in the baseline changed.
func foreignRollPaths(rolls, baseline [][]string) []string {
	known := map[string]bool{}
	for _, r := range baseline {
		for _, p := range r {
			known[p] = true
		}
	}
	var out []string
	for _, r := range rolls {
		for _, p := range r {
			if !known[p] && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// unexpectedAfterCRDs returns the writes other than one status patch per
// config object.
func unexpectedAfterCRDs(events []framework.AuditEvent) []framework.AuditEvent {
	var bad []framework.AuditEvent
	seen := map[string]bool{}
	for _, e := range events {
		key := e.Resource() + " " + e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
		config := e.ObjectRef.Subresource == "status" && strings.HasPrefix(e.ObjectRef.Resource, "mcp") &&
			strings.HasSuffix(e.ObjectRef.Resource, "configs")
		if !config || e.Verb != "patch" || seen[key] {
			bad = append(bad, e)
		}
		seen[key] = true
	}
	return bad
}

// deleteCustomResources deletes every custom resource of the load, as
// `kubectl delete` of each kind in each namespace does, and requires every
// deletion to finish: no finalizer the running operator does not release.
func (s *suite) deleteCustomResources() {
	s.t.Helper()
	ctx := context.Background()
	var custom []schema.GroupVersionResource
	for _, r := range s.resources {
		if r.Group == toolhive.Group {
			custom = append(custom, r)
		}
	}
	left := func() ([]string, error) {
		var out []string
		for _, c := range s.cases {
			for _, r := range custom {
				list, err := s.env.Dynamic.Resource(r).Namespace(c.Namespace).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, err
				}
				for _, o := range list.Items {
					out = append(out, fmt.Sprintf("%s %s/%s (finalizers %v)", o.GetKind(), o.GetNamespace(), o.GetName(), o.GetFinalizers()))
				}
			}
		}
		return out, nil
	}
	objects, err := left()
	if err != nil {
		s.t.Fatal(err)
	}
	for _, c := range s.cases {
		for _, r := range custom {
			if err := s.env.Dynamic.Resource(r).Namespace(c.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				s.t.Fatalf("deleting %s in %s: %v", r.Resource, c.Namespace, err)
			}
		}
	}
	began := time.Now()
	framework.Eventually(s.t, 2*time.Minute, func() (bool, error) {
		rest, err := left()
		return err == nil && len(rest) == 0, fmt.Errorf("%d custom resources left: %v (%v)", len(rest), rest[:min(len(rest), 5)], err)
	}, "every custom resource deleted")
	s.t.Logf("%d custom resources deleted in %v", len(objects), time.Since(began).Round(time.Millisecond))
}

// deleteEverything deletes every custom resource of the load, as
// deleteCustomResources does, then every namespace of the load, and
// requires both to finish.
func (s *suite) deleteEverything() {
	s.t.Helper()
	ctx := context.Background()
	s.deleteCustomResources()
	began := time.Now()
	for _, c := range s.cases {
		if err := s.env.Kube.CoreV1().Namespaces().Delete(ctx, c.Namespace, metav1.DeleteOptions{}); err != nil {
			s.t.Fatal(err)
		}
	}
	framework.Eventually(s.t, 3*time.Minute, func() (bool, error) {
		var rest []string
		for _, c := range s.cases {
			_, err := s.env.Kube.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				rest = append(rest, c.Namespace)
			}
		}
		return len(rest) == 0, fmt.Errorf("namespaces not yet gone: %v", rest)
	}, "the load's namespaces deleted")
	s.t.Logf("%d namespaces deleted in %v", len(s.cases), time.Since(began).Round(time.Millisecond))
}

// resource is a custom resource of ToolHive's API at v1beta1.
func resource(plural string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: toolhive.Group, Version: "v1beta1", Resource: plural}
}

// describe names each write of an audit log, for a message.
func describe(events []framework.AuditEvent) string {
	var out []string
	for _, e := range events {
		out = append(out, e.Verb+" "+e.Resource()+" "+e.ObjectRef.Namespace+"/"+e.ObjectRef.Name)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
