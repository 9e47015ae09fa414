package plugin

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// Finding is what hivekeeper says about one custom resource: a condition
// of its status as hivekeeper's controllers left it.
type Finding struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Condition is the condition's type ("Phase" for a Failed phase
	// without a Ready condition).
	Condition string `json:"condition"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
}

// findings reads the status every custom resource was left with and
// returns what hivekeeper refuses (a Failed phase, a False validity
// condition) and what it runs but ignores (UnsupportedFields), kind by
// kind in the order of toolhiveLists.
func findings(ctx context.Context, r *run) (refused, ignored []Finding, err error) {
	refused, ignored = []Finding{}, []Finding{}
	for _, l := range toolhiveLists {
		list, err := l.list(ctx, r.th, metav1.NamespaceAll, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, nil, err
		}
		for _, obj := range items {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, nil, err
			}
			b, err := json.Marshal(obj)
			if err != nil {
				return nil, nil, err
			}
			var o struct {
				Status struct {
					Phase      string             `json:"phase"`
					Message    string             `json:"message"`
					Conditions []metav1.Condition `json:"conditions"`
				} `json:"status"`
			}
			if err := json.Unmarshal(b, &o); err != nil {
				return nil, nil, err
			}
			at := Finding{Kind: kindOf(obj), Namespace: m.GetNamespace(), Name: m.GetName()}
			st := o.Status
			// A False validity condition names the cause; Ready's reason
			// may not (an MCPServer's is ToolHive's NotReady), so a Failed
			// phase is listed from Ready only when no such condition
			// explains it, or when Ready's message says something else.
			var invalid []Finding
			for _, c := range st.Conditions {
				switch {
				case c.Type == thv1.ConditionUnsupportedFields && c.Status == metav1.ConditionTrue:
					f := at
					f.Condition, f.Reason, f.Message = c.Type, c.Reason, c.Message
					ignored = append(ignored, f)
				case c.Status == metav1.ConditionFalse && (strings.HasSuffix(c.Type, "Valid") || strings.HasSuffix(c.Type, "Validated")):
					f := at
					f.Condition, f.Reason, f.Message = c.Type+"=False", c.Reason, c.Message
					invalid = append(invalid, f)
				}
			}
			if st.Phase == "Failed" {
				f := at
				f.Condition, f.Message = "Phase", st.Message
				if c := meta.FindStatusCondition(st.Conditions, thv1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse {
					f.Condition, f.Reason, f.Message = c.Type+"=False", c.Reason, c.Message
				}
				if !slices.ContainsFunc(invalid, func(g Finding) bool { return g.Message == f.Message }) {
					refused = append(refused, f)
				}
			}
			refused = append(refused, invalid...)
		}
	}
	return refused, ignored, nil
}

func sameObject(a, b Finding) bool {
	return a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// warnings are the Warning events the controllers recorded, each once.
func warnings(r *run) []event {
	out := []event{}
	for _, e := range r.events {
		if e.Type == "Warning" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// Unmanaged is a workload hivekeeper would refuse while ToolHive's
// operator runs it: after a switch it keeps running as it is, and nothing
// updates it until its spec changes.
type Unmanaged struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Why is hivekeeper's reason: the condition or Warning event that
	// says it.
	Why string `json:"why"`
	// Children counts the Deployments and StatefulSets ToolHive's
	// operator wrote for it that exist now; 0 for a pod hivekeeper will
	// not run, which it may be running.
	Children int `json:"children"`
	// Allowed is set when --allow-unmanaged names it: a switch goes on
	// and leaves it as it is.
	Allowed bool `json:"allowed,omitempty"`
}

// ref is the workload as --allow-unmanaged names it.
func (u Unmanaged) ref() string { return u.Kind + "/" + u.Namespace + "/" + u.Name }

// unmanaged are the workloads hivekeeper would stop managing, in the order
// found: a refused custom resource with a Deployment or StatefulSet in the
// cluster (one ToolHive's operator runs; one with none runs under neither
// operator),
// and a workload whose pod hivekeeper will not run whatever the admission
// policy says, which ToolHive's operator may be running. allow are the
// workloads --allow-unmanaged names, as Kind/namespace/name (the kind in
// any case).
func unmanaged(snap *snapshot, refused []Finding, warned []event, allow []string) []Unmanaged {
	// What runs a workload: ToolHive's operator may have written a
	// refused workload's account and RoleBinding before refusing it, and
	// that alone is not running it.
	children := map[types.UID]int{}
	for _, o := range snap.live {
		if k := kindOf(o); k != "Deployment" && k != "StatefulSet" {
			continue
		}
		if m, ok := o.(metav1.Object); ok {
			if ref := metav1.GetControllerOf(m); ref != nil {
				children[ref.UID]++
			}
		}
	}
	uids := map[string]types.UID{}
	for _, o := range snap.toolhive {
		if m, err := meta.Accessor(o); err == nil {
			uids[kindOf(o)+"/"+m.GetNamespace()+"/"+m.GetName()] = m.GetUID()
		}
	}
	out := []Unmanaged{}
	add := func(u Unmanaged) {
		for i := range out {
			if out[i].ref() == u.ref() {
				out[i].Why += "; " + u.Why
				return
			}
		}
		u.Allowed = slices.ContainsFunc(allow, func(a string) bool {
			kind, rest, _ := strings.Cut(a, "/")
			return strings.EqualFold(kind, u.Kind) && rest == u.Namespace+"/"+u.Name
		})
		out = append(out, u)
	}
	for _, f := range refused {
		u := Unmanaged{Kind: f.Kind, Namespace: f.Namespace, Name: f.Name, Why: strings.TrimPrefix(findingLine(f), f.Kind+" "+f.Namespace+"/"+f.Name+": ")}
		if uid := uids[u.ref()]; uid != "" {
			u.Children = children[uid]
		}
		if u.Children > 0 {
			add(u)
		}
	}
	for _, e := range warned {
		if slices.Contains(podRefusals, e.Reason) {
			u := Unmanaged{Kind: e.Kind, Namespace: e.Namespace, Name: e.Name, Why: e.Message + " (" + e.Reason + ")"}
			if uid := uids[u.ref()]; uid != "" {
				u.Children = children[uid]
			}
			add(u)
		}
	}
	return out
}
