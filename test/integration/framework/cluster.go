package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The rest of the control plane, run beside etcd and kube-apiserver when
// Options.Cluster is set. It is what turns hivekeeper's children into a
// running workload: kube-controller-manager (Deployments roll ReplicaSets
// and pods, Deployment status, garbage collection through owner
// references, namespace deletion, "default" ServiceAccounts),
// kube-scheduler (pods are bound to nodes) and kwok (fake nodes that stay
// Ready, whose pods are reported Running and Ready, and whose deleted pods
// go at once, since no kubelet would confirm it).

// clusterBinaries are the programs Options.Cluster needs beside etcd and
// kube-apiserver, all in the folder hack/test-binaries.sh prints.
var clusterBinaries = []string{"kube-controller-manager", "kube-scheduler", "kwok"}

// kwokStages names the file of node and pod lifecycles kwok runs, taken
// from kwok's module by hack/test-binaries.sh.
const kwokStages = "kwok-stages.yaml"

const (
	// ClusterNodes is how many fake nodes a cluster has; pods spread over
	// them as over a small real cluster's.
	ClusterNodes = 3
	// kwokNodeAnnotation marks the nodes kwok manages.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// controlPlaneQPS is the client rate of kube-controller-manager and
	// kube-scheduler. Their defaults (20 and 50 requests a second) would
	// make them, not the machine, the limit of how fast thousands of pods
	// become Ready; the test's own clients are unthrottled too.
	controlPlaneQPS = 500
)

// startCluster starts kube-controller-manager, kube-scheduler and kwok
// against the running API server, creates the fake nodes and waits until
// the two components answer /healthz and every node is Ready.
func (s *Server) startCluster(ctx context.Context, binDir string) error {
	ports, err := FreePorts(3)
	if err != nil {
		return err
	}
	kcmPort, schedulerPort, kwokPort := ports[0], ports[1], ports[2]
	path := func(name string) string { return filepath.Join(s.Dir, name) }
	// Both serve /healthz on loopback with a self-signed certificate they
	// make in memory; the admin kubeconfig authenticates and authorizes the
	// requests they delegate to the API server.
	serving := func(port int) []string {
		return []string{
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--authentication-kubeconfig=" + s.Kubeconfig,
			"--authorization-kubeconfig=" + s.Kubeconfig,
			"--leader-elect=false",
			fmt.Sprintf("--kube-api-qps=%d", controlPlaneQPS),
			fmt.Sprintf("--kube-api-burst=%d", 2*controlPlaneQPS),
		}
	}
	s.controllerManager = &process{
		name:    "kube-controller-manager",
		path:    filepath.Join(binDir, "kube-controller-manager"),
		logPath: path("kube-controller-manager.log"),
		args: append([]string{
			"--kubeconfig=" + s.Kubeconfig,
			// Every controller acts as the admin: the per-controller
			// ServiceAccounts would need tokens signed for each.
			"--use-service-account-credentials=false",
			// Published in every namespace as kube-root-ca.crt.
			"--root-ca-file=" + path("ca.crt"),
			"--service-account-private-key-file=" + path("sa.key"),
			"--cluster-name=hivekeeper",
		}, serving(kcmPort)...),
	}
	s.scheduler = &process{
		name:    "kube-scheduler",
		path:    filepath.Join(binDir, "kube-scheduler"),
		logPath: path("kube-scheduler.log"),
		args:    append([]string{"--kubeconfig=" + s.Kubeconfig}, serving(schedulerPort)...),
	}
	s.kwok = &process{
		name:    "kwok",
		path:    filepath.Join(binDir, "kwok"),
		logPath: path("kwok.log"),
		args: []string{
			"--kubeconfig=" + s.Kubeconfig,
			"--config=" + filepath.Join(binDir, kwokStages),
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			// kwok's stand-in for the kubelet API listens on loopback, and
			// the nodes say so, so nothing is ever sent elsewhere.
			fmt.Sprintf("--server-address=127.0.0.1:%d", kwokPort),
			"--node-ip=127.0.0.1",
			fmt.Sprintf("--node-port=%d", kwokPort),
			"--node-lease-duration-seconds=40",
		},
	}
	for _, p := range []*process{s.controllerManager, s.scheduler, s.kwok} {
		if err := p.start(); err != nil {
			return err
		}
	}
	kube, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		return err
	}
	for i := range ClusterNodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"},
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
		}}
		if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return s.waitCluster(ctx, kube, kcmPort, schedulerPort)
}

// waitCluster waits until kube-controller-manager and kube-scheduler answer
// /healthz and kwok reports every node Ready, failing early when one of the
// processes exits.
func (s *Server) waitCluster(ctx context.Context, kube kubernetes.Interface, kcmPort, schedulerPort int) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		// Their certificates are self-signed in memory; nothing is sent
		// but a health check to a loopback port we chose.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	defer client.CloseIdleConnections()
	healthy := func(port int) bool {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	nodesReady := func() (int, error) {
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready, nil
	}
	deadline := time.After(s.timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		ready, err := nodesReady()
		kcm, sched := healthy(kcmPort), healthy(schedulerPort)
		if err == nil && ready == ClusterNodes && kcm && sched {
			return nil
		}
		last = fmt.Sprintf("kube-controller-manager healthy %v, kube-scheduler healthy %v, %d of %d nodes Ready (%v)", kcm, sched, ready, ClusterNodes, err)
		select {
		case <-s.controllerManager.exited():
			return s.clusterError(s.controllerManager.exitError())
		case <-s.scheduler.exited():
			return s.clusterError(s.scheduler.exitError())
		case <-s.kwok.exited():
			return s.clusterError(s.kwok.exitError())
		case <-deadline:
			return s.clusterError(fmt.Errorf("cluster not ready after %v: %s", s.timeout, last))
		case <-tick.C:
		}
	}
}

// clusterError attaches the three logs' tails to why the cluster did not
// come up.
func (s *Server) clusterError(cause error) error {
	return fmt.Errorf("%w\n--- kube-controller-manager log (tail) ---\n%s\n--- kube-scheduler log (tail) ---\n%s\n--- kwok log (tail) ---\n%s",
		cause, s.controllerManager.tail(20), s.scheduler.tail(20), s.kwok.tail(20))
}

// stopCluster stops kwok, the scheduler and the controller manager (the
// processes never started are skipped).
func (s *Server) stopCluster() {
	for _, p := range []*process{s.kwok, s.scheduler, s.controllerManager} {
		if p != nil {
			p.stop(stopGrace)
		}
	}
}
