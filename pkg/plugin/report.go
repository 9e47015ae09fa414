package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// Report is everything preflight found, in the order it prints it.
type Report struct {
	// Operator is ToolHive's operator; nil when the cluster runs none.
	Operator *Operator `json:"operator"`
	// ReleaseNote says how the operator's release compares with the one
	// hivekeeper matches; empty when it is that one.
	ReleaseNote string   `json:"releaseNote,omitempty"`
	Settings    Settings `json:"settings"`
	CRDs        []CRD    `json:"crds"`
	// Unread are the ToolHive resources preflight could not read: their
	// CRD serves neither v1beta1 nor v1alpha1.
	Unread []string `json:"unreadResources,omitempty"`
	// Refused are the custom resources hivekeeper would refuse, and why.
	Refused []Finding `json:"refused"`
	// Unmanaged are the workloads ToolHive's operator runs that
	// hivekeeper would refuse, and so leave as they are: blockers unless
	// --allow-unmanaged names them.
	Unmanaged []Unmanaged `json:"unmanaged"`
	// Ignored are the custom resources hivekeeper runs while ignoring
	// some of their fields.
	Ignored []Finding `json:"ignored"`
	// Warnings are the Warning events hivekeeper would record.
	Warnings   []event    `json:"warnings"`
	Prediction Prediction `json:"prediction"`
	// Blockers are what must be settled before a switch.
	Blockers []string `json:"blockers"`
	// Summary is the prediction in one line.
	Summary  string `json:"summary"`
	ExitCode int    `json:"exitCode"`
}

// podRefusals are the reasons of a pod hivekeeper will not run whatever
// the admission policy says: one with access to the node or added
// privileges, or running as another workload's account.
var podRefusals = []string{thv1.ReasonPodSecurityNotAllowed, thv1.ReasonServiceAccountNotAllowed}

// deliberateRefusals are the refused findings of configurations
// ToolHive's operator deploys, which hivekeeper refuses on purpose
// (docs/compatibility.md says why), one per object: a remote proxy's
// headerForward the runner would refuse or cannot send, an
// MCPWebhookConfig with half a client certificate or a name taken twice
// in one list and the MCPServers referencing it, an EmbeddingServer's
// podTemplateSpec that is not a pod template. ToolHive's operator may be
// running such a workload; after a switch it would be left as it is.
func deliberateRefusals(refused []Finding) []Finding {
	hooks := map[string]bool{}
	for _, f := range refused {
		if f.Kind == thv1.KindMCPWebhookConfig &&
			(strings.Contains(f.Message, wiring.WebhookHalfClientCert) || strings.Contains(f.Message, wiring.WebhookNameTaken)) {
			hooks[f.Namespace+"/"+f.Name] = true
		}
	}
	var out []Finding
	seen := map[string]bool{}
	for _, f := range refused {
		deliberate := false
		switch {
		case f.Kind == thv1.KindMCPRemoteProxy && f.Reason == thv1.ReasonHeaderForwardInvalid,
			f.Kind == thv1.KindEmbeddingServer && f.Condition == thv1.ConditionPodTemplateValid+"=False",
			f.Kind == thv1.KindMCPWebhookConfig && hooks[f.Namespace+"/"+f.Name]:
			deliberate = true
		case f.Reason == thv1.ReasonWebhookConfigInvalid:
			// "MCPWebhookConfig \"<name>\" is not valid"
			for h := range hooks {
				ns, name, _ := strings.Cut(h, "/")
				deliberate = deliberate || (ns == f.Namespace && strings.Contains(f.Message, fmt.Sprintf("%q", name)))
			}
		}
		if key := f.Kind + " " + f.Namespace + "/" + f.Name; deliberate && !seen[key] {
			seen[key] = true
			out = append(out, f)
		}
	}
	return out
}

