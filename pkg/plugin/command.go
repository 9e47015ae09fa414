// Package plugin is hivekeeper's kubectl plugin (cmd/kubectl-hivekeeper
// is its entry point): with the binary on PATH, `kubectl hivekeeper
// <command>` runs Execute with kubectl's connection flags (--kubeconfig,
// --context, -n and the rest).
//
// preflight, read-only, says what a switch from ToolHive's operator to
// hivekeeper would do to a cluster before anything changes: the chart
// values that keep the operator's settings, the CRDs' stored versions, the
// objects hivekeeper would refuse, and, from hivekeeper's own controllers
// run over an in-memory copy of the cluster, the pods that would restart
// and the children that would be recreated or rewritten. switch then
// hands the workloads over, checking each step, and switch --back hands
// them back.
package plugin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// The exit codes scripts can test. A command that ran to the end exits
// exitOK or one of the findings' codes; exitBlocked wins over
// exitRestarts, as it means the prediction may not hold.
const (
	exitOK = 0
	// exitFailed: the command could not do its work (the API server could
	// not be reached, a read was refused, the prediction did not settle).
	exitFailed = 1
	// exitUsage: a flag or argument is wrong.
	exitUsage = 2
	// exitRestarts: the switch would restart pods.
	exitRestarts = 3
	// exitBlocked: something must be settled before a switch (a stored
	// version hivekeeper does not serve, an operator setting it cannot
	// read or does not know).
	exitBlocked = 4
	// exitUnpredicted: switch ran and restarted pods its prediction did
	// not name (going back: a workload the switch did not restart).
	exitUnpredicted = 5
)

// exitCode is an error that carries the process's exit code; a nil err
// means the report already said everything.
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitCode) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitCode{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// Execute runs the command line args of the plugin whose version is
// version, and returns the exit code. A switch asks for confirmation on
// stderr and reads it from stdin when stdin is a terminal; a reader that
// is not a file counts as one.
func Execute(ctx context.Context, version string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(version, stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ec *exitCode
	if !errors.As(err, &ec) {
		ec = &exitCode{code: exitFailed, err: err}
	}
	if ec.err != nil {
		fmt.Fprintln(stderr, "error:", ec.err)
	}
	return ec.code
}

// globals are the flags every command takes: kubectl's connection flags
// and the log verbosity.
type globals struct {
	// version is the plugin's.
	version    string
	stdin      io.Reader
	kubeconfig string
	// target is the cluster connect connected to, as the kubeconfig
	// names it.
	target    Target
	overrides clientcmd.ConfigOverrides
	verbosity int
}

// clientConfig is the kubeconfig the flags select, loaded as kubectl
// loads it ($KUBECONFIG, ~/.kube/config, in-cluster).
func (g *globals) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &g.overrides)
}

// connect checks an --output value and makes the clients of the selected
// kubeconfig; the namespace -n names, when it names one, goes to ns.
func (g *globals) connect(output string, ns *string) (clients, error) {
	switch output {
	case "", "text", "json", "yaml":
	default:
		return clients{}, usageError("--output must be text, json or yaml, not %q", output)
	}
	cc := g.clientConfig()
	cfg, err := cc.ClientConfig()
	if err != nil {
		return clients{}, err
	}
	if n, explicit, err := cc.Namespace(); err == nil && explicit {
		*ns = n
	}
	g.target = g.targetOf(cc, cfg)
	return newClients(cfg, g.version)
}

// logger is where the controllers preflight runs log: nowhere unless -v
// asks for it, so the report is all a user reads.
func (g *globals) logger(stderr io.Writer) logr.Logger {
	if g.verbosity <= 0 {
		klog.SetLogger(logr.Discard())
		return logr.Discard()
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", strconv.Itoa(g.verbosity))
	klog.SetOutput(stderr)
	klog.LogToStderr(false)
	return klog.Background()
}

// targetOf names the cluster cfg connects to as the kubeconfig does: the
// context, its cluster and user (or the flags that override them), the
// server, and whom the user impersonates.
func (g *globals) targetOf(cc clientcmd.ClientConfig, cfg *rest.Config) Target {
	t := Target{Server: cfg.Host}
	if raw, err := cc.RawConfig(); err == nil {
		t.Context = g.overrides.CurrentContext
		if t.Context == "" {
			t.Context = raw.CurrentContext
		}
		if c, ok := raw.Contexts[t.Context]; ok {
			t.Cluster, t.User = c.Cluster, c.AuthInfo
		} else {
			t.Context = ""
		}
	}
	if g.overrides.Context.Cluster != "" {
		t.Cluster = g.overrides.Context.Cluster
	}
	if g.overrides.Context.AuthInfo != "" {
		t.User = g.overrides.Context.AuthInfo
	}
	if t.User == "" && t.Context == "" && cfg.BearerTokenFile != "" {
		t.User = "the pod's ServiceAccount"
	}
	if cfg.Impersonate.UserName != "" {
		t.User = strings.TrimSpace(t.User + " as " + cfg.Impersonate.UserName)
	}
	return t
}

// host names the machine the plugin runs on (in a pod, the pod).
func (g *globals) host() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "(unknown host)"
	}
	return h
}

// interactive reports whether a person can answer on stdin: a terminal,
// or a reader that is not a file (a test's).
func (g *globals) interactive() bool {
	f, ok := g.stdin.(*os.File)
	if !ok {
		return g.stdin != nil
	}
	return term.IsTerminal(int(f.Fd()))
}

func newRoot(version string, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{version: version, stdin: stdin}
	root := &cobra.Command{
		Use:   "kubectl-hivekeeper",
		Short: "Plan and check a switch between ToolHive's operator and hivekeeper",
		Long: "kubectl hivekeeper looks at a cluster that runs ToolHive's MCP API (toolhive.stacklok.dev)\n" +
			"and says what hivekeeper would do to it. It uses kubectl's connection flags.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Annotated as a kubectl plugin, cobra names it "kubectl hivekeeper"
		// in help and usage lines.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl hivekeeper"},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitCode{code: exitUsage, err: err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.kubeconfig, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use.")
	clientcmd.BindOverrideFlags(&g.overrides, pf, clientcmd.RecommendedConfigOverrideFlags(""))
	pf.IntVarP(&g.verbosity, "v", "v", 0, "Log verbosity of the controllers preflight runs, on stderr; 0 logs nothing.")
	root.AddCommand(newPreflight(g, stdout, stderr), newSwitch(g, stdout, stderr), newStatus(g, stdout), newMigrateStorage(g, stdout), newVersion(version, g, stdout, stderr))
	return root
}

// noArgs refuses positional arguments as a usage error.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected argument %q", args[0])
	}
	return nil
}
