package proxy

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The operator-wide settings ToolHive's operator takes from its
// environment reach every child it puts them on: the default pull secrets
// (TOOLHIVE_DEFAULT_IMAGE_PULL_SECRETS) follow the workload's own on the
// proxy pods and every account written, and the proxy host
// (TOOLHIVE_PROXY_HOST) is the RunConfig's host. Without them the output
// is ToolHive's chart defaults.
func TestOperatorWideSettings(t *testing.T) {
	defaults := wiring.PullSecretRefs([]string{"org-pull", "regcred"})
	own := func(ro **thv1.ResourceOverrides) {
		*ro = &thv1.ResourceOverrides{ProxyDeployment: &thv1.ProxyDeploymentOverrides{ImagePullSecrets: wiring.PullSecretRefs([]string{"regcred", "own"})}}
	}
	server := newServer("s", func(s *thv1.MCPServer) { own(&s.Spec.ResourceOverrides) })
	remote := newProxy("r", func(p *thv1.MCPRemoteProxy) { own(&p.Spec.ResourceOverrides) })
	build := func(in Input) []*Output {
		a, err := BuildMCPServer(server, in)
		if err != nil {
			t.Fatal(err)
		}
		b, err := BuildRemoteProxy(remote, in)
		if err != nil {
			t.Fatal(err)
		}
		return []*Output{a, b}
	}
	check := func(in Input, wantSecrets, wantHost string) {
		t.Helper()
		for _, d := range build(in) {
			lists := map[string][]corev1.LocalObjectReference{
				"pod":            d.Deployment.Spec.Template.Spec.ImagePullSecrets,
				"runner account": d.RunnerServiceAccount.ImagePullSecrets,
			}
			if d.BackendServiceAccount != nil {
				lists["backend account"] = d.BackendServiceAccount.ImagePullSecrets
			}
			for where, got := range lists {
				if fmt.Sprint(got) != wantSecrets {
					t.Errorf("%s %s pull secrets %v, want %s", d.Deployment.Name, where, got, wantSecrets)
				}
			}
			if host := `"host": "` + wantHost + `"`; !strings.Contains(d.RunConfig.Data[schema.Key], host) {
				t.Errorf("%s RunConfig has no %s:\n%s", d.Deployment.Name, host, d.RunConfig.Data[schema.Key])
			}
		}
	}
	check(Input{RunnerImage: "runner"}, "[{regcred} {own}]", "0.0.0.0")
	check(Input{RunnerImage: "runner", PullSecrets: defaults, ProxyHost: "127.0.0.1"}, "[{regcred} {own} {org-pull}]", "127.0.0.1")
}
