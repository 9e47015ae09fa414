// Command bench measures hivekeeper against a real kube-apiserver and etcd:
// it starts the API server (test/integration/framework), runs the real
// hivekeeper binary as a separate process, creates load through the dynamic
// client, and reads the controller's own /metrics to count its API
// requests, writes, memory and sync latency.
//
// The cluster around it is a real one in all but the kubelet:
// kube-controller-manager, kube-scheduler and kwok's fake nodes run beside
// the API server (framework.Options.Cluster), so every Deployment rolls out
// into pods that become Ready, and the garbage collector removes children.
//
// Scenarios, per N: create N MCPServers referencing K MCPOIDCConfigs and
// wait until every Deployment and ConfigMap exists, every status is
// written and every MCPServer is Ready; a steady window (writes must be
// 0); a label added to every MCPServer (metadata only: 0 writes); a change
// of one config with N/K referrers; delete everything (finalizers complete,
// then the garbage collector removes the children); then a cold start (the
// load stored first, the binary started after) and the raw-client floor
// (the cold start's children created again by plain client-go). At the N
// of -peer-n, ToolHive's own operator does the create, the label and the
// config change on a cluster of its own, in the same run. Convergence is
// followed through watches, never by listing, so the benchmark does not
// load the API server O(N) per poll.
//
//	go run ./test/bench                 # N=300, the default scenario
//	go run ./test/bench -n 300,1000,3000,10000 -plot docs/performance.png
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/operatorenv"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/provenance"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

type config struct {
	ns          []int
	configs     int
	steady      time.Duration
	binary      string
	out         string
	plot        string
	workers     int
	qps         float64
	burst       int
	concurrency int
	coldOnly    bool
	// rounds is how many times the cold start and its floors run at
	// each N of ns.
	rounds map[int]int
	// identity is who the controller runs as: identityChart (the
	// default), identityChartNoFlowSchema or identityAdmin.
	identity string
	noCold   bool
	fanIn    time.Duration
	profile  string
	// peer is ToolHive's thv-operator binary, run at the N of peerNs.
	peer   string
	peerNs []int
	// note is printed after the machine line: the conditions of the run.
	note string
	// toolhive is the ToolHive release the peer is (TOOLHIVE_VERSION) and
	// module its source in the Go module cache.
	toolhive, module string
	// chartEnv is the environment ToolHive's chart at module gives its
	// operator, and chartFlags the hivekeeper flags that keep the same
	// operator-wide settings (operatorenv.Flags), so that both sides write
	// the same RunConfig content.
	chartEnv, chartFlags []string
	// record names the run's command and commit in the report.
	record  provenance.Record
	command string
}

func main() {
	var c config
	var ns string
	flag.StringVar(&ns, "n", "300", "comma-separated numbers of MCPServers, one full run each")
	flag.IntVar(&c.configs, "configs", 3, "MCPOIDCConfigs the servers reference (round robin)")
	flag.DurationVar(&c.steady, "steady", 60*time.Second, "length of the steady-state window")
	flag.StringVar(&c.binary, "binary", "", "hivekeeper binary; empty builds ./cmd/controller")
	flag.StringVar(&c.out, "out", "", "write the report (markdown) to this file")
	flag.StringVar(&c.plot, "plot", "", "write a PNG plot of the runs to this file")
	flag.IntVar(&c.workers, "workers", 0, "hivekeeper --workers (0: the binary's default)")
	flag.Float64Var(&c.qps, "qps", 0, "hivekeeper --kube-api-qps (0: the binary's default)")
	flag.IntVar(&c.burst, "burst", 0, "hivekeeper --kube-api-burst (0: the binary's default)")
	flag.IntVar(&c.concurrency, "load-concurrency", 16, "concurrent clients creating the load")
	flag.BoolVar(&c.coldOnly, "cold-only", false, "run only the cold start and the floors")
	var rounds string
	flag.StringVar(&rounds, "rounds", "5", "rounds of the cold start and its floors, one number for every N or a comma-separated number per N of -n; the report keeps the round whose cold ÷ spec floor is the median")
	flag.StringVar(&c.identity, "identity", identityChart, "who hivekeeper runs as: chart (its chart's ServiceAccount, RBAC and FlowSchema, as a real install), chart-no-flowschema (the same without the FlowSchema) or admin (system:masters, exempt from API Priority and Fairness)")
	flag.BoolVar(&c.noCold, "no-cold", false, "skip the cold start and the floors")
	flag.DurationVar(&c.fanIn, "fan-in-window", 0, "hivekeeper --fan-in-window (0: the binary's default)")
	flag.StringVar(&c.profile, "profile", "", "write 5s CPU profiles of kube-apiserver and hivekeeper taken at the start of each cold start, spec floor and delete to <prefix>-{cold,specfloor,delete}-{apiserver,hivekeeper}-<N>.pprof (no hivekeeper profile for the spec floor, which runs without it)")
	var peerNs string
	flag.StringVar(&c.command, "command", "", "the command the report names as having made it (the make target that ran this); empty: this command line")
	flag.StringVar(&c.note, "note", "", "a sentence on the conditions of the run (e.g. other load on the machine), printed in the report")
	flag.StringVar(&c.peer, "peer", "", "ToolHive's thv-operator to measure beside hivekeeper; empty: the one hack/toolhive-binaries.sh builds, \"none\": no peer")
	flag.StringVar(&peerNs, "peer-n", "300", "comma-separated N at which the peer runs too (each also in -n)")
	flag.Parse()
	c.ns = parseNs("-n", ns)
	c.rounds = map[int]int{}
	perN := parseNs("-rounds", rounds)
	if len(perN) != 1 && len(perN) != len(c.ns) {
		fatalf("-rounds has %d numbers for %d N", len(perN), len(c.ns))
	}
	for i, n := range c.ns {
		c.rounds[n] = perN[min(i, len(perN)-1)]
	}
	if c.identity != identityChart && c.identity != identityChartNoFlowSchema && c.identity != identityAdmin {
		fatalf("bad -identity %q", c.identity)
	}
	if peerNs != "" && c.peer != "none" {
		c.peerNs = parseNs("-peer-n", peerNs)
	}
	if err := run(c); err != nil {
		fatalf("%v", err)
	}
}

