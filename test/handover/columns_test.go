package handover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// columns are the printer columns `kubectl get` shows for each custom
// resource of the load, by "<case> <resource>/<name>" and column name:
// the API server's Table for each kind, asked for as kubectl asks, with
// each cell as kubectl prints it ("" for a blank one). Name and Age are
// left out.
func (s *suite) columns() map[string]map[string]string {
	s.t.Helper()
	ctx := context.Background()
	out := map[string]map[string]string{}
	for _, r := range s.resources {
		if r.Group != toolhive.Group {
			continue
		}
		raw, err := s.env.Kube.CoreV1().RESTClient().Get().AbsPath("/apis", r.Group, r.Version, r.Resource).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		if err != nil {
			s.t.Fatalf("kubectl get %s: %v", r.Resource, err)
		}
		var table metav1.Table
		if err := json.Unmarshal(raw, &table); err != nil {
			s.t.Fatalf("kubectl get %s: %v", r.Resource, err)
		}
		for _, row := range table.Rows {
			var m metav1.PartialObjectMetadata
			if err := json.Unmarshal(row.Object.Raw, &m); err != nil {
				s.t.Fatalf("kubectl get %s: a row without its object: %v", r.Resource, err)
			}
			if !slices.ContainsFunc(s.cases, func(c *toolhive.Case) bool { return c.Namespace == m.Namespace }) {
				continue
			}
			cells := map[string]string{}
			for i, col := range table.ColumnDefinitions {
				if col.Name == "Name" || col.Name == "Age" || i >= len(row.Cells) {
					continue
				}
				if v := row.Cells[i]; v != nil {
					cells[col.Name] = fmt.Sprint(v)
				} else {
					cells[col.Name] = ""
				}
			}
			out[s.caseOf(m.Namespace)+" "+r.Resource+"/"+m.Name] = cells
		}
	}
	return out
}

// columnsFilledOnPurpose are the printer columns, by "<resource>
// <column>", that hivekeeper fills where ToolHive's operator leaves them
// blank, with the reason (docs/compatibility.md says it too).
var columnsFilledOnPurpose = map[string]string{
	"virtualmcpcompositetooldefinitions Status": "hivekeeper validates a composite tool definition as vmcp does and reports it " +
		"with the config kinds' status; ToolHive v0.63.0's operator writes no status for it",
}

// sameColumnsFilled requires every custom resource to show the same
// columns filled after a switch as before it: a column a script or a
// person reads under one operator is not blank under the other. Values
// may differ (a phase while a workload starts, a count), blankness not.
// The workloads ToolHive's operator runs nothing for are left out (their
// columns fill when hivekeeper runs them), and so are
// columnsFilledOnPurpose.
func (s *suite) sameColumnsFilled(direction string, before, after map[string]map[string]string) {
	s.t.Helper()
	var blanked, filled []string
	checked := 0
	for _, obj := range sortedKeys(before) {
		now, ok := after[obj]
		if !ok || s.refused(s.workloadOf(obj)) != "" {
			continue
		}
		resource := strings.SplitN(strings.SplitN(obj, " ", 2)[1], "/", 2)[0]
		for _, col := range sortedKeys(before[obj]) {
			checked++
			was, is := before[obj][col], now[col]
			switch {
			case was != "" && is == "":
				blanked = append(blanked, fmt.Sprintf("%s %s (was %q)", obj, col, was))
			case was == "" && is != "" && columnsFilledOnPurpose[resource+" "+col] == "":
				filled = append(filled, fmt.Sprintf("%s %s (now %q)", obj, col, is))
			}
		}
	}
	if len(blanked) > 0 {
		s.t.Errorf("%s: %d printer columns blank that were filled:\n  %s", direction, len(blanked), strings.Join(blanked, "\n  "))
	}
	if len(filled) > 0 {
		s.t.Errorf("%s: %d printer columns filled that were blank:\n  %s", direction, len(filled), strings.Join(filled, "\n  "))
	}
	s.t.Logf("%s: %d printer columns of %d custom resources compared", direction, checked, len(before))
}

// workloadOf names a columns key ("<case> <resource>/<name>") as
// toolhiveDeploysNothing names a workload ("<case> <Kind> <name>").
func (s *suite) workloadOf(key string) string {
	caseName, rest, _ := strings.Cut(key, " ")
	resource, name, _ := strings.Cut(rest, "/")
	for _, kind := range toolhive.HandoverKinds {
		if plural(kind) == resource {
			return caseName + " " + kind + " " + name
		}
	}
	return key
}

// plural is a kind's resource name, as its CRD names it.
func plural(kind string) string {
	lower := strings.ToLower(kind)
	if strings.HasSuffix(lower, "y") {
		return strings.TrimSuffix(lower, "y") + "ies"
	}
	return lower + "s"
}
