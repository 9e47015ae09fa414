package vmcp

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The release written decides whether a vMCP whose authorization server
// has a TLS listener exposes it as the https-auth port, and whether its
// container is told the operator's usage-metrics opt-out.
func TestVMCPFollowsTheRelease(t *testing.T) {
	for _, c := range []struct {
		r     release.Release
		ports int
		skip  bool
	}{
		{release.Releases[0], 1, false},
		{release.Newest(), 2, true},
	} {
		v := newVMCP("agg", withAuthServer(parityAuthServerJSON))
		d, err := Build(v, Input{Image: testImage, OIDC: newOIDCConfig("auth", "idp-ca"), Release: c.r,
			UsageMetrics: wiring.UsageMetrics{SkipUpdateCheck: true}})
		if err != nil {
			t.Fatal(err)
		}
		ctr := d.Deployment.Spec.Template.Spec.Containers[0]
		if len(ctr.Ports) != c.ports || len(d.Service.Spec.Ports) != c.ports || ctr.Ports[c.ports-1].ContainerPort != map[int]int32{1: 4483, 2: 8443}[c.ports] {
			t.Errorf("%s: container ports %v, Service ports %v", c.r.Version, ctr.Ports, d.Service.Spec.Ports)
		}
		skip := slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == wiring.EnvSkipUpdateCheck && e.Value == "true" })
		if skip != c.skip {
			t.Errorf("%s: TOOLHIVE_SKIP_UPDATE_CHECK=true set %t, want %t", c.r.Version, skip, c.skip)
		}
	}
}