// commandLine is the command that ran the benchmark, as it would be typed.
func commandLine() string {
	words := []string{"go", "run", "./test/bench"}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

func parseNs(flagName, list string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fatalf("bad %s %q", flagName, s)
		}
		out = append(out, n)
	}
	return out
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
	os.Exit(1)
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

func run(c config) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	if c.binary == "" {
		c.binary = filepath.Join(root, "bin", "hivekeeper-bench")
		logf("building %s", c.binary)
		cmd := exec.Command("go", "build", "-trimpath", "-o", c.binary, "./cmd/controller")
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building hivekeeper: %w", err)
		}
	}
	if c.command == "" {
		c.command = commandLine()
	}
	c.record = provenance.Current(root, c.command)
	if c.toolhive, c.module, err = framework.ToolHiveSource(framework.ToolHiveRuntimeRelease); err != nil {
		return err
	}
	if c.chartEnv, err = toolhive.ChartEnv(c.module, ""); err != nil {
		return err
	}
	flags, unmapped, err := operatorenv.Flags(c.chartEnv)
	if err != nil {
		return err
	}
	for _, u := range unmapped {
		logf("ToolHive %s's chart sets %s, which has no hivekeeper flag: %s", c.toolhive, u.Name, u.Why)
	}
	// Both sides watch the bench namespace alone: hivekeeper is given
	// --namespaces, the peer WATCH_NAMESPACE.
	for _, f := range flags {
		if !strings.HasPrefix(f, "--namespaces=") {
			c.chartFlags = append(c.chartFlags, f)
		}
	}
	logf("hivekeeper runs with ToolHive %s's chart settings: %s", c.toolhive, strings.Join(c.chartFlags, " "))
	if len(c.peerNs) > 0 && c.peer == "" {
		cmd := exec.Command(filepath.Join(root, "hack", "toolhive-binaries.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("hack/toolhive-binaries.sh: %w", err)
		}
		c.peer = filepath.Join(strings.TrimSpace(string(out)), "thv-operator")
	}
	var results []*result
	for _, n := range c.ns {
		r, err := runOne(context.Background(), c, root, n)
		if err != nil {
			return fmt.Errorf("N=%d: %w", n, err)
		}
		if slices.Contains(c.peerNs, n) {
			if r.peer, err = runPeer(context.Background(), c, n); err != nil {
				return fmt.Errorf("N=%d: peer: %w", n, err)
			}
		}
		results = append(results, r)
		fmt.Println(r.table())
		// After every N, so that a long sweep stopped early keeps the
		// rows it finished.
		if c.out != "" {
			if err := os.WriteFile(c.out, []byte(renderReport(c, results)), 0o644); err != nil {
				return err
			}
			logf("wrote %s", c.out)
		}
	}
	if c.plot != "" {
		if err := writePlot(c.plot, results); err != nil {
			return err
		}
		logf("wrote %s", c.plot)
	}
	return nil
}
