// Command apiserver runs the integration-test etcd and kube-apiserver (with
// --cluster, also kube-controller-manager, kube-scheduler and kwok) as a
// standalone local cluster: hack/local-up.sh (`make run`) and benchmark
// harnesses use it to get exactly the server the tests use.
//
// It installs the CRDs, applies manifests, writes an admin kubeconfig to
// --kubeconfig-out (written last and atomically, so its appearance means
// "ready"), then runs until SIGINT or SIGTERM, or until its parent process
// dies, and stops both servers and removes their folder on the way out.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func main() {
	if err := run(); err != nil {
		klog.ErrorS(err, "Local API server failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}

func run() error {
	var (
		binaries      = flag.String("binaries", "", "Folder with kube-apiserver and etcd; empty means $"+framework.BinariesEnv+" or hack/test-binaries.sh's cache.")
		dir           = flag.String("dir", "", "Parent folder of the servers' temporary folder; empty means the system temp folder.")
		crds          = flag.String("crds", "", "Folder of CRD manifests to install; empty means <repo>/config/crd, \"none\" installs nothing.")
		apply         = flag.String("apply", "", "Comma-separated manifest files or folders to apply after the CRDs.")
		namespace     = flag.String("namespace", "default", "Namespace for applied namespaced objects that name none.")
		kubeconfigOut = flag.String("kubeconfig-out", "", "Where to write the admin kubeconfig once everything is applied.")
		cluster       = flag.Bool("cluster", false, "Also run kube-controller-manager, kube-scheduler and kwok's fake nodes, so Deployments get pods that become Ready.")
	)
	klog.InitFlags(nil)
	flag.Parse()
	logger := klog.Background().WithName("local-apiserver")

	crdDir := *crds
	switch crdDir {
	case "none":
		crdDir = ""
	case "":
		root, err := framework.RepoRoot()
		if err != nil {
			return fmt.Errorf("locating config/crd: %w (pass --crds)", err)
		}
		crdDir = filepath.Join(root, "config", "crd")
	}

	// Signals are watched before the slow start, so a Ctrl-C during it
	// still cleans up.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	began := time.Now()
	srv, err := framework.Start(framework.Options{BinDir: *binaries, TempDir: *dir, CRDDir: crdDir, Cluster: *cluster})
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			logger.Error(err, "Stopping")
		}
		logger.Info("Stopped; folder removed", "dir", srv.Dir)
	}()
	logger.Info("API server ready", "url", srv.URL, "took", time.Since(began).Round(time.Millisecond), "etcdPID", srv.EtcdPID(), "apiserverPID", srv.APIServerPID())

	if *apply != "" {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		objs, err := framework.ApplyManifests(actx, srv.Config, *namespace, strings.Split(*apply, ",")...)
		cancel()
		if err != nil {
			return err
		}
		for _, o := range objs {
			logger.Info("Applied", "kind", o.GetKind(), "object", klog.KObj(o))
		}
	}

	if *kubeconfigOut != "" {
		b, err := os.ReadFile(srv.Kubeconfig)
		if err != nil {
			return err
		}
		tmp := *kubeconfigOut + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, *kubeconfigOut); err != nil {
			return err
		}
	}

	// A parent killed with SIGKILL sends no signal; the kernel only
	// re-parents us. Pdeathsig covers etcd and kube-apiserver, this covers
	// the folder.
	parent := os.Getppid()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			logger.Info("Shutting down")
			return nil
		case <-tick.C:
			if os.Getppid() != parent {
				logger.Info("Parent process gone; shutting down")
				return nil
			}
		}
	}
}
