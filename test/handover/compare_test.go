package handover_test

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// snapshot is every child and custom resource of every case, by case
// name, as the API server returned it: with UIDs, resourceVersions and
// generations.
type snapshot map[string]toolhive.Objects

func (s *suite) snapshot(log bool) snapshot {
	s.t.Helper()
	all, err := toolhive.List(context.Background(), s.env.Dynamic, "", s.resources)
	if err != nil {
		s.t.Fatal(err)
	}
	out := snapshot{}
	n := 0
	for _, c := range s.cases {
		out[c.Name] = all[c.Namespace]
		n += len(all[c.Namespace])
	}
	if log {
		s.t.Logf("snapshot: %d objects", n)
	}
	return out
}

// Paths of the differences that are not a field: an object recreated,
// the verbs of an operator's writes to an object it did not need to write
// (those the API server accepted), a write of hivekeeper's the API server
// refused.
const (
	pathRecreated = "(recreated)"
	pathWrites    = "(writes)"
	pathRefused   = "(refused)"
)

// compare lists, for one switch, every difference between two snapshots
// and every write user made that is not its own bookkeeping (ownWrite),
// and logs the summary: Deployments whose pod template changed, children
// deleted, created or recreated, ConfigMaps whose data changed,
// custom-resource spec paths lost and finalizers changed, and the writes
// by kind and verb. Objects are named "<direction> <case> Kind/name".
// A custom resource's finalizers are its operator's own: they are
// counted, not returned.
func (s *suite) compare(direction string, before, after snapshot, user string) []toolhive.Difference {
	var diffs []toolhive.Difference
	report := map[string][]string{}
	lost := 0
	fresh := map[string]bool{} // children of workloads ToolHive's operator does not run
	for _, c := range s.cases {
		b, a := before[c.Name], after[c.Name]
		keys := map[string]bool{}
		for k := range b {
			keys[k] = true
		}
		for k := range a {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			object := direction + " " + c.Name + " " + k
			old, cur := b[k], a[k]
			custom := isCustom(old) || isCustom(cur)
			switch {
			case old == nil && s.ofRefusedWorkload(c, cur):
				// hivekeeper runs a workload ToolHive's operator fails or
				// waits for (toolhiveDeploysNothing says why): its
				// children appear, and nothing else of it is compared.
				report["children of workloads ToolHive's operator does not run"] = append(
					report["children of workloads ToolHive's operator does not run"], object)
				fresh[object] = true
				continue
			case old == nil:
				report["children created"] = append(report["children created"], object)
			case cur == nil:
				report["children deleted"] = append(report["children deleted"], object)
			case old.GetUID() != cur.GetUID():
				report["children recreated"] = append(report["children recreated"], object)
				diffs = append(diffs, toolhive.Difference{Object: object, Path: pathRecreated, A: "the uid before", B: "a new uid"})
			}
			seen := map[string]bool{}
			for _, d := range toolhive.Diff(object, cleaned(old), cleaned(cur)) {
				what := ""
				switch {
				case custom && d.Path == "metadata.finalizers":
					report["custom resources whose finalizers changed"] = append(report["custom resources whose finalizers changed"], object+": "+d.A+" → "+d.B)
					continue
				case strings.HasPrefix(d.Path, "spec.template."):
					what = "Deployments whose pod template changed"
				case strings.HasPrefix(d.Path, "data"):
					what = "ConfigMaps whose data changed"
				case custom && strings.HasPrefix(d.Path, "spec") && d.B == toolhive.None:
					lost++
					what = "custom resources that lost spec paths"
				}
				if what != "" && !seen[what] {
					seen[what] = true
					report[what] = append(report[what], object)
				}
				diffs = append(diffs, d)
			}
		}
	}

	writes := s.writesBy(user)
	byKindVerb := map[string]int{}
	refused := 0
	perObject := map[string]map[string]bool{}
	for _, e := range writes {
		object := direction + " " + s.caseOf(e.ObjectRef.Namespace) + " " + kindOf(e.ObjectRef.Resource) + "/" + e.ObjectRef.Name
		verb := e.Verb
		if code := e.ResponseStatus.Code; code >= 300 {
			verb = fmt.Sprintf("%s→%d", e.Verb, code)
			refused++
			byKindVerb[e.Resource()+" "+verb]++
			// A write of a child hivekeeper had refused is one it should
			// not have sent (a create of what exists, a patch from a
			// stale read). ToolHive's operator's conflicts come and go
			// with timing: counted only.
			if user == hiveUser && !ownWrite(e) {
				diffs = append(diffs, toolhive.Difference{Object: object, Path: pathRefused, A: toolhive.None, B: verb})
			}
			continue
		}
		byKindVerb[e.Resource()+" "+verb]++
		if ownWrite(e) || (fresh[object] && verb == "create") {
			continue
		}
		if perObject[object] == nil {
			perObject[object] = map[string]bool{}
		}
		perObject[object][verb] = true
	}
	for _, object := range sortedKeys(perObject) {
		diffs = append(diffs, toolhive.Difference{Object: object, Path: pathWrites, A: toolhive.None, B: strings.Join(sortedKeys(perObject[object]), ",")})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d Deployments' pod templates changed, %d children deleted, %d created, %d recreated, "+
		"%d ConfigMaps' data changed, %d custom-resource spec paths lost; %d writes by %s (%d refused by the API server):\n",
		direction, len(report["Deployments whose pod template changed"]), len(report["children deleted"]), len(report["children created"]),
		len(report["children recreated"]), len(report["ConfigMaps whose data changed"]), lost, len(writes), user, refused)
	for _, k := range sortedKeys(byKindVerb) {
		fmt.Fprintf(&b, "  %5d  %s\n", byKindVerb[k], k)
	}
	for _, what := range sortedKeys(report) {
		fmt.Fprintf(&b, "  %s (%d):\n", what, len(report[what]))
		for _, o := range report[what] {
			fmt.Fprintf(&b, "    %s\n", strings.TrimPrefix(o, direction+" "))
		}
	}
	s.t.Log(b.String())
	return diffs
}

