package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
)

// clients are what preflight reads the cluster with.
type clients struct {
	kube     kubernetes.Interface
	toolhive versioned.Interface
	crds     apiextensionsclient.Interface
	// dyn reads and pauses the tools that keep ToolHive's operator
	// (Argo CD, Flux), whose types hivekeeper does not import.
	dyn dynamic.Interface
}

func newClients(cfg *rest.Config, version string) (clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-hivekeeper/" + version
	// A preflight lists a handful of resources per namespace: enough
	// client-side room that it is not throttled, still a small burst.
	cfg.QPS, cfg.Burst = 50, 100
	var c clients
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.toolhive, err = versioned.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.crds, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	c.dyn, err = dynamic.NewForConfig(cfg)
	return c, err
}

// preflightOptions are preflight's own flags.
type preflightOptions struct {
	// namespace is where ToolHive's operator runs; empty: anywhere.
	namespace string
	// operator is the name of its Deployment; empty: found by its image
	// or environment.
	operator string
	output   string
	// timeout bounds the controllers' run.
	timeout time.Duration
	// allowUnmanaged are the workloads ("Kind/namespace/name") the user
	// accepts hivekeeper leaving unmanaged; acceptEnv the unknown
	// variables of the operator it accepts leaving behind.
	allowUnmanaged, acceptEnv []string
}

// addAcceptFlags adds the flags that accept what preflight would block
// on, to preflight and to switch.
func (o *preflightOptions) addAcceptFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&o.allowUnmanaged, "allow-unmanaged", nil, "A workload, as Kind/namespace/name, that hivekeeper would refuse while ToolHive's operator runs it, which may be left as it runs now and unmanaged (repeatable).")
	f.StringSliceVar(&o.acceptEnv, "accept-env", nil, "A variable of ToolHive's operator that hivekeeper does not know, which may be left behind (repeatable).")
}

// checkAcceptFlags refuses an --allow-unmanaged that names no object.
func (o *preflightOptions) checkAcceptFlags() error {
	for _, a := range o.allowUnmanaged {
		if parts := strings.Split(a, "/"); len(parts) != 3 || slices.Contains(parts, "") {
			return usageError("--allow-unmanaged %q: name a workload as Kind/namespace/name (MCPServer/team-a/fetch)", a)
		}
	}
	return nil
}

