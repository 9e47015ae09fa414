package plugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// After switch and switch --back, an MCPServer's runner has ToolHive's
// grants again: every rule of the Role ToolHive's operator wrote for it
// before the switch is allowed to its account (hivekeeper's ClusterRole,
// which the switch bound instead, grants less), and ToolHive's
// thv-proxyrunner, started as the proxy Deployment runs it with a token
// of that account, creates the server's StatefulSet.
func TestSwitchBackRestoresRunnerPermissions(t *testing.T) {
	tc := newToolhiveCluster(t)
	env := tc.env
	ctx := context.Background()
	server := &thv1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fetch"}, Spec: thv1.MCPServerSpec{
		Image: "docker.io/mcp/fetch:latest", Transport: thv1.TransportStdio, ProxyPort: 8080}}
	if _, err := env.Toolhive.ToolhiveV1beta1().MCPServers("team-a").Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := installKubelet(t, tc)
	runner := naming.ProxyRunnerName("fetch")
	var role *rbacv1.Role
	var err error
	framework.Eventually(t, 2*time.Minute, func() (bool, error) {
		role, err = env.Kube.RbacV1().Roles("team-a").Get(ctx, runner, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, err = env.Kube.RbacV1().RoleBindings("team-a").Get(ctx, runner, metav1.GetOptions{})
		return err == nil, nil
	}, "ToolHive's operator writing the runner's Role and RoleBinding")
	settle(t, env, "team-a", 3*time.Minute)
	if denied := deniedRules(t, env, "team-a", runner, role.Rules); len(denied) > 0 {
		t.Fatalf("under ToolHive, the runner's account is denied %q", denied)
	}

	// As a user with the rights docs/plugin.md gives switch, and no more.
	rights := documentedRights(t, tc.root)
	applyYAML(t, tc, rights[1])
	alice := kubeconfigBoundTo(t, tc, "alice", "hivekeeper-switch")

	if code, _, out := k.run(switchArgs("--kubeconfig", alice)...); code != 0 {
		t.Fatalf("switch exited %d:\n%s", code, out)
	}
	b, err := env.Kube.RbacV1().RoleBindings("team-a").Get(ctx, runner, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b.RoleRef.Kind != "ClusterRole" {
		t.Fatalf("under hivekeeper, the runner's binding binds %s %s, not hivekeeper's ClusterRole", b.RoleRef.Kind, b.RoleRef.Name)
	}
	t.Logf("under hivekeeper, the runner's account is denied %q of ToolHive's grants", deniedRules(t, env, "team-a", runner, role.Rules))

	code, r, out := k.run(switchArgs("--kubeconfig", alice, "--back")...)
	if code != 0 {
		t.Fatalf("switch --back exited %d:\n%s", code, out)
	}
	logReport(t, r)
	// -o json streamed each step as it happened: a started event for each
	// wait, saying what for and how long at most, and a finished one per
	// step of the report, in order.
	_, events, err := toolhive.ReadSwitchOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	var finished []string
	started := 0
	for _, e := range events {
		switch e.Event {
		case "started":
			started++
			if e.WaitsFor == "" || e.Limit != "3m0s" || e.Elapsed == "" {
				t.Errorf("a started event without what it waits for, its limit or the time: %+v", e)
			}
		case "finished":
			finished = append(finished, e.Step)
		}
	}
	if started < 4 || !slices.Equal(finished, r.Steps) {
		t.Errorf("switch --back -o json streamed %d started events and finished %q; its steps are %q", started, finished, r.Steps)
	}
	if denied := deniedRules(t, env, "team-a", runner, role.Rules); len(denied) > 0 {
		t.Errorf("after switch --back, the runner's account is denied %q of what ToolHive's Role granted it", denied)
	}
	if b, err := env.Kube.RbacV1().RoleBindings("team-a").Get(ctx, runner, metav1.GetOptions{}); err != nil || b.RoleRef.Kind != "Role" || b.RoleRef.Name != runner {
		t.Errorf("after switch --back, the runner's binding: %+v, %v", b, err)
	}

	// ToolHive's runner, as its Deployment runs it, with its account.
	dep, err := env.Kube.AppsV1().Deployments("team-a").Get(ctx, "fetch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startRunnerAs(t, tc, dep.Namespace, "fetch", dep.Spec.Template, 8080)
	framework.Eventually(t, 90*time.Second, func() (bool, error) {
		_, err := env.Kube.AppsV1().StatefulSets("team-a").Get(ctx, "fetch", metav1.GetOptions{})
		return err == nil, nil
	}, "ToolHive's runner, with its own account after switch --back, creating the MCP server's StatefulSet")
}

// deniedRules are the verbs of rules that the ServiceAccount ns/account
// may not use in ns, as SubjectAccessReviews answer.
func deniedRules(t *testing.T, env *framework.Env, ns, account string, rules []rbacv1.PolicyRule) []string {
	t.Helper()
	var denied []string
	for _, r := range rules {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range r.Verbs {
					sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
						User:               "system:serviceaccount:" + ns + ":" + account,
						Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
						ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub}}}
					got, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if !got.Status.Allowed {
						denied = append(denied, verb+" "+res)
					}
				}
			}
		}
	}
	return denied
}

// startRunnerAs starts ToolHive's thv-proxyrunner as the proxy pod of tmpl
// (the MCPServer name's) runs it: the container's args and plain env, the RunConfig ConfigMap as
// ./runconfig.json (the runner's fallback when /etc/runconfig is absent)
// with its port moved to a free loopback one, and a kubeconfig holding a
// token of the pod's ServiceAccount, as a pod would authenticate.
func startRunnerAs(t *testing.T, tc *toolhiveCluster, ns, name string, tmpl corev1.PodTemplateSpec, proxyPort int) {
	t.Helper()
	ctx := context.Background()
	c := tmpl.Spec.Containers[0]
	cm, err := tc.env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, naming.RunConfigName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the RunConfig of %s: %v", name, err)
	}
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	rc := strings.Replace(cm.Data[schema.Key], fmt.Sprintf(`"port": %d,`, proxyPort), fmt.Sprintf(`"port": %d,`, port), 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, schema.Key), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := tc.env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, tmpl.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of ServiceAccount %s/%s: %v", ns, tmpl.Spec.ServiceAccountName, err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := tc.srv.WriteKubeconfigForToken(kubeconfig, tok.Status.Token); err != nil {
		t.Fatal(err)
	}
	environ := []string{"PATH=" + os.Getenv("PATH"), "KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + ns, "HOME=" + dir}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			environ = append(environ, e.Name+"="+e.Value)
		}
	}
	cmd := exec.Command(filepath.Join(tc.bins, "thv-proxyrunner"), c.Args...)
	cmd.Dir, cmd.Env = dir, environ
	out := &framework.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("thv-proxyrunner output:\n%s", out.String())
		}
	})
}
