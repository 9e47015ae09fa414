package conformance_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// toolhiveOperator is ToolHive's own operator (thv-operator at the pinned
// release) running as a plain process against an API server of its own
// that serves ToolHive's CRDs, read from the module cache.
type toolhiveOperator struct {
	env *framework.Env
	*toolhive.Operator
}

// startToolHiveServer starts a second etcd and kube-apiserver with
// ToolHive's CRDs and the given namespaces, for ToolHive's operator, and
// stops it when the test ends. start runs the operator on it.
func startToolHiveServer(t *testing.T, namespaces []string) *toolhiveOperator {
	t.Helper()
	began := time.Now()
	srv, err := framework.Start(framework.Options{CRDDir: toolhive.CRDDir(toolhiveModule)})
	if err != nil {
		t.Fatalf("starting the API server for ToolHive's operator: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping ToolHive's API server: %v", err)
		}
	})
	env, err := framework.NewEnv(srv)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range append([]string{toolhiveNamespace}, namespaces...) {
		if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s on ToolHive's server: %v", ns, err)
		}
	}
	if err := toolhive.SeedInstanceID(context.Background(), env.Kube); err != nil {
		t.Fatalf("storing the installation's id on ToolHive's server: %v", err)
	}
	t.Logf("ToolHive's API server %s ready with ToolHive's CRDs in %v", srv.URL, time.Since(began).Round(time.Millisecond))
	return &toolhiveOperator{env: env}
}

// startBeside makes a namespace on hivekeeper's server for each key and
// starts ToolHive's operator on a server of its own where the same
// namespaces exist, so one manifest can go to both under the same names.
// It returns the operator and the namespaces by key.
func startBeside(t *testing.T, env *framework.Env, keys []string) (*toolhiveOperator, map[string]string) {
	t.Helper()
	namespaces := map[string]string{}
	var list []string
	for _, k := range keys {
		ns := env.Namespace(t)
		namespaces[k] = ns
		list = append(list, ns)
	}
	thv := startToolHiveServer(t, list)
	thv.start(t)
	return thv, namespaces
}

// toolhiveNamespace is ToolHive's operator's own namespace.
const toolhiveNamespace = toolhive.OperatorNamespace

// start runs ToolHive's operator against the server with its chart's
// environment (toolhive.StartOperator); it is stopped when the test ends.
func (o *toolhiveOperator) start(t *testing.T) {
	t.Helper()
	began := time.Now()
	o.Operator = toolhive.StartOperator(t, toolhive.OperatorOptions{
		Binaries: toolhiveBin, Module: toolhiveModule, Kubeconfig: o.env.Server.Kubeconfig, Namespace: toolhiveNamespace, Dir: t.TempDir(),
	})
	t.Logf("ToolHive's operator ready in %v", time.Since(began).Round(time.Millisecond))
}
