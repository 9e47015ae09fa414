package handover_test

import (
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// The plugin's JSON reports, as the suites read them.
type (
	switchReport = toolhive.SwitchReport
	prediction   = toolhive.Prediction
	outcome      = toolhive.SwitchOutcome
	change       = toolhive.Change
)

// standIn is the suite's stand-in for the Deployment controller and
// kubelet of the two operators' Deployments: ToolHive's operator runs as
// startToolHive starts it, hivekeeper as startHivekeeper does (the binary
// controller, with the chart environment's flags).
func (s *suite) standIn(controller string) *toolhive.StandIn {
	return &toolhive.StandIn{T: s.t, Kube: s.env.Kube,
		StartToolHive: func() func() {
			op := s.startToolHive()
			s.thv = op
			return func() { op.Stop(s.t) }
		},
		StartHivekeeper: func() (func() bool, func()) {
			hk := s.startHivekeeper(controller)
			s.hk = hk
			return func() bool { return hk.exited() == nil }, func() { hk.stop(s.t) }
		},
	}
}

// plugin runs `kubectl hivekeeper switch` with extra flags while k plays
// the operators' Deployments, logs its steps and returns its report.
func (s *suite) plugin(k *toolhive.StandIn, bin string, extra ...string) switchReport {
	t := s.t
	t.Helper()
	args := append([]string{"--kubeconfig", s.srv.Kubeconfig, "switch", "-n", thvNamespace, "-o", "json", "--yes",
		"--replicas", "1", "--quiet", quiet.String(), "--wait", "10m", "--timeout", "5m"}, extra...)
	if !slices.Contains(extra, "--back") {
		for _, u := range s.scenario.unmanaged {
			args = append(args, "--allow-unmanaged", u)
		}
	}
	code, stdout, stderr := k.Run(bin, args...)
	r, _, err := toolhive.ReadSwitchOutput(stdout)
	if err != nil {
		t.Fatalf("switch %v exited %d with no JSON report: %v\nstdout:\n%s\nstderr:\n%s", extra, code, err, stdout, stderr)
	}
	if r.ExitCode != code {
		t.Errorf("switch %v exited %d, its report says %d", extra, code, r.ExitCode)
	}
	var b strings.Builder
	for _, step := range r.Steps {
		b.WriteString("  - " + step + "\n")
	}
	for _, n := range r.Notes {
		b.WriteString("    note: " + n + "\n")
	}
	t.Logf("switch %v exited %d:\n%s  %s", extra, code, b.String(), r.Summary)
	return r
}

// changes are what a switch did to the load's children, by "<Kind>
// <namespace>/<name>": the Deployments and StatefulSets whose pod
// template changed or that were recreated (their pods restart), the
// children recreated (a new UID), the ConfigMaps whose data changed.
type changes struct{ restarted, recreated, rewritten []string }

// measure reads the changes between two of the suite's snapshots
// itself, as the plugin's report is checked against them.
func (s *suite) measure(before, after snapshot) changes {
	var c changes
	seen := map[string]bool{}
	for _, cs := range s.cases {
		if seen[cs.Namespace] {
			continue
		}
		seen[cs.Namespace] = true
		for _, k := range sortedKeys(before[cs.Name]) {
			old, cur := before[cs.Name][k], after[cs.Name][k]
			if cur == nil || isCustom(old) {
				continue
			}
			key := old.GetKind() + " " + cs.Namespace + "/" + old.GetName()
			tOld, withTemplate, _ := unstructured.NestedFieldNoCopy(old.Object, "spec", "template")
			tCur, _, _ := unstructured.NestedFieldNoCopy(cur.Object, "spec", "template")
			withTemplate = withTemplate && (old.GetKind() == "Deployment" || old.GetKind() == "StatefulSet")
			switch {
			case old.GetUID() != cur.GetUID():
				c.recreated = append(c.recreated, key)
				if withTemplate {
					c.restarted = append(c.restarted, key)
				}
			case withTemplate && !reflect.DeepEqual(tOld, tCur):
				c.restarted = append(c.restarted, key)
			case old.GetKind() == "ConfigMap" && !reflect.DeepEqual(old.Object["data"], cur.Object["data"]):
				c.rewritten = append(c.rewritten, key)
			}
		}
	}
	return c
}

// keys are the changes' keys in the load's namespaces, sorted: the
// plugin's reports also name the operators' own objects.
func (s *suite) keys(list []change) []string {
	out := []string{}
	for _, c := range list {
		if slices.ContainsFunc(s.cases, func(cs *toolhive.Case) bool { return cs.Namespace == c.Namespace }) {
			out = append(out, c.Key())
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// predicted requires preflight's prediction to be what the switch did,
// object for object, as the suite measures it.
func (s *suite) predicted(direction string, p prediction, before, after snapshot) {
	s.t.Helper()
	m := s.measure(before, after)
	s.same(direction, "preflight predicted", [3][]string{s.keys(p.Restarts), s.keys(p.Recreated), s.keys(p.Rewritten)}, m)
}

// reported requires the switch's report of what it did to be what the
// suite measures.
func (s *suite) reported(direction string, o *outcome, before, after snapshot) {
	s.t.Helper()
	m := s.measure(before, after)
	s.same(direction, "switch reported", [3][]string{s.keys(o.Restarted), s.keys(o.Recreated), s.keys(o.Rewritten)}, m)
}

func (s *suite) same(direction, who string, said [3][]string, m changes) {
	s.t.Helper()
	for i, c := range []struct {
		what     string
		measured []string
	}{{"pods restarted", m.restarted}, {"children recreated", m.recreated}, {"ConfigMaps rewritten", m.rewritten}} {
		measured := append([]string{}, c.measured...)
		sort.Strings(measured)
		if !slices.Equal(said[i], measured) {
			s.t.Errorf("%s: %s %s %q, the suite measured %q", direction, c.what, who, said[i], measured)
		}
	}
	s.t.Logf("%s: %s %d pods restarted, %d children recreated, %d ConfigMaps rewritten; the suite measured %d, %d, %d",
		direction, who, len(said[0]), len(said[1]), len(said[2]), len(m.restarted), len(m.recreated), len(m.rewritten))
}

// sameChildren reports whether no child of the load changed between two
// snapshots (same resourceVersions).
func sameChildren(a, b snapshot) bool {
	for name, objs := range a {
		if len(objs) != len(b[name]) {
			return false
		}
		for k, o := range objs {
			if isCustom(o) {
				continue
			}
			if c := b[name][k]; c == nil || c.GetResourceVersion() != o.GetResourceVersion() {
				return false
			}
		}
	}
	return true
}