// ofRefusedWorkload reports whether a child belongs to a workload of the
// case ToolHive's operator deploys nothing for (refused).
func (s *suite) ofRefusedWorkload(c *toolhive.Case, child *unstructured.Unstructured) bool {
	kind, name, ok := strings.Cut(toolhive.Owner(child), "/")
	return ok && s.refused(c.Name+" "+kind+" "+name) != ""
}

// roundTrip logs how the objects after a switch there and back differ
// from what ToolHive's operator alone had written, by kind: what a
// rollback leaves behind.
func (s *suite) roundTrip(before, back snapshot) {
	byKind := map[string]int{}
	for _, c := range s.cases {
		keys := map[string]bool{}
		for k := range before[c.Name] {
			keys[k] = true
		}
		for k := range back[c.Name] {
			keys[k] = true
		}
		for k := range keys {
			old, cur := before[c.Name][k], back[c.Name][k]
			if len(toolhive.Diff(k, cleaned(old), cleaned(cur))) > 0 || (old != nil && cur != nil && old.GetUID() != cur.GetUID()) {
				kind, _, _ := strings.Cut(k, "/")
				byKind[kind]++
			}
		}
	}
	s.t.Logf("after the round trip, objects that differ from what ToolHive's operator alone wrote, by kind: %v", byKind)
}

// cleaned is toolhive.Clean of an object that may be absent.
func cleaned(o *unstructured.Unstructured) any {
	if o == nil {
		return nil
	}
	return toolhive.Clean(o)
}

func isCustom(o *unstructured.Unstructured) bool {
	return o != nil && strings.HasPrefix(o.GetAPIVersion(), toolhive.Group+"/")
}

// ownWrite reports whether a write is one an operator makes for its own
// bookkeeping: a custom resource's status, its metadata (finalizers; a
// change to anything else shows as a difference of the object) and
// Events.
func ownWrite(e framework.AuditEvent) bool {
	return e.ObjectRef.APIGroup == toolhive.Group || e.ObjectRef.Resource == "events"
}

// caseOf names the case of a namespace, or the namespace itself.
func (s *suite) caseOf(ns string) string {
	for _, c := range s.cases {
		if c.Namespace == ns {
			return c.Name
		}
	}
	if ns == "" {
		return "cluster"
	}
	return ns
}

// kindOf maps a resource an operator writes to its kind.
func kindOf(resource string) string {
	kinds := map[string]string{
		"configmaps": "ConfigMap", "secrets": "Secret", "serviceaccounts": "ServiceAccount", "services": "Service",
		"persistentvolumeclaims": "PersistentVolumeClaim", "deployments": "Deployment", "statefulsets": "StatefulSet",
		"roles": "Role", "rolebindings": "RoleBinding", "pods": "Pod", "customresourcedefinitions": "CustomResourceDefinition",
	}
	if k, ok := kinds[resource]; ok {
		return k
	}
	return resource
}
