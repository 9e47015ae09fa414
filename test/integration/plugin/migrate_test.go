package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestMigrateStorage: objects stored as v1alpha1 (as a cluster that ran an
// older ToolHive has them) are rewritten as v1beta1 — read in etcd — and
// the CRD's storedVersions trimmed to v1beta1; an object already stored as
// v1beta1 is not written at all; --dry-run changes nothing; a second run
// has nothing to do.
func TestMigrateStorage(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crds := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	const name, resource = "mcptoolconfigs.toolhive.stacklok.dev", "mcptoolconfigs"
	setStorage := func(ctx context.Context, version string) {
		t.Helper()
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
		if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(obj string) string {
		t.Helper()
		v, err := env.Server.StoredAPIVersion(thv1.GroupName, resource, ns, obj)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	configs := env.Toolhive.ToolhiveV1beta1().MCPToolConfigs(ns)
	create := func(obj string) {
		t.Helper()
		if _, err := configs.Create(ctx, &thv1.MCPToolConfig{ObjectMeta: metav1.ObjectMeta{Name: obj},
			Spec: thv1.MCPToolConfigSpec{ToolsFilter: []string{"fetch"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setStorage(ctx, "v1alpha1")
	t.Cleanup(func() { setStorage(context.Background(), "v1beta1") })
	// The API server takes a moment to store at a new version.
	attempt := 0
	framework.Eventually(t, 20*time.Second, func() (bool, error) {
		attempt++
		obj := fmt.Sprintf("old-%d", attempt)
		create(obj)
		if v := stored(obj); v != thv1.GroupName+"/v1alpha1" {
			return false, fmt.Errorf("stored as %s", v)
		}
		return true, nil
	}, "an object stored as v1alpha1")
	old := fmt.Sprintf("old-%d", attempt)
	setStorage(ctx, "v1beta1")
	framework.Eventually(t, 20*time.Second, func() (bool, error) {
		obj := fmt.Sprintf("new-%d", time.Now().UnixNano())
		create(obj)
		v := stored(obj)
		return v == thv1.GroupName+"/v1beta1", fmt.Errorf("stored as %s", v)
	}, "the storage version back at v1beta1")
	crd, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(crd.Status.StoredVersions, ","); got != "v1alpha1,v1beta1" && got != "v1beta1,v1alpha1" {
		t.Fatalf("storedVersions %v, want both", crd.Status.StoredVersions)
	}
	list, err := configs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What each object is stored as before, from etcd (probes created
	// while the API server still stored as v1alpha1 are old ones too).
	versions, storedBefore := map[string]string{}, map[string]string{}
	for _, c := range list.Items {
		versions[c.Name], storedBefore[c.Name] = c.ResourceVersion, stored(c.Name)
	}

	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		cmd := exec.Command(plugin(t), append([]string{"migrate-storage", "--kubeconfig", env.Kubeconfig}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("migrate-storage %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	if out := run("--dry-run"); !strings.Contains(out, name+": stored as") || stored(old) != thv1.GroupName+"/v1alpha1" {
		t.Fatalf("--dry-run: %q, %s stored as %s", out, old, stored(old))
	}
	out := run()
	if !strings.Contains(out, name+":") || !strings.Contains(out, "-> [v1beta1]") {
		t.Errorf("report %q", out)
	}
	list, err = configs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// etcd says whether each object was rewritten; an object already at
	// v1beta1 must not have been written (its resourceVersion: a list may
	// lag a write, never show one that did not happen).
	for _, c := range list.Items {
		if v := stored(c.Name); v != thv1.GroupName+"/v1beta1" {
			t.Errorf("%s stored as %s after the migration", c.Name, v)
		}
		if storedBefore[c.Name] == thv1.GroupName+"/v1beta1" && c.ResourceVersion != versions[c.Name] {
			t.Errorf("%s, already stored as v1beta1, was written (resourceVersion %s -> %s)", c.Name, versions[c.Name], c.ResourceVersion)
		}
	}
	crd, err = crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(crd.Status.StoredVersions) != 1 || crd.Status.StoredVersions[0] != "v1beta1" {
		t.Errorf("storedVersions %v, want [v1beta1]", crd.Status.StoredVersions)
	}
	if out := run(); strings.Contains(out, name) {
		t.Errorf("a second run did something: %q", out)
	}
}