// conclude fills Blockers, Summary and ExitCode from the rest.
func (r *Report) conclude() {
	r.Blockers = []string{}
	for _, c := range r.CRDs {
		if c.Problem != "" {
			r.Blockers = append(r.Blockers, c.Name+": "+c.Problem)
		}
	}
	for _, v := range r.Settings.Unknown {
		r.Blockers = append(r.Blockers, "ToolHive's operator is given "+v+", which hivekeeper does not know: no flag can keep its meaning; to switch without it, pass --accept-env "+v)
	}
	for _, v := range r.Settings.Unread {
		r.Blockers = append(r.Blockers, "the operator's "+v+" was not read: set its counterpart in the values by hand, or pass --accept-env with its name when hivekeeper does not know it")
	}
	for _, res := range r.Unread {
		r.Blockers = append(r.Blockers, "the cluster serves "+res+" in neither v1beta1 nor v1alpha1: its objects were not read, so neither checked nor predicted")
	}
	// A workload ToolHive's operator runs and hivekeeper refuses: after a
	// switch it keeps its children as they are and is never updated until
	// its spec changes.
	for _, u := range r.Unmanaged {
		if !u.Allowed {
			r.Blockers = append(r.Blockers, fmt.Sprintf("%s %s/%s: %s: hivekeeper would leave it running as it is and not update it; change the spec first, or accept that with --allow-unmanaged %s",
				u.Kind, u.Namespace, u.Name, u.Why, u.ref()))
		}
	}
	unmanaged := map[string]bool{}
	for _, u := range r.Unmanaged {
		unmanaged[u.ref()] = true
	}
	for _, f := range deliberateRefusals(r.Refused) {
		if unmanaged[f.Kind+"/"+f.Namespace+"/"+f.Name] {
			continue // its blocker above says it, and --allow-unmanaged may accept it
		}
		r.Blockers = append(r.Blockers, fmt.Sprintf("%s %s/%s: %s %s: %s: ToolHive's operator deploys it, hivekeeper refuses it; change the spec first",
			f.Kind, f.Namespace, f.Name, f.Condition, f.Reason, f.Message))
	}
	if !r.Prediction.Settled {
		r.Blockers = append(r.Blockers, "hivekeeper's controllers were still writing when the prediction timed out (--timeout): the prediction is partial")
	}
	pods := 0
	for _, x := range r.Prediction.Restarts {
		pods += x.pods()
	}
	r.Summary = fmt.Sprintf("%s, %s, %s", count(pods, "pod restarts", "pods restart"),
		count(len(r.Prediction.Recreated), "object recreated", "objects recreated"),
		count(len(r.Prediction.Rewritten), "ConfigMap rewritten", "ConfigMaps rewritten"))
	switch {
	case len(r.Blockers) > 0:
		r.ExitCode = exitBlocked
	case pods > 0:
		r.ExitCode = exitRestarts
	default:
		r.ExitCode = exitOK
	}
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// write prints r as format: "json", "yaml", or text for a person.
func (r *Report) write(w io.Writer, format string) error {
	if structured, err := writeStructured(w, format, r); structured {
		return err
	}
	t := &text{w: w}
	r.writeText(t)
	return t.err
}

// writeStructured prints v as format when it is "json" or "yaml", and
// reports whether it was.
func writeStructured(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}

// text writes lines, keeping the first error.
type text struct {
	w   io.Writer
	err error
}

func (t *text) line(indent int, format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, "%s%s\n", strings.Repeat("  ", indent), fmt.Sprintf(format, args...))
	}
}

