package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// documentedRights are the YAML blocks of docs/plugin.md's Permissions
// section, in order: preflight's ClusterRole, switch's, the Job that runs
// preflight in the cluster.
func documentedRights(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "plugin.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Permissions\n")
	if !ok {
		t.Fatal("docs/plugin.md has no Permissions section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(section, "```yaml\n")
		if !ok {
			break
		}
		block, after, _ := strings.Cut(rest, "```")
		blocks, section = append(blocks, block), after
	}
	if len(blocks) != 3 {
		t.Fatalf("docs/plugin.md's Permissions section has %d YAML blocks, want 3 (preflight's ClusterRole, switch's, the Job)", len(blocks))
	}
	return blocks
}

// applyYAML applies manifests as the cluster's admin.
func applyYAML(t *testing.T, tc *toolhiveCluster, manifests string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(path, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := framework.ApplyManifests(context.Background(), tc.env.Config, "", path); err != nil {
		t.Fatal(err)
	}
}

// kubeconfigBoundTo binds user to the ClusterRole role and returns a
// kubeconfig that authenticates as user, with no other right.
func kubeconfigBoundTo(t *testing.T, tc *toolhiveCluster, user, role string) string {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if _, err := tc.env.Kube.RbacV1().ClusterRoleBindings().Create(context.Background(), crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := tc.srv.WriteKubeconfigForUser(path, user); err != nil {
		t.Fatal(err)
	}
	return path
}

// documentedPreflightJob applies the documented Job with its account and
// binding, and returns what its container runs, as the plugin's
// arguments, and a kubeconfig with a token of the Job's ServiceAccount:
// the Job's run, without a kubelet.
func documentedPreflightJob(t *testing.T, tc *toolhiveCluster, manifests string) (args []string, kubeconfig string) {
	t.Helper()
	ctx := context.Background()
	applyYAML(t, tc, manifests)
	var job *batchv1.Job
	jobs, err := tc.env.Kube.BatchV1().Jobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil || len(jobs.Items) != 1 {
		t.Fatalf("the documented Job: %d Jobs, %v", len(jobs.Items), err)
	}
	job = &jobs.Items[0]
	pod := job.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.Containers[0].Command) < 2 || pod.Containers[0].Command[0] != "/kubectl-hivekeeper" {
		t.Fatalf("the documented Job runs %q", pod.Containers[0].Command)
	}
	tok, err := tc.env.Kube.CoreV1().ServiceAccounts(job.Namespace).CreateToken(ctx, pod.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of the Job's ServiceAccount %s/%s: %v", job.Namespace, pod.ServiceAccountName, err)
	}
	kubeconfig = filepath.Join(t.TempDir(), "job.kubeconfig")
	if err := tc.srv.WriteKubeconfigForToken(kubeconfig, tok.Status.Token); err != nil {
		t.Fatal(err)
	}
	return pod.Containers[0].Command[1:], kubeconfig
}

// withoutPods is the ClusterRole name's rules with every grant on pods
// taken out, as the ClusterRole name+"-without-pods".
func withoutPods(t *testing.T, tc *toolhiveCluster, name string) string {
	t.Helper()
	ctx := context.Background()
	role, err := tc.env.Kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name + "-without-pods"}}
	for _, r := range role.Rules {
		var kept []string
		for _, res := range r.Resources {
			if res != "pods" {
				kept = append(kept, res)
			}
		}
		if len(kept) > 0 {
			r.Resources = kept
			out.Rules = append(out.Rules, r)
		}
	}
	if _, err := tc.env.Kube.RbacV1().ClusterRoles().Create(ctx, out, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return out.Name
}
