package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
	// argoNamespace is Argo CD's namespace, where an Application whose
	// mark names no namespace lives; empty: looked for in every one.
	argoNamespace string
	// quiet is how long nothing may change before the cluster counts as
	// settled; wait bounds every wait.
	quiet, wait time.Duration
	// interval is how often the cluster is read while waiting.
	interval time.Duration
	output   string
	// yes: do not ask for confirmation; confirm asks otherwise.
	yes     bool
	confirm confirmer
	// force takes over a record whose holder went silent for longer than
	// its stated timeout; lockTimeout is this run's.
	force       bool
	lockTimeout time.Duration
	// image is the hivekeeper image the user accepts starting although
	// its version is not the plugin's; empty: only the plugin's version.
	image string
	// target is the cluster, as the kubeconfig names it; user, host and
	// version name this run in the record.
	target              Target
	user, host, version string
}

// holder is this run as the record's holder, for command.
func (o switchOptions) holder(command string) *holder {
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	user := o.target.User
	if user == "" {
		user = "(unknown user)"
	}
	return &holder{User: user, Host: o.host, Version: o.version, Command: command, Since: now, Renewed: now,
		Timeout: metav1.Duration{Duration: o.lockTimeout}}
}

func newSwitch(g *globals, stdout, stderr io.Writer) *cobra.Command {
	o := &switchOptions{}
	cmd := &cobra.Command{
		Use:   "switch",
		Short: "Hand the cluster's MCP workloads from ToolHive's operator to hivekeeper, or back with --back",
		Long: `switch hands every workload from ToolHive's operator to hivekeeper without
restarting it. hivekeeper's chart must be installed first, scaled to 0
(--set replicaCount=0). In order, switch:

  1. prints the cluster (context, cluster, server, user), refuses while
     another run holds the record or when hivekeeper's image is not of
     the plugin's version (--image accepts it), runs preflight and stops
     there when something blocks the switch (--allow-unmanaged and
     --accept-env accept what they name), or when it would restart pods
     and --allow-restarts is not given; then asks to confirm, unless
     --yes;
  2. records ToolHive's operator (its replicas), the tools that keep it,
     ToolHive's CRDs and who runs the switch in the ConfigMap
     hivekeeper-switch beside hivekeeper, for switch --back: the lock no
     other run starts against until this one ends;
  3. runs a pod with hivekeeper's image and pull secrets, and goes on only
     once it started: nothing is changed for an image that does not pull;
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
comparison, and the record kept in phase back. It refuses when objects
may be stored in a version ToolHive's recorded CRDs do not serve.

--force takes over a record whose holder has not renewed it for longer
than its stated --lock-timeout (a run that died); kubectl hivekeeper
status shows who holds it.

-n and --operator choose ToolHive's operator as for preflight.

Exit status: 0 when the switch restarted no pod it did not predict;
3 when it was refused because it would restart pods; 4 when something
blocks it (another run holding the record among them) or it was not
confirmed; 5 when it ran and restarted pods it did not predict (going
back: a workload the switch did not restart); 1 when a step failed (the report says which, and switch
--back undoes what was done); 2 on a usage error.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.replicas < 1 {
				return usageError("--replicas must be at least 1")
			}
			if err := o.preflight.checkAcceptFlags(); err != nil {
				return err
			}
			if o.lockTimeout <= o.wait {
				return usageError("--lock-timeout (%s) must be longer than --wait (%s): a run renews the record between steps, and a step may wait that long", o.lockTimeout, o.wait)
			}
			if !o.yes {
				if !g.interactive() {
					return usageError("switch changes the cluster: with no terminal to confirm on, pass --yes")
				}
				o.confirm = askOn(g.stdin, stderr)
			}
			c, err := g.connect(o.output, &o.preflight.namespace)
			if err != nil {
				return err
			}
			o.target, o.host, o.version = g.target, g.host(), g.version
			text := o.output == "" || o.output == "text"
			if text {
				fmt.Fprintf(stdout, "Cluster: %s\n\n", o.target)
			}
			p := &progress{w: stdout, text: text, stream: o.output == "json", start: time.Now()}
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
	f.StringVar(&o.argoNamespace, "argocd-namespace", "", "Namespace of Argo CD's Applications whose tracking names no namespace; empty: the Application is looked for in every namespace.")
	f.StringVar(&o.preflight.operator, "operator", "", "Name of ToolHive's operator Deployment, in the namespace -n names. Needed only when more than one runs.")
	f.StringVar(&o.hkNamespace, "hivekeeper-namespace", "", "Namespace of hivekeeper's Deployment; empty: looked for in every namespace.")
	f.StringVar(&o.hkName, "hivekeeper-deployment", "", "Name of hivekeeper's Deployment; empty: the one the chart's labels mark.")
	f.Int32Var(&o.replicas, "replicas", 2, "Replicas hivekeeper is scaled to (the chart's replicaCount).")
	f.DurationVar(&o.quiet, "quiet", 15*time.Second, "How long nothing in the watched namespaces may change before the new operator counts as done.")
	f.DurationVar(&o.wait, "wait", 5*time.Minute, "How long each step may wait: the image pull, a scale, the CRDs, the settling.")
	f.DurationVar(&o.preflight.timeout, "timeout", 5*time.Minute, "How long preflight's prediction may take.")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text (steps as they happen), json (a JSON line per step as it happens, then the report) or yaml (the report at the end).")
	o.preflight.addAcceptFlags(f)
	f.StringVar(&o.image, "image", "", "The image of hivekeeper's Deployment, when its version is not the plugin's: scale it up all the same (the plugin's own release is what it was tested with).")
	f.BoolVarP(&o.yes, "yes", "y", false, "Do not ask for confirmation of the cluster (needed when stdin is not a terminal).")
	f.BoolVar(&o.force, "force", false, "Take over the record of a run whose holder has not renewed it for longer than its stated timeout (a run that died).")
	f.DurationVar(&o.lockTimeout, "lock-timeout", lockTimeoutDefault, "How long this run may go without renewing the record before another may take it over with --force; longer than --wait.")
	o.interval = 2 * time.Second
	return cmd
}

// SwitchReport is what a switch did, in the order it did it.
type SwitchReport struct {
	// Direction is "hivekeeper" or "toolhive": who runs the workloads
	// afterwards.
	Direction string `json:"direction"`
	// Cluster is the cluster switched, as the kubeconfig names it.
	Cluster *Target `json:"cluster,omitempty"`
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

	// undone: the run failed before it changed anything, and put the
	// record back as it was.
	undone bool
}

// progress tells each step as it happens and keeps it in the report: in
// text mode a line when a step that waits starts (what it waits for, for
// how long at most) and one when a step is done, each with the time
// taken; in stream mode (-o json) a JSON line per event.
type progress struct {
	w    io.Writer
	text bool
	// stream writes each event as a line of JSON (Event).
	stream bool
	r      *SwitchReport
	// onStep, when set, is told each step: it renews the record.
	onStep func(step string)
	// start is when the run started; began when the step under way
	// started waiting (zero when none is).
	start, began time.Time
	// now is the clock (time.Now when nil).
	now func() time.Time
}

// Event is one line switch -o json writes as it goes, before its report.
type Event struct {
	// Event is "started" (a step that waits began), "finished" (a step
	// is done) or "note".
	Event string `json:"event"`
	// Step is the step: what it does when started, what it did when
	// finished.
	Step string `json:"step,omitempty"`
	// WaitsFor is what a step started waits for, and Limit for how long
	// at most.
	WaitsFor string `json:"waitsFor,omitempty"`
	Limit    string `json:"limit,omitempty"`
	Note     string `json:"note,omitempty"`
	// Elapsed is the time since the command started; Took, of a step
	// finished, the time since it started.
	Elapsed string `json:"elapsed"`
	Took    string `json:"took,omitempty"`
}

func (p *progress) clock() time.Time {
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	if p.start.IsZero() {
		p.start = now
	}
	return now
}

func round(d time.Duration) string { return d.Round(time.Second).String() }

// emit writes e as a JSON line in stream mode.
func (p *progress) emit(e Event) {
	if !p.stream {
		return
	}
	if b, err := json.Marshal(e); err == nil {
		fmt.Fprintf(p.w, "%s\n", b)
	}
}

// begin says a step starts that waits, up to limit, for waitsFor.
func (p *progress) begin(what, waitsFor string, limit time.Duration) {
	now := p.clock()
	p.began = now
	elapsed := round(now.Sub(p.start))
	if p.text {
		fmt.Fprintf(p.w, "  %s: waiting until %s, up to %s (at %s)\n", what, waitsFor, limit, elapsed)
	}
	p.emit(Event{Event: "started", Step: what, WaitsFor: waitsFor, Limit: limit.String(), Elapsed: elapsed})
}

// finish ends the step begun without a step of the report (preflight's
// run, which the report holds whole).
func (p *progress) finish(what string) {
	now := p.clock()
	took := ""
	if !p.began.IsZero() {
		took, p.began = round(now.Sub(p.began)), time.Time{}
	}
	p.emit(Event{Event: "finished", Step: what, Elapsed: round(now.Sub(p.start)), Took: took})
}

func (p *progress) step(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.r.Steps = append(p.r.Steps, s)
	now := p.clock()
	took := ""
	if !p.began.IsZero() {
		took, p.began = round(now.Sub(p.began)), time.Time{}
	}
	if p.text {
		if took != "" {
			fmt.Fprintf(p.w, "- %s (took %s)\n", s, took)
		} else {
			fmt.Fprintf(p.w, "- %s\n", s)
		}
	}
	p.emit(Event{Event: "finished", Step: s, Elapsed: round(now.Sub(p.start)), Took: took})
	if p.onStep != nil {
		p.onStep(s)
	}
}

func (p *progress) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.r.Notes = append(p.r.Notes, s)
	if p.text {
		fmt.Fprintf(p.w, "  note: %s\n", s)
	}
	p.emit(Event{Event: "note", Note: s, Elapsed: round(p.clock().Sub(p.start))})
}

// refuse ends a switch that changed nothing with code and why.
func (r *SwitchReport) refuse(code int, why string) *SwitchReport {
	r.Refused, r.ExitCode, r.Summary = why, code, "switch refused: "+why
	return r
}

// switchTo hands the workloads from ToolHive's operator to hivekeeper.
func switchTo(ctx context.Context, c clients, o switchOptions, p *progress, logger logr.Logger) (_ *SwitchReport, err error) {
	r := &SwitchReport{Direction: "hivekeeper", Steps: []string{}}
	if o.target != (Target{}) {
		r.Cluster = &o.target
	}
	p.r = r
	hk, err := findHivekeeper(ctx, c.kube, o.hkNamespace, o.hkName)
	if err != nil {
		return nil, err
	}
	prev, prevObj, err := readRecordObject(ctx, c.kube, hk.Namespace)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		if why := inProgress(prev, time.Now(), o.force); why != "" {
			return r.refuse(exitBlocked, why), nil
		}
		if prev.Phase != phaseBack {
			return r.refuse(exitBlocked, fmt.Sprintf("ConfigMap %s/%s records a switch (%s) started %s: run switch --back first",
				hk.Namespace, recordName, prev.Phase, prev.Started.Format(time.RFC3339))), nil
		}
	}
	if why := imageSkew(hk, o.version, o.image); why != "" {
		return r.refuse(exitBlocked, why), nil
	}
	if ptr.Deref(hk.Spec.Replicas, 1) != 0 {
		return r.refuse(exitBlocked, fmt.Sprintf("hivekeeper's Deployment %s/%s already runs %d replicas: install it scaled to 0 (--set replicaCount=0), so that it does not start beside ToolHive's operator",
			hk.Namespace, hk.Name, ptr.Deref(hk.Spec.Replicas, 1))), nil
	}
	p.begin("preflight: hivekeeper's controllers run over a copy of the cluster", "they are done", o.preflight.timeout)
	pf, err := preflight(ctx, c, o.preflight, logger)
	if err != nil {
		return nil, err
	}
	p.finish("preflight: " + pf.Summary)
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
	for _, u := range pf.Unmanaged {
		p.note("%s %s/%s is left as ToolHive's operator runs it and hivekeeper does not manage it (--allow-unmanaged): %s", u.Kind, u.Namespace, u.Name, u.Why)
	}
	for _, v := range pf.Settings.Accepted {
		p.note("ToolHive's operator's %s is left behind (--accept-env): hivekeeper does not know it", v)
	}
	opts, err := options(pf.Settings.Flags)
	if err != nil {
		return nil, err
	}
	if err := withInstanceID(ctx, c.kube, pf.Settings.Flags, &opts); err != nil {
		return nil, err
	}
	op, err := c.kube.AppsV1().Deployments(pf.Operator.Namespace).Get(ctx, pf.Operator.Name, getOpts)
	if err != nil {
		return nil, err
	}
	crds, err := toolhiveCRDs(ctx, c.crds)
	if err != nil {
		return nil, err
	}
	// Every tool that would undo the switch is found before anything is
	// written: one named that cannot be found or read cannot be paused.
	owners := keepers(pf.Operator, crds, hk)
	if !o.leaveOwners {
		located, problems := locateOwners(ctx, c, owners, o.argoNamespace)
		if len(problems) > 0 {
			return r.refuse(exitBlocked, "cannot pause what keeps ToolHive's operator or its CRDs: "+strings.Join(problems, "; ")+
				"; pause it by hand and run switch --leave-owners"), nil
		}
		owners = located
	}
	if !o.yes {
		ok, err := o.confirm(fmt.Sprintf("Switch the workloads of %s from ToolHive's operator %s/%s to hivekeeper %s/%s?", o.target, op.Namespace, op.Name, hk.Namespace, hk.Name))
		if err != nil {
			return nil, err
		}
		if !ok {
			return r.refuse(exitBlocked, "not confirmed: nothing was changed"), nil
		}
	}

	// The record, first: the lock that keeps any other switch or switch
	// --back from starting until this one ends.
	rec := &switchRecord{Phase: phaseSwitching, Started: metav1.NewTime(time.Now().UTC().Truncate(time.Second)), Holder: o.holder("switch"),
		Operator:   deploymentRef{Namespace: op.Namespace, Name: op.Name, Replicas: ptr.Deref(op.Spec.Replicas, 1)},
		Hivekeeper: deploymentRef{Namespace: hk.Namespace, Name: hk.Name, Replicas: o.replicas}}
	if rec.Operator.Replicas == 0 {
		rec.Operator.Replicas = 1
	}
	if err := createRecord(ctx, c.kube, rec, crds, prevObj); errors.Is(err, errTaken) {
		return r.refuse(exitBlocked, takenWhy(ctx, c.kube, hk.Namespace)), nil
	} else if err != nil {
		return r, err
	}
	recordEvent(ctx, c.kube, recordRef(hk.Namespace), corev1.EventTypeNormal, "SwitchStarted", "switch to hivekeeper started by "+rec.Holder.String())
	ctx, release := hold(ctx, c.kube, rec, p)
	defer release(&err)
	p.step("recorded ToolHive's operator %s/%s (%s) and its %s in ConfigMap %s/%s, held by %s on %s until this switch ends",
		op.Namespace, op.Name, count(int(rec.Operator.Replicas), "replica", "replicas"), count(len(crds), "CRD", "CRDs"), hk.Namespace, recordName, rec.Holder.User, rec.Holder.Host)
	if ptr.Deref(op.Spec.Replicas, 1) == 0 {
		p.note("ToolHive's operator runs no replica now; switch --back will start 1")
	}

	// hivekeeper's image, before anything else changes: a failure leaves
	// nothing to undo, and the record is put back as it was.
	p.begin(fmt.Sprintf("a pod with hivekeeper's image %s", hk.Spec.Template.Spec.Containers[controllerContainer(hk)].Image), "the image is pulled and its container started", o.wait)
	if err := pullCheck(ctx, c.kube, hk, o.wait, o.interval); err != nil {
		if rerr := restoreRecord(context.WithoutCancel(ctx), c.kube, rec, prevObj); rerr != nil {
			return r, errors.Join(err, rerr)
		}
		rec.Holder, r.undone = nil, true
		return r, err
	}
	p.step("hivekeeper's image %s pulled and started", hk.Spec.Template.Spec.Containers[controllerContainer(hk)].Image)

	// What would scale the operator back up, or put ToolHive's CRDs
	// back over hivekeeper's.
	if err := pauseOwners(ctx, c, rec, owners, o.leaveOwners, p); err != nil {
		return r, err
	}

	before, err := ownedSnapshot(ctx, c.kube, c.toolhive, opts.Namespaces)
	if err != nil {
		return r, err
	}
	began := time.Now()
	p.begin(fmt.Sprintf("scaling ToolHive's operator %s/%s to 0", op.Namespace, op.Name), "none of its pods is left", o.wait)
	if err := scaleTo(ctx, c.kube, op, 0, o.wait, o.interval); err != nil {
		return r, err
	}
	recordEvent(ctx, c.kube, deploymentRefOf(op.Namespace, op.Name), corev1.EventTypeNormal, "ScaledDown",
		fmt.Sprintf("scaled to 0 by kubectl hivekeeper switch (%s): hivekeeper takes over; the record is ConfigMap %s/%s", rec.Holder.User, hk.Namespace, recordName))
	p.step("scaled ToolHive's operator %s/%s to 0; its pods are gone", op.Namespace, op.Name)
	ours, err := hivekeeperCRDs()
	if err != nil {
		return r, err
	}
	p.begin("replacing ToolHive's CRDs with hivekeeper's", "every version is served", o.wait)
	if err := replaceCRDs(ctx, c, ours, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("replaced ToolHive's CRDs with hivekeeper's %d", len(ours))
	if n, err := restorePolicy(ctx, c.kube, hk); err != nil {
		return r, err
	} else if n > 0 {
		p.step("set hivekeeper's admission policy back to the validation actions switch --back had set aside")
	}
	p.begin(fmt.Sprintf("scaling hivekeeper %s/%s to %d", hk.Namespace, hk.Name, o.replicas), "a pod is ready and leads", o.wait)
	if err := scaleTo(ctx, c.kube, hk, o.replicas, o.wait, o.interval); err != nil {
		return r, err
	}
	if err := waitLeader(ctx, c.kube, hk, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("scaled hivekeeper %s/%s to %d; it is ready and leads", hk.Namespace, hk.Name, o.replicas)
	p.begin("the watched namespaces settling", fmt.Sprintf("nothing the operators write changes for %s", o.quiet), o.wait)
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
	r.conclude()
	rec.Phase, rec.Restarted = phaseSwitched, r.Outcome.Restarted
	if err := finish(ctx, c.kube, rec, p, r.Summary); err != nil {
		return r, err
	}
	return r, nil
}

// switchBack hands the workloads back to ToolHive's operator, as the
// record of the last switch has it.
func switchBack(ctx context.Context, c clients, o switchOptions, p *progress) (_ *SwitchReport, err error) {
	r := &SwitchReport{Direction: "toolhive", Steps: []string{}}
	if o.target != (Target{}) {
		r.Cluster = &o.target
	}
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
	if why := inProgress(rec, time.Now(), o.force); why != "" {
		return r.refuse(exitBlocked, why), nil
	}
	if rec.Phase == phaseBack {
		at := rec.Started.Format(time.RFC3339)
		if rec.Finished != nil {
			at = rec.Finished.Format(time.RFC3339)
		}
		return r.refuse(exitBlocked, fmt.Sprintf("the last switch went back already (ConfigMap %s/%s, phase back, %s): there is nothing to go back from", hk.Namespace, recordName, at)), nil
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
	settings, err := settingsOf(found, nil)
	if err != nil {
		return nil, err
	}
	opts, err := options(settings.Flags)
	if err != nil {
		return nil, err
	}
	if !o.yes {
		ok, err := o.confirm(fmt.Sprintf("Hand the workloads of %s back from hivekeeper %s/%s to ToolHive's operator %s/%s?", o.target, hk.Namespace, hk.Name, op.Namespace, op.Name))
		if err != nil {
			return nil, err
		}
		if !ok {
			return r.refuse(exitBlocked, "not confirmed: nothing was changed"), nil
		}
	}

	// The record, first: this run holds it until it ends.
	took := rec.Holder
	rec.Phase, rec.Holder, rec.Failed, rec.Finished = phaseGoingBack, o.holder("switch --back"), "", nil
	if err := saveRecord(ctx, c.kube, rec); errors.Is(err, errTaken) {
		return r.refuse(exitBlocked, takenWhy(ctx, c.kube, hk.Namespace)), nil
	} else if err != nil {
		return r, err
	}
	if took != nil {
		recordEvent(ctx, c.kube, recordRef(hk.Namespace), corev1.EventTypeWarning, "TakenOver", fmt.Sprintf("%s took the record over (--force) from %s, silent since %s", rec.Holder.User, took, took.Renewed.UTC().Format(time.RFC3339)))
		p.note("took the record over from %s, which had not renewed it since %s", took, took.Renewed.UTC().Format(time.RFC3339))
	}
	recordEvent(ctx, c.kube, recordRef(hk.Namespace), corev1.EventTypeNormal, "SwitchBackStarted", "switch --back started by "+rec.Holder.String())
	ctx, release := hold(ctx, c.kube, rec, p)
	defer release(&err)
	if err := withInstanceID(ctx, c.kube, settings.Flags, &opts); err != nil {
		return r, err
	}
	before, err := ownedSnapshot(ctx, c.kube, c.toolhive, opts.Namespaces)
	if err != nil {
		return r, err
	}
	began := time.Now()
	p.begin(fmt.Sprintf("scaling hivekeeper %s/%s to 0", hk.Namespace, hk.Name), "none of its pods is left", o.wait)
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
	rebound, left, err := releaseRunnerBindings(ctx, c.kube, opts.Namespaces)
	if err != nil {
		return r, err
	}
	if len(rebound) > 0 {
		p.step("bound %s back to ToolHive's Roles of their names: hivekeeper had bound them to its ClusterRoles, and ToolHive's operator never changes the role of a binding that exists", count(len(rebound), "runner RoleBinding", "runner RoleBindings"))
	}
	for _, n := range left {
		p.note("RoleBinding %s binds hivekeeper's ClusterRole and ToolHive's operator has no Role of its name (it never set the workload up): left as it is; once ToolHive's operator has written that Role, delete the binding for it to bind the Role", n)
	}
	p.begin("putting ToolHive's CRDs back", "every version is served", o.wait)
	if err := replaceCRDs(ctx, c, crds, o.wait, o.interval); err != nil {
		return r, err
	}
	p.step("put back ToolHive's %s as recorded", count(len(crds), "CRD", "CRDs"))
	p.begin(fmt.Sprintf("scaling ToolHive's operator %s/%s to %d", op.Namespace, op.Name, rec.Operator.Replicas), "a pod is ready", o.wait)
	if err := scaleTo(ctx, c.kube, op, rec.Operator.Replicas, o.wait, o.interval); err != nil {
		return r, err
	}
	recordEvent(ctx, c.kube, deploymentRefOf(op.Namespace, op.Name), corev1.EventTypeNormal, "ScaledUp",
		fmt.Sprintf("scaled to %d by kubectl hivekeeper switch --back (%s); the record is ConfigMap %s/%s", rec.Operator.Replicas, rec.Holder.User, hk.Namespace, recordName))
	p.step("scaled ToolHive's operator %s/%s to %d; it is ready", op.Namespace, op.Name, rec.Operator.Replicas)
	p.begin("the watched namespaces settling", fmt.Sprintf("nothing the operators write changes for %s", o.quiet), o.wait)
	after, settled, err := settle(ctx, c, opts.Namespaces, o.quiet, o.wait, o.interval)
	if err != nil {
		return r, err
	}
	settledStep(p, settled, o)
	missing, err := runnerBindingsBack(ctx, c.kube, rebound)
	if err != nil {
		return r, err
	}
	for _, n := range missing {
		p.note("RoleBinding %s, bound to ToolHive's Role, is gone: ToolHive's operator writes it again when it reconciles the workload", n)
	}
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
	r.conclude()
	rec.Phase = phaseBack
	if err := finish(ctx, c.kube, rec, p, r.Summary); err != nil {
		return r, err
	}
	return r, nil
}

// hold makes rec, just written, this run's lock until it ends: each step
// renews it (and is an event on it). The context returned is cancelled
// when a renewal finds the record taken over by another run. release,
// deferred with the run's error, ends the hold of a run that did not
// finish: the holder is cleared and the error kept (the phase stays, for
// switch --back); the error of a run that lost the record becomes that.
func hold(ctx context.Context, kube kubernetes.Interface, rec *switchRecord, p *progress) (context.Context, func(*error)) {
	ctx, cancel := context.WithCancelCause(ctx)
	p.onStep = func(step string) {
		rec.Step, rec.Holder.Renewed = step, metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		if err := saveRecord(ctx, kube, rec); errors.Is(err, errTaken) {
			cancel(err)
		}
		recordEvent(ctx, kube, recordRef(rec.Hivekeeper.Namespace), corev1.EventTypeNormal, "Step", step)
	}
	return ctx, func(errp *error) {
		defer cancel(nil)
		p.onStep = nil
		if cause := context.Cause(ctx); errors.Is(cause, errTaken) {
			*errp = cause
			return
		}
		if rec.Holder == nil {
			return
		}
		rec.Holder, rec.Finished = nil, ptr.To(metav1.NewTime(time.Now().UTC().Truncate(time.Second)))
		if *errp != nil {
			rec.Failed = (*errp).Error()
		}
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer scancel()
		if err := saveRecord(sctx, kube, rec); err != nil && *errp == nil {
			*errp = err
		}
		if *errp != nil {
			recordEvent(sctx, kube, recordRef(rec.Hivekeeper.Namespace), corev1.EventTypeWarning, "Failed", (*errp).Error())
		}
	}
}

// finish saves the record of a run that ran to the end, released, and
// says so.
func finish(ctx context.Context, kube kubernetes.Interface, rec *switchRecord, p *progress, summary string) error {
	p.onStep = nil
	held := rec.Holder
	rec.Holder, rec.Failed, rec.Finished = nil, "", ptr.To(metav1.NewTime(time.Now().UTC().Truncate(time.Second)))
	if err := saveRecord(ctx, kube, rec); err != nil {
		rec.Holder = held
		return err
	}
	recordEvent(ctx, kube, recordRef(rec.Hivekeeper.Namespace), corev1.EventTypeNormal, "Finished", summary)
	p.step("released the record %s/%s, phase %s: the trace of this switch until the next one", rec.Hivekeeper.Namespace, recordName, rec.Phase)
	return nil
}

// takenWhy says who took the record first, as read now.
func takenWhy(ctx context.Context, kube kubernetes.Interface, ns string) string {
	why := "another run of kubectl hivekeeper took the record " + ns + "/" + recordName + " meanwhile"
	if rec, err := readRecord(ctx, kube, ns); err == nil && rec != nil && rec.Holder != nil {
		why += ": " + inProgress(rec, time.Now(), false)
	}
	return why
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
		if r.undone {
			t.line(1, "nothing was changed: the record is as it was before this switch")
		} else if len(r.Steps) > 0 {
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

// imageSkew says why a switch refuses to scale up hivekeeper's Deployment
// hk: its controller image's version (its tag, or its
// app.kubernetes.io/version label) is not the plugin's, version, and
// image does not name that image. "" when it may.
func imageSkew(hk *appsv1.Deployment, version, image string) string {
	if len(hk.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	running := hk.Spec.Template.Spec.Containers[controllerContainer(hk)].Image
	v := imageTag(running)
	if v == "" {
		v = hk.Labels[labelVersion]
	}
	switch {
	case image != "" && image != running:
		return fmt.Sprintf("--image names %s, but hivekeeper's Deployment %s/%s runs %s", image, hk.Namespace, hk.Name, running)
	case image != "" || sameVersion(version, v):
		return ""
	case v == "":
		v = "an unknown version"
	}
	return fmt.Sprintf("hivekeeper's Deployment %s/%s runs %s (%s), not the plugin's version %s: use the plugin of that release, or pass --image %s to switch to it all the same",
		hk.Namespace, hk.Name, running, v, version, running)
}
