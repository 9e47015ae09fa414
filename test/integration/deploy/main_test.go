// Package deploy_test checks the Helm chart deploy/charts/hivekeeper against
// a real kube-apiserver: its rendered manifests pass server-side dry-run, its
// RBAC grants exactly what pkg/rbac declares, and the controllers run as its
// ServiceAccount without a single Forbidden response.
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// HelmEnv names a helm binary to use instead of the one hack/helm.sh builds.
const HelmEnv = "HIVEKEEPER_HELM"

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// helm returns the path of the pinned helm. Under -short it never builds
// helm (a minute and a half): it skips unless helm is already there.
func helm(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(HelmEnv); p != "" {
		return p
	}
	root := repoRoot(t)
	if testing.Short() {
		cached := filepath.Join(root, "bin", "tools", "helm-"+helmVersion(t, root), "helm")
		if _, err := os.Stat(cached); err != nil {
			t.Skipf("helm not built yet (%s); run hack/helm.sh or the tests without -short", cached)
		}
		return cached
	}
	cmd := exec.Command(filepath.Join(root, "hack", "helm.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/helm.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func helmVersion(t testing.TB, root string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "hack", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "HELM_VERSION="); ok {
			return v
		}
	}
	t.Fatal("HELM_VERSION not in hack/versions.env")
	return ""
}

// render runs helm template for the chart with a release name, namespace
// and helm arguments (--set ..., --include-crds), and decodes the objects.
func render(t testing.TB, release, namespace string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	root := repoRoot(t)
	cmdArgs := append([]string{"template", release, filepath.Join(root, "deploy", "charts", "hivekeeper"), "--namespace", namespace}, args...)
	cmd := exec.Command(helm(t), cmdArgs...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(cmdArgs, " "), err, stderr.String())
	}
	file := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.ReadManifests(file)
	if err != nil {
		t.Fatalf("decoding helm template output: %v", err)
	}
	if len(objs) == 0 {
		t.Fatal("helm template rendered nothing")
	}
	return objs
}

// find returns the rendered objects of a kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// uniqueRelease returns a release name no other test uses, so cluster-scoped
// objects (ClusterRole, ClusterRoleBinding) of parallel or earlier tests on
// the same API server do not collide.
func uniqueRelease(t testing.TB) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "hk" + hex.EncodeToString(b)
}

// applier sends objects through the dynamic client, mapping kinds to
// resources with discovery.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t testing.TB, cfg *rest.Config) *applier {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (a *applier) resource(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	var mapping *meta.RESTMapping
	// A CRD created a moment ago may not be in discovery yet.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			a.mapper.Reset()
			return false, nil
		}
		mapping = m
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
	}
	return a.dyn.Resource(mapping.Resource), nil
}

// apply server-side-applies obj; with dryRun the server validates, defaults
// and admits it (schema, RBAC escalation checks, ...) but stores nothing.
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	ri, err := a.resource(ctx, obj)
	if err != nil {
		return err
	}
	opts := metav1.ApplyOptions{FieldManager: "hivekeeper-chart-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = ri.Apply(ctx, obj.GetName(), obj, opts)
	return err
}

func (a *applier) delete(ctx context.Context, obj *unstructured.Unstructured) error {
	ri, err := a.resource(ctx, obj)
	if err != nil {
		return err
	}
	return ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
}
