package conformance_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/app"
	"github.com/hivekeeper/hivekeeper/pkg/controller/mcpserver"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestRunnerRecreatesDeletedStatefulSet: on a cluster with a controller
// manager, a scheduler and kwok's nodes, the MCP server's StatefulSet is
// the runner's, not hivekeeper's. ToolHive's thv-proxyrunner runs as the
// proxy pod's container would, started again whenever it exits, as the
// kubelet restarts a container of a Deployment's pod; the StatefulSet
// controller gives its StatefulSet a pod that kwok reports Ready, so the
// runner serves. The StatefulSet is deleted by hand. ToolHive v0.47.0's
// runner does not notice while it runs (its monitor takes the StatefulSet's
// NotFound for a passing error); it creates the StatefulSet when it starts,
// so the container's next start (a failed liveness probe, a node's reboot,
// here the test ending the process) brings it back. Meanwhile the
// MCPServer reads Pending (its proxy is up, the server behind it is
// gone), as ToolHive v0.63.0's operator reports it, and Ready again once
// the StatefulSet is back; hivekeeper writes nothing but that status, and
// never recreates or touches the StatefulSet, and once the runner
// recreated it nobody changes it again.
func TestRunnerRecreatesDeletedStatefulSet(t *testing.T) {
	requireToolHive(t)
	env := startCluster(t)
	env.StartControllers(t, app.Options{Workers: 2})
	ns := env.Namespace(t)
	ctx := context.Background()
	applyStrict(t, env, ns, "testdata/table/03-streamable-http-ports.yaml")
	const name = "http-ports"
	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		s, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && s.Status.ReadyReplicas > 0, fmt.Errorf("%v", err)
	}, "the proxy Deployment to have a ready pod (on a kwok node)")
	phase := func(want string) {
		t.Helper()
		framework.Eventually(t, 3*time.Minute, func() (bool, error) {
			s, err := env.Toolhive.ToolhiveV1beta1().MCPServers(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && s.Status.Phase == want, fmt.Errorf("%v %+v", err, s)
		}, "the MCPServer to be %s", want)
	}
	// A ready proxy pod without the runner's StatefulSet.
	phase(thv1.MCPServerPhasePending)

	port, command := runnerCommand(t, env, ns, name, naming.RunConfigName(name), 9090)
	runner := superviseRunner(t, command)
	sts := waitStatefulSet(t, env, ns, name)
	waitServing(t, port)
	phase(thv1.MCPServerPhaseReady)
	writes := workloadtest.WritesTotal(t, mcpserver.Name)

	if err := env.Kube.AppsV1().StatefulSets(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, time.Minute, func() (bool, error) {
		_, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	}, "the StatefulSet to be gone")
	phase(thv1.MCPServerPhasePending)
	// Two of the runner's 5 s health checks and many of hivekeeper's syncs.
	time.Sleep(12 * time.Second)
	if s, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Logf("the StatefulSet came back while the runner ran (UID %s)", s.UID)
	}

	runner.restart()
	var uid types.UID
	framework.Eventually(t, 3*time.Minute, func() (bool, error) {
		s, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		uid = s.UID
		return s.UID != sts.UID && s.Status.ReadyReplicas > 0, fmt.Errorf("UID %s, status %+v", s.UID, s.Status)
	}, "the runner, started again, to create the StatefulSet anew")
	waitServing(t, port)
	phase(thv1.MCPServerPhaseReady)
	// Nobody fights over it: through two more of the runner's health
	// checks it keeps its UID and resourceVersion.
	settled, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(12 * time.Second)
	now, err := env.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the recreated StatefulSet: %v", err)
	}
	if now.UID != uid || now.ResourceVersion != settled.ResourceVersion {
		t.Errorf("the recreated StatefulSet changed: UID %s -> %s, resourceVersion %s -> %s", uid, now.UID, settled.ResourceVersion, now.ResourceVersion)
	}
	for k, v := range workloadtest.WritesBetween(writes, workloadtest.WritesTotal(t, mcpserver.Name)) {
		// Keys are "controller resource verb outcome"; the two status
		// writes are Pending and Ready again.
		if f := strings.Fields(k); len(f) != 4 || f[1] != "mcpservers/status" {
			t.Errorf("hivekeeper wrote while the StatefulSet was deleted and recreated: %s: %v", k, v)
		}
	}
	t.Logf("the runner was started %d times", runner.starts.Load())
}

// startCluster starts an API server of the test's own with the rest of
// the control plane (framework.Options.Cluster) and hivekeeper's CRDs,
// and stops it when the test ends.
func startCluster(t *testing.T) *framework.Env {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := framework.Start(framework.Options{CRDDir: filepath.Join(root, "config", "crd"), Cluster: true})
	if err != nil {
		t.Fatalf("starting a cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	env, err := framework.NewEnv(srv)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// supervisedRunner is the runner as a pod's container: started again
// whenever it exits.
type supervisedRunner struct {
	starts  atomic.Int32
	mu      sync.Mutex
	current *exec.Cmd
}

// restart ends the running runner, as the kubelet does on a failed
// liveness probe; the supervisor starts it again.
func (r *supervisedRunner) restart() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		_ = r.current.Process.Kill()
	}
}

// superviseRunner runs the runner, and starts it again a second after it
// exits (the kubelet's first back-off is 10 s), until the test ends. Its
// output is logged when the test fails.
func superviseRunner(t *testing.T, command func() *exec.Cmd) *supervisedRunner {
	t.Helper()
	r := &supervisedRunner{}
	out := &framework.SyncBuffer{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			cmd := command()
			cmd.Stdout, cmd.Stderr = out, out
			r.mu.Lock()
			select {
			case <-stop:
				r.mu.Unlock()
				return
			default:
			}
			err := cmd.Start()
			if err == nil {
				r.current = cmd
			}
			r.mu.Unlock()
			if err != nil {
				fmt.Fprintf(out, "supervisor: starting the runner: %v\n", err)
				return
			}
			r.starts.Add(1)
			err = cmd.Wait()
			fmt.Fprintf(out, "supervisor: the runner exited (%v)\n", err)
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	})
	t.Cleanup(func() {
		r.mu.Lock()
		close(stop)
		if r.current != nil {
			_ = r.current.Process.Kill()
		}
		r.mu.Unlock()
		wg.Wait()
		if t.Failed() {
			t.Logf("thv-proxyrunner output (%d starts):\n%s", r.starts.Load(), out.String())
		}
	})
	return r
}
