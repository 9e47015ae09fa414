package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// switchOptions are switch's own flags.
type switchOptions struct {
	preflight preflightOptions
	// hkNamespace and hkName are hivekeeper's Deployment; empty: found by
	// the chart's labels.
	hkNamespace, hkName string
	// replicas is what hivekeeper is scaled to.
	replicas      int32
	back          bool
	allowRestarts bool
	// leaveOwners: the user paused the tools that keep ToolHive's
	// operator by hand; switch touches none of them.
	leaveOwners bool
	// quiet is how long nothing may change before the cluster counts as
	// settled; wait bounds every wait.
	quiet, wait time.Duration
	// interval is how often the cluster is read while waiting.
	interval time.Duration
	output   string
}

func newSwitch(g *globals, stdout, stderr io.Writer) *cobra.Command {
	o := &switchOptions{}
	cmd := &cobra.Command{
		Use:   "switch",
		Short: "Hand the cluster's MCP workloads from ToolHive's operator to hivekeeper, or back with --back",
		Long: `switch hands every workload from ToolHive's operator to hivekeeper without
restarting it. hivekeeper's chart must be installed first, scaled to 0
(--set replicaCount=0). In order, switch:

  1. runs preflight and stops there when something blocks the switch, or
     when it would restart pods and --allow-restarts is not given;
  2. runs a pod with hivekeeper's image and pull secrets, and goes on only
     once it started: nothing is changed for an image that does not pull;
  3. records ToolHive's operator (its replicas), the tools that keep it
     and ToolHive's CRDs in the ConfigMap hivekeeper-switch beside
     hivekeeper, for switch --back;
  4. turns off the automated sync of an Argo CD Application and suspends a
     Flux HelmRelease or Kustomization that keeps the operator (a Helm
     release cannot be paused: the report says what to pass to its next
     upgrade);
  5. scales ToolHive's operator to 0 and waits until its pods are gone;
  6. replaces ToolHive's CRDs with hivekeeper's;
  7. scales hivekeeper up and waits until it is ready, leads, and nothing
     in the watched namespaces has changed for --quiet, and fails if
     ToolHive's operator was scaled up again meanwhile;
  8. compares every child with how it was before step 5 and reports the
     pods restarted, children recreated and ConfigMaps rewritten.

switch --back does the reverse from the record: hivekeeper scaled to 0,
its admission policy set to Warn, its own finalizer released from
composite tool definitions, ToolHive's CRDs put back, ToolHive's
operator restored to its replicas, the paused tools resumed, the same
comparison, and the record deleted. It refuses when objects may be
stored in a version ToolHive's recorded CRDs do not serve.

-n and --operator choose ToolHive's operator as for preflight.

Exit status: 0 when the switch restarted no pod it did not predict;
3 when it was refused because it would restart pods; 4 when something
blocks it; 5 when it ran and restarted pods it did not predict (going
back: a workload the switch did not restart); 1 when a step failed (the report says which, and switch
--back undoes what was done); 2 on a usage error.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.replicas < 1 {
				return usageError("--replicas must be at least 1")
			}
			c, err := g.connect(o.output, &o.preflight.namespace)
			if err != nil {
				return err
			}
			p := &progress{w: stdout, text: o.output == "" || o.output == "text"}
			var r *SwitchReport
			if o.back {
				r, err = switchBack(cmd.Context(), c, *o, p)
			} else {
				r, err = switchTo(cmd.Context(), c, *o, p, g.logger(stderr))
			}
			if r == nil {
				return err
			}
			if err != nil {
				r.Failed = err.Error()
				r.ExitCode = exitFailed
				var ec *exitCode
				if errors.As(err, &ec) {
					r.ExitCode = ec.code
				}
			}
			if werr := r.write(stdout, o.output); werr != nil {
				return werr
			}
			if r.ExitCode != exitOK {
				return &exitCode{code: r.ExitCode}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.back, "back", false, "Hand the workloads back to ToolHive's operator, as the last switch recorded it.")
	f.BoolVar(&o.allowRestarts, "allow-restarts", false, "Switch even when preflight predicts pod restarts.")
	f.BoolVar(&o.leaveOwners, "leave-owners", false, "Do not pause or resume the Argo CD Application or Flux object that keeps ToolHive's operator: it was paused by hand.")
	f.StringVar(&o.preflight.operator, "operator", "", "Name of ToolHive's operator Deployment, in the namespace -n names. Needed only when more than one runs.")
	f.StringVar(&o.hkNamespace, "hivekeeper-namespace", "", "Namespace of hivekeeper's Deployment; empty: looked for in every namespace.")
	f.StringVar(&o.hkName, "hivekeeper-deployment", "", "Name of hivekeeper's Deployment; empty: the one the chart's labels mark.")
	f.Int32Var(&o.replicas, "replicas", 2, "Replicas hivekeeper is scaled to (the chart's replicaCount).")
	f.DurationVar(&o.quiet, "quiet", 15*time.Second, "How long nothing in the watched namespaces may change before the new operator counts as done.")
	f.DurationVar(&o.wait, "wait", 5*time.Minute, "How long each step may wait: the image pull, a scale, the CRDs, the settling.")
	f.DurationVar(&o.preflight.timeout, "timeout", 5*time.Minute, "How long preflight's prediction may take.")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text (steps as they happen), json or yaml (the report at the end).")
	o.interval = 2 * time.Second
	return cmd
}

// SwitchReport is what a switch did, in the order it did it.
type SwitchReport struct {
	// Direction is "hivekeeper" or "toolhive": who runs the workloads
	// afterwards.
	Direction string `json:"direction"`
	// Preflight is preflight's report, going to hivekeeper.
	Preflight *Report `json:"preflight,omitempty"`
	// Steps are the steps done, in order.
	Steps []string `json:"steps"`
	// Notes are what the user must do by hand.
	Notes []string `json:"notes,omitempty"`
	// Outcome compares the children before and after; nil when the switch
	// stopped before it changed an operator.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Refused says why the switch did not start.
	Refused string `json:"refused,omitempty"`
	// Failed is the step that failed.
	Failed   string `json:"failed,omitempty"`
	Summary  string `json:"summary"`
	ExitCode int    `json:"exitCode"`
}

// progress prints each step as it is done, in text mode, and keeps it.
type progress struct {
	w    io.Writer
	text bool
	r    *SwitchReport
}

func (p *progress) step(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.r.Steps = append(p.r.Steps, s)
	if p.text {
		fmt.Fprintf(p.w, "- %s\n", s)
	}
}

func (p *progress) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.r.Notes = append(p.r.Notes, s)
	if p.text {
		fmt.Fprintf(p.w, "  note: %s\n", s)
	}
}

// refuse ends a switch that changed nothing with code and why.
func (r *SwitchReport) refuse(code int, why string) *SwitchReport {
	r.Refused, r.ExitCode, r.Summary = why, code, "switch refused: "+why
	return r
}

// switchTo hands the workloads from ToolHive's operator to hivekeeper.
func switchTo(ctx context.Context, c clients, o switchOptions, p *progress, logger logr.Logger) (*SwitchReport, error) {
	r := &SwitchReport{Direction: "hivekeeper", Steps: []string{}}
	p.r = r
	hk, err := findHivekeeper(ctx, c.kube, o.hkNamespace, o.hkName)
	if err != nil {
		return nil, err
	}
	if rec, err := readRecord(ctx, c.kube, hk.Namespace); err != nil {
		return nil, err
	} else if rec != nil {
		return r.refuse(exitBlocked, fmt.Sprintf("ConfigMap %s/%s records a switch (%s) started %s: run switch --back first",
			hk.Namespace, recordName, rec.Phase, rec.Started.Format(time.RFC3339))), nil
	}
	if ptr.Deref(hk.Spec.Replicas, 1) != 0 {
		return r.refuse(exitBlocked, fmt.Sprintf("hivekeeper's Deployment %s/%s already runs %d replicas: install it scaled to 0 (--set replicaCount=0), so that it does not start beside ToolHive's operator",
			hk.Namespace, hk.Name, ptr.Deref(hk.Spec.Replicas, 1))), nil
	}
	pf, err := preflight(ctx, c, o.preflight, logger)
	if err != nil {
		return nil, err
	}
	r.Preflight = pf
	if p.text {
		if err := pf.write(p.w, "text"); err != nil {
			return nil, err
		}
		fmt.Fprintln(p.w)
	}
	switch {
	case pf.Operator == nil:
		return r.refuse(exitBlocked, "no ToolHive operator runs here: there is nothing to switch from; scale hivekeeper up instead"), nil
	case pf.ExitCode == exitBlocked:
		return r.refuse(exitBlocked, "preflight found what must be settled first: "+strings.Join(pf.Blockers, "; ")), nil
	case pf.ExitCode == exitRestarts && !o.allowRestarts:
		return r.refuse(exitRestarts, pf.Summary+": run switch --allow-restarts to accept that"), nil
	}
	opts, err := options(pf.Settings.Flags)
	if err != nil {
		return nil, err
	}
	op, err := c.kube.AppsV1().Deployments(pf.Operator.Namespace).Get(ctx, pf.Operator.Name, getOpts)
	if err != nil {
		return nil, err
	}

	// 2. hivekeeper's image, before anything changes: a failure leaves
	// nothing to undo.
	if err := pullCheck(ctx, c.kube, hk, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("hivekeeper's image %s pulled and started", hk.Spec.Template.Spec.Containers[controllerContainer(hk)].Image)

	// 3. The record, before anything changes.
	crds, err := toolhiveCRDs(ctx, c.crds)
	if err != nil {
		return nil, err
	}
	rec := &switchRecord{Phase: phaseSwitching, Started: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
		Operator:   deploymentRef{Namespace: op.Namespace, Name: op.Name, Replicas: ptr.Deref(op.Spec.Replicas, 1)},
		Hivekeeper: deploymentRef{Namespace: hk.Namespace, Name: hk.Name, Replicas: o.replicas}}
	if rec.Operator.Replicas == 0 {
		rec.Operator.Replicas = 1
		p.note("ToolHive's operator runs no replica now; switch --back will start 1")
	}
	if err := createRecord(ctx, c.kube, rec, crds); err != nil {
		return r, err
	}
	p.step("recorded ToolHive's operator %s/%s (%s) and its %s in ConfigMap %s/%s",
		op.Namespace, op.Name, count(int(rec.Operator.Replicas), "replica", "replicas"), count(len(crds), "CRD", "CRDs"), hk.Namespace, recordName)

	// 4. What would scale the operator back up, or put ToolHive's CRDs
	// back over hivekeeper's.
	if err := pauseOwners(ctx, c, rec, keepers(pf.Operator, crds), o.leaveOwners, p); err != nil {
		return r, err
	}

	before, err := ownedSnapshot(ctx, c.kube, c.toolhive, opts.Namespaces)
	if err != nil {
		return r, err
	}
	began := time.Now()
	// 5.
	if err := scaleTo(ctx, c.kube, op, 0, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("scaled ToolHive's operator %s/%s to 0; its pods are gone", op.Namespace, op.Name)
	// 6.
	ours, err := hivekeeperCRDs()
	if err != nil {
		return r, err
	}
	if err := replaceCRDs(ctx, c, ours, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("replaced ToolHive's CRDs with hivekeeper's %d", len(ours))
	if n, err := restorePolicy(ctx, c.kube, hk); err != nil {
		return r, err
	} else if n > 0 {
		p.step("set hivekeeper's admission policy back to the validation actions switch --back had set aside")
	}
	// 7.
	if err := scaleTo(ctx, c.kube, hk, o.replicas, o.wait, o.interval); err != nil {
		return r, err
	}
	if err := waitLeader(ctx, c.kube, hk, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("scaled hivekeeper %s/%s to %d; it is ready and leads", hk.Namespace, hk.Name, o.replicas)
	after, settled, err := settle(ctx, c, opts.Namespaces, o.quiet, o.wait, o.interval)
	if err != nil {
		return r, err
	}
	settledStep(p, settled, o)
	if err := stillStopped(ctx, c.kube, op); err != nil {
		return r, err
	}
	r.Outcome = compareSnapshots(before, after, pf.Prediction.Restarts)
	r.Outcome.Settled, r.Outcome.Took = settled, time.Since(began).Round(time.Second).String()
	rec.Phase, rec.Restarted = phaseSwitched, r.Outcome.Restarted
	if err := saveRecord(ctx, c.kube, rec); err != nil {
		return r, err
	}
	r.conclude()
	return r, nil
}

// switchBack hands the workloads back to ToolHive's operator, as the
// record of the last switch has it.
func switchBack(ctx context.Context, c clients, o switchOptions, p *progress) (*SwitchReport, error) {
	r := &SwitchReport{Direction: "toolhive", Steps: []string{}}
	p.r = r
	hk, err := findHivekeeper(ctx, c.kube, o.hkNamespace, o.hkName)
	if err != nil {
		return nil, err
	}
	rec, err := readRecord(ctx, c.kube, hk.Namespace)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return r.refuse(exitBlocked, fmt.Sprintf("no switch is recorded (no ConfigMap %s/%s): there is nothing to go back from", hk.Namespace, recordName)), nil
	}
	crds, err := recordedCRDs(ctx, c.kube, hk.Namespace)
	if err != nil {
		return nil, err
	}
	if problems, err := unservedAfterBack(ctx, c.crds, crds); err != nil {
		return nil, err
	} else if len(problems) > 0 {
		return r.refuse(exitBlocked, strings.Join(problems, "; ")), nil
	}
	op, err := c.kube.AppsV1().Deployments(rec.Operator.Namespace).Get(ctx, rec.Operator.Name, getOpts)
	if err != nil {
		return nil, fmt.Errorf("reading ToolHive's operator %s/%s, as recorded: %w", rec.Operator.Namespace, rec.Operator.Name, err)
	}
	found, err := findOperator(ctx, c.kube, op.Namespace, op.Name)
	if err != nil {
		return nil, err
	}
	settings, err := settingsOf(found)
	if err != nil {
		return nil, err
	}
	opts, err := options(settings.Flags)
	if err != nil {
		return nil, err
	}
	before, err := ownedSnapshot(ctx, c.kube, c.toolhive, opts.Namespaces)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if err := scaleTo(ctx, c.kube, hk, 0, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("scaled hivekeeper %s/%s to 0; its pods are gone", hk.Namespace, hk.Name)
	if n, err := warnOnlyPolicy(ctx, c.kube, hk); err != nil {
		return r, err
	} else if n > 0 {
		p.step("set hivekeeper's admission policy to Warn: it no longer refuses what ToolHive's operator accepts")
	}
	if n, err := releaseFinalizers(ctx, c.toolhive, opts.Namespaces); err != nil {
		return r, err
	} else if n > 0 {
		p.step("released hivekeeper's finalizer from %s: ToolHive's operator holds none there, and would never release it", count(n, "composite tool definition", "composite tool definitions"))
	}
	if err := replaceCRDs(ctx, c, crds, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("put back ToolHive's %s as recorded", count(len(crds), "CRD", "CRDs"))
	if err := scaleTo(ctx, c.kube, op, rec.Operator.Replicas, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("scaled ToolHive's operator %s/%s to %d; it is ready", op.Namespace, op.Name, rec.Operator.Replicas)
	after, settled, err := settle(ctx, c, opts.Namespaces, o.quiet, o.wait, o.interval)
	if err != nil {
		return r, err
	}
	settledStep(p, settled, o)
	if err := resumeOwners(ctx, c, rec, o.leaveOwners, p); err != nil {
		return r, err
	}
	// ToolHive's operator may write back the pod templates the switch
	// changed; any other restart is one nothing explains.
	expected := make([]Restart, len(rec.Restarted))
	for i, c := range rec.Restarted {
		expected[i] = Restart{Change: c}
	}
	r.Outcome = compareSnapshots(before, after, expected)
	r.Outcome.Settled, r.Outcome.Took = settled, time.Since(began).Round(time.Second).String()
	if err := deleteRecord(ctx, c.kube, hk.Namespace); err != nil {
		return r, err
	}
	p.step("deleted the record %s/%s", hk.Namespace, recordName)
	r.conclude()
	return r, nil
}

// stillStopped fails when ToolHive's operator was scaled up again while
// hivekeeper took over, by something the switch did not pause (a Helm
// upgrade, a sync by hand): two operators then write the same children.
func stillStopped(ctx context.Context, kube kubernetes.Interface, op *appsv1.Deployment) error {
	now, err := kube.AppsV1().Deployments(op.Namespace).Get(ctx, op.Name, getOpts)
	if err != nil {
		return fmt.Errorf("reading ToolHive's operator %s/%s again: %w", op.Namespace, op.Name, readError(err, "get", "deployments", op.Namespace))
	}
	if n := ptr.Deref(now.Spec.Replicas, 1); n != 0 {
		return fmt.Errorf("ToolHive's operator %s/%s was scaled back to %d while hivekeeper took over, by something the switch did not pause: "+
			"both operators now write the same children; scale it to 0 and pause what keeps it, or run switch --back", op.Namespace, op.Name, n)
	}
	return nil
}

// conclude sets the summary and exit code from the outcome.
func (r *SwitchReport) conclude() {
	o := r.Outcome
	who := map[string]string{"hivekeeper": "hivekeeper", "toolhive": "ToolHive's operator"}[r.Direction]
	r.Summary = fmt.Sprintf("%s runs the workloads: %s, %s, %s, %s changed in %s",
		who, count(len(o.Restarted), "workload restarted", "workloads restarted"),
		count(len(o.Recreated), "object recreated", "objects recreated"),
		count(len(o.Rewritten), "ConfigMap rewritten", "ConfigMaps rewritten"),
		count(o.changed(), "object", "objects"), o.Took)
	r.ExitCode = exitOK
	if len(o.Unpredicted) > 0 {
		r.ExitCode = exitUnpredicted
		r.Summary += "; not predicted: " + strings.Join(o.Unpredicted, ", ")
	}
	if !o.Settled {
		// The comparison is of a cluster still changing: what changes
		// after it is not in it, so it proves nothing.
		r.ExitCode = exitFailed
		r.Summary += "; the namespaces were still changing at --wait, so this is not the whole of it"
	}
}

// settledStep says whether the namespaces went quiet.
func settledStep(p *progress, settled bool, o switchOptions) {
	if settled {
		p.step("the watched namespaces settled: nothing changed for %s", o.quiet)
		return
	}
	p.step("the watched namespaces were still changing after %s (--wait): the comparison below is partial", o.wait)
}

// write prints r as format; text prints what the steps did not.
func (r *SwitchReport) write(w io.Writer, format string) error {
	if structured, err := writeStructured(w, format, r); structured {
		return err
	}
	t := &text{w: w}
	if r.Failed != "" {
		t.line(0, "FAILED: %s", r.Failed)
		if len(r.Steps) > 0 {
			if r.Direction == "hivekeeper" {
				t.line(1, "kubectl hivekeeper switch --back undoes the steps above")
			} else {
				t.line(1, "run kubectl hivekeeper switch --back again once that is mended: each step leaves alone what is already done")
			}
		}
		return t.err
	}
	if o := r.Outcome; o != nil {
		t.line(0, "")
		for _, x := range o.Restarted {
			t.line(0, "restarted: %s: %s", changeName(x), fieldLine(x))
		}
		for _, x := range o.Recreated {
			t.line(0, "recreated: %s", changeName(x))
		}
		for _, x := range o.Rewritten {
			t.line(0, "rewritten: %s: %s", changeName(x), fieldLine(x))
		}
		for _, x := range o.Created {
			t.line(0, "created: %s", changeName(x))
		}
		for _, x := range o.Deleted {
			t.line(0, "deleted: %s", changeName(x))
		}
		for _, k := range sortedKeys(o.Changed) {
			t.line(0, "changed: %d %s", o.Changed[k], k)
		}
	}
	t.line(0, "%s", r.Summary)
	return t.err
}

// findHivekeeper is hivekeeper's Deployment: name in namespace, or the one
// the chart's labels mark in namespace (every namespace when empty).
func findHivekeeper(ctx context.Context, kube kubernetes.Interface, namespace, name string) (*appsv1.Deployment, error) {
	if name != "" {
		if namespace == "" {
			return nil, usageError("--hivekeeper-deployment needs --hivekeeper-namespace")
		}
		d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, getOpts)
		if err != nil {
			return nil, fmt.Errorf("reading hivekeeper's Deployment: %w", err)
		}
		return d, nil
	}
	list, err := kube.AppsV1().Deployments(namespace).List(ctx, listBy(hivekeeperSelector))
	if err != nil {
		return nil, fmt.Errorf("looking for hivekeeper's Deployment: %w", err)
	}
	switch len(list.Items) {
	case 0:
		return nil, &exitCode{code: exitBlocked, err: fmt.Errorf("no hivekeeper Deployment (labels %s) found: install hivekeeper's chart scaled to 0 first (--set replicaCount=0)", hivekeeperSelector)}
	case 1:
		return &list.Items[0], nil
	}
	var names []string
	for _, d := range list.Items {
		names = append(names, d.Namespace+"/"+d.Name)
	}
	slices.Sort(names)
	return nil, usageError("%d hivekeeper Deployments (%s): choose one with --hivekeeper-namespace and --hivekeeper-deployment", len(names), strings.Join(names, ", "))
}