func (r *Report) writeText(t *text) {
	if op := r.Operator; op == nil {
		t.line(0, "ToolHive's operator: none found; the values below are hivekeeper's defaults")
	} else {
		t.line(0, "ToolHive's operator: Deployment %s/%s, %s", op.Namespace, op.Name, count(int(op.Replicas), "replica", "replicas"))
		release := op.Release
		if release == "" {
			release = "unknown"
		}
		t.line(1, "image %s (release %s)", op.Image, release)
		if r.ReleaseNote != "" {
			t.line(1, "%s", r.ReleaseNote)
		}
		for _, o := range op.Owners {
			t.line(1, "%s", ownerLine(o))
		}
	}
	t.line(0, "")
	t.line(0, "hivekeeper chart values that keep the operator's settings (flags: %s):", strings.Join(r.Settings.Flags, " "))
	if b, err := yaml.Marshal(r.Settings.Values); err == nil {
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			t.line(1, "%s", l)
		}
	}
	for _, s := range r.Settings.Carried {
		t.line(1, "carried over as it is (extraEnv): %s: %s", s.Name, s.Why)
	}
	for _, s := range r.Settings.NotCarried {
		t.line(1, "not carried over: %s: %s", s.Name, s.Why)
	}
	for _, v := range r.Settings.Accepted {
		t.line(1, "left behind (--accept-env): %s, which hivekeeper does not know", v)
	}

	t.line(0, "")
	problems := 0
	for _, c := range r.CRDs {
		if c.Problem != "" || c.Note != "" {
			problems++
		}
	}
	if problems == 0 {
		t.line(0, "CRDs: every stored version of the toolhive.stacklok.dev kinds is served by hivekeeper's CRDs")
	} else {
		t.line(0, "CRDs:")
		for _, c := range r.CRDs {
			name := c.Kind
			if c.Name != "" {
				name = c.Name + " (" + c.Kind + ")"
			}
			switch {
			case c.Problem != "":
				t.line(1, "%s: %s", name, c.Problem)
			case c.Note != "":
				t.line(1, "%s: %s", name, c.Note)
			}
		}
	}

	t.line(0, "")
	if len(r.Refused) == 0 {
		t.line(0, "Validation: hivekeeper refuses none of the stored objects")
	} else {
		t.line(0, "Validation: hivekeeper would refuse %s:", count(len(r.Refused), "object", "objects"))
		for _, f := range r.Refused {
			t.line(1, "%s", findingLine(f))
		}
	}
	for _, f := range r.Ignored {
		t.line(1, "runs, ignoring fields: %s", findingLine(f))
	}
	for _, u := range r.Unmanaged {
		if u.Allowed {
			t.line(1, "left unmanaged (--allow-unmanaged): %s %s/%s, which ToolHive's operator runs (%s): %s", u.Kind, u.Namespace, u.Name, count(u.Children, "child", "children"), u.Why)
		}
	}
	for _, e := range r.Warnings {
		said := slices.ContainsFunc(r.Refused, func(f Finding) bool {
			return f.Kind == e.Kind && f.Namespace == e.Namespace && f.Name == e.Name && f.Message == e.Message
		})
		if !said {
			t.line(1, "warning event: %s %s/%s %s: %s", e.Kind, e.Namespace, e.Name, e.Reason, e.Message)
		}
	}

	t.line(0, "")
	p := r.Prediction
	t.line(0, "Prediction: %s", r.Summary)
	for _, x := range p.Restarts {
		t.line(1, "restart %s, %s: %s", changeName(x.Change), count(x.pods(), "pod", "pods"), fieldLine(x.Change))
		if len(x.Pods) > 0 {
			t.line(2, "pods: %s", strings.Join(x.Pods, ", "))
		}
	}
	for _, c := range p.Recreated {
		t.line(1, "recreate %s: %s", changeName(c), fieldLine(c))
	}
	for _, c := range p.Rewritten {
		t.line(1, "rewrite %s: %s", changeName(c), fieldLine(c))
	}
	for _, c := range p.Created {
		note := ""
		if c.Kind == "Secret" {
			note = " (one that exists already is kept as it is)"
		}
		t.line(1, "create %s%s", changeName(c), note)
	}
	for _, c := range p.Deleted {
		t.line(1, "delete %s", changeName(c))
	}
	for _, c := range p.Patched {
		t.line(1, "patch %s, no restart: %s", changeName(c), fieldLine(c))
	}
	cr := p.CustomResources
	t.line(1, "custom resources: %s, %s, %s", count(cr.Statuses, "status rewritten", "statuses rewritten"),
		count(cr.Finalizers, "finalizer write", "finalizer writes"), count(cr.Other, "other write", "other writes"))

	if len(r.Blockers) > 0 {
		t.line(0, "")
		t.line(0, "Settle before a switch:")
		for _, b := range r.Blockers {
			t.line(1, "%s", b)
		}
	}
}

func ownerLine(o Owner) string {
	at := o.Name
	if o.Namespace != "" {
		at = o.Namespace + "/" + o.Name
	}
	switch o.Kind {
	case "Helm release":
		chart := ""
		if o.Chart != "" {
			chart = " (chart " + o.Chart + ")"
		}
		return "installed by Helm release " + at + chart
	case "Argo CD Application":
		via := ""
		if o.Via == labelInstance {
			via = " (read from its " + labelInstance + " label, Argo CD's default tracking label)"
		}
		return "kept by Argo CD Application " + at + via + ": turn its automated sync off before scaling the operator down, or Argo CD scales it back up"
	default:
		return "kept by " + o.Kind + " " + at + ": suspend it before scaling the operator down, or Flux scales it back up"
	}
}

func findingLine(f Finding) string {
	s := fmt.Sprintf("%s %s/%s: %s", f.Kind, f.Namespace, f.Name, f.Condition)
	if f.Reason != "" {
		s += " " + f.Reason
	}
	if f.Message != "" {
		s += ": " + f.Message
	}
	return s
}

func changeName(c Change) string {
	s := c.Kind + " " + c.Namespace + "/" + c.Name
	if c.Owner != "" {
		s += " (" + c.Owner + ")"
	}
	return s
}

func fieldLine(c Change) string {
	switch {
	case c.Field == "":
		return "(no field named)"
	case c.Detail == "":
		return c.Field
	}
	return c.Field + ": " + c.Detail
}
