package proxy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

func portNames[T corev1.ContainerPort | corev1.ServicePort](ports []T) []string {
	var out []string
	for _, p := range ports {
		switch p := any(p).(type) {
		case corev1.ContainerPort:
			out = append(out, p.Name)
		case corev1.ServicePort:
			out = append(out, p.Name)
		}
	}
	return out
}

func envValue(env []corev1.EnvVar, name string) (string, bool) {
	i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		return "", false
	}
	return env[i].Value, true
}

// The release written decides, for an MCPServer and an MCPRemoteProxy
// whose embedded authorization server has a TLS listener, whether the
// proxy's container and Service get the https-auth port, and whether its
// container gets the installation's usage-metrics id.
func TestProxiesFollowTheRelease(t *testing.T) {
	refs := toolhivetest.RefsFor(testNS, "kubernetesServiceAccount")
	usage := wiring.UsageMetrics{AnonymousID: "id-1"}
	for _, c := range []struct {
		r     release.Release
		ports []string
		id    bool
	}{
		{release.Releases[0], []string{"http"}, false},
		{release.Newest(), []string{"http", "https-auth"}, true},
	} {
		in := Input{OIDC: refs.OIDC, AuthServer: refs.AuthServer, RunnerImage: "runner:test", Release: c.r, UsageMetrics: usage}
		s := newServer("srv", func(s *thv1.MCPServer) { s.Spec.OIDCConfigRef, s.Spec.AuthServerRef = refs.OIDCRef, refs.AuthServerRef })
		d, err := BuildMCPServer(s, in)
		if err != nil {
			t.Fatal(err)
		}
		p := newProxy("rp", func(p *thv1.MCPRemoteProxy) {
			p.Spec.OIDCConfigRef, p.Spec.AuthServerRef = refs.OIDCRef, refs.AuthServerRef
		})
		rp, err := BuildRemoteProxy(p, in)
		if err != nil {
			t.Fatal(err)
		}
		for kind, o := range map[string]*Output{"MCPServer": d, "MCPRemoteProxy": rp} {
			ctr := o.Deployment.Spec.Template.Spec.Containers[0]
			if got := portNames(ctr.Ports); !slices.Equal(got, c.ports) {
				t.Errorf("%s %s: container ports %v, want %v", c.r.Version, kind, got, c.ports)
			}
			if got := portNames(o.Service.Spec.Ports); !slices.Equal(got, c.ports) {
				t.Errorf("%s %s: Service ports %v, want %v", c.r.Version, kind, got, c.ports)
			}
			if v, ok := envValue(ctr.Env, wiring.EnvAnonymousID); ok != c.id || (ok && v != "id-1") {
				t.Errorf("%s %s: %s=%q (set %t), want set %t", c.r.Version, kind, wiring.EnvAnonymousID, v, ok, c.id)
			}
		}
	}
}