func newPreflight(g *globals, stdout, stderr io.Writer) *cobra.Command {
	o := &preflightOptions{}
	cmd := &cobra.Command{
		Use:   "preflight",
		Short: "Predict a switch from ToolHive's operator to hivekeeper, changing nothing",
		Long: `preflight reads the cluster and changes nothing. It finds ToolHive's operator
(its Deployment, release, and the Helm release, Argo CD Application or Flux
object that keeps it), prints the hivekeeper chart values that keep every
operator-wide setting of its environment, checks the stored versions of the
toolhive.stacklok.dev CRDs, and runs hivekeeper's own controllers, with
those settings, over an in-memory copy of every custom resource and child:
what they refuse is listed with why, and what they write is the switch's
prediction: the pods that restart (with the first field that differs), the
children recreated and the ConfigMaps rewritten.

A workload ToolHive's operator runs (it has children) that hivekeeper
would refuse, or whose pod hivekeeper will not run, would be left running
as it is and never updated: it blocks a switch unless --allow-unmanaged
names it (Kind/namespace/name). A variable of the operator's process
(HTTP_PROXY, HTTPS_PROXY, NO_PROXY and their lower-case forms, GOMAXPROCS,
GODEBUG, GOTRACEBACK, TZ) is carried over in the values (extraEnv); any
other variable hivekeeper does not know blocks unless --accept-env names
it.

-n names the namespace of ToolHive's operator (it is looked for in every
namespace without it); the workloads checked are those the operator watches.

Exit status: 0 when the switch restarts no pod and nothing blocks it;
3 when it restarts pods; 4 when something must be settled first (a stored
version hivekeeper does not serve, an operator setting it cannot read or
does not know, a kind it could not read, a workload it would leave
unmanaged, a prediction that did not settle); 1 when preflight could not run; 2 on a usage error.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkAcceptFlags(); err != nil {
				return err
			}
			c, err := g.connect(o.output, &o.namespace)
			if err != nil {
				return err
			}
			report, err := preflight(cmd.Context(), c, *o, g.logger(stderr))
			if err != nil {
				return err
			}
			if err := report.write(stdout, o.output); err != nil {
				return err
			}
			if report.ExitCode != exitOK {
				return &exitCode{code: report.ExitCode}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.operator, "operator", "", "Name of ToolHive's operator Deployment, in the namespace -n names. Needed only when more than one runs.")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text, json or yaml.")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "How long hivekeeper's controllers may take to settle over the copy of the cluster.")
	o.addAcceptFlags(f)
	return cmd
}

// preflight reads the cluster through c, runs the prediction and returns
// the report, conclusion included.
func preflight(ctx context.Context, c clients, o preflightOptions, logger logr.Logger) (*Report, error) {
	op, err := findOperator(ctx, c.kube, o.namespace, o.operator)
	if err != nil {
		return nil, err
	}
	r := &Report{Operator: op, ReleaseNote: releaseNote(op)}
	if r.Settings, err = settingsOf(op, o.acceptEnv); err != nil {
		return nil, err
	}
	if r.CRDs, err = checkCRDs(ctx, c.crds); err != nil {
		return nil, err
	}
	opts, err := options(r.Settings.Flags)
	if err != nil {
		return nil, fmt.Errorf("the operator's settings: %w", err)
	}
	if err := withInstanceID(ctx, c.kube, r.Settings.Flags, &opts); err != nil {
		return nil, err
	}
	snap, err := takeSnapshot(ctx, c.kube, c.toolhive, opts.Namespaces)
	if err != nil {
		return nil, err
	}
	for _, res := range snap.unserved {
		for _, crd := range r.CRDs {
			if crd.Name == res+".toolhive.stacklok.dev" {
				r.Unread = append(r.Unread, res)
			}
		}
	}
	ran, err := runControllers(ctx, snap, opts, o.timeout, logger)
	if err != nil {
		return nil, err
	}
	r.Prediction = predict(snap, ran)
	if err := listPods(ctx, c.kube, snap, r.Prediction.Restarts); err != nil {
		return nil, err
	}
	if r.Refused, r.Ignored, err = findings(ctx, ran); err != nil {
		return nil, err
	}
	r.Warnings = warnings(ran)
	r.Unmanaged = unmanaged(snap, r.Refused, r.Warnings, o.allowUnmanaged)
	r.conclude()
	return r, nil
}

// listPods names the pods each restart replaces: those its workload's
// selector matches now. Without the right to list pods the counts stay
// the workloads' replicas.
func listPods(ctx context.Context, kube kubernetes.Interface, snap *snapshot, restarts []Restart) error {
	for i := range restarts {
		x := &restarts[i]
		var sel *metav1.LabelSelector
		switch o := snap.live[resourceOf(x.Kind)+"/"+x.Namespace+"/"+x.Name].(type) {
		case *appsv1.Deployment:
			sel = o.Spec.Selector
		case *appsv1.StatefulSet:
			sel = o.Spec.Selector
		}
		if sel == nil {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			continue
		}
		pods, err := kube.CoreV1().Pods(x.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
		if apierrors.IsForbidden(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing the pods of %s %s/%s: %w", x.Kind, x.Namespace, x.Name, err)
		}
		for _, p := range pods.Items {
			x.Pods = append(x.Pods, p.Name)
		}
	}
	return nil
}

// resourceOf is the resource of a kind of kinds.
func resourceOf(kind string) string {
	for r, k := range kinds {
		if k == kind {
			return r
		}
	}
	return ""
}
