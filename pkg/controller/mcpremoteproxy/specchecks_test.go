package mcpremoteproxy

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// assertRefused checks the status of a proxy whose spec failed a check:
// ConfigurationValid and Ready False with reason, phase Failed, and the
// message naming what is wrong.
func assertRefused(t *testing.T, p *thv1.MCPRemoteProxy, reason, mentions string) {
	t.Helper()
	cv := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionConfigurationValid)
	ready := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionReady)
	if cv == nil || cv.Status != metav1.ConditionFalse || cv.Reason != reason || !strings.Contains(cv.Message, mentions) || cv.ObservedGeneration != p.Generation {
		t.Errorf("ConfigurationValid = %+v, want False %s mentioning %q", cv, reason, mentions)
	}
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != reason || !strings.Contains(ready.Message, mentions) {
		t.Errorf("Ready = %+v, want False %s", ready, reason)
	}
	if p.Status.Phase != thv1.MCPRemoteProxyPhaseFailed || !strings.Contains(p.Status.Message, mentions) {
		t.Errorf("phase %q message %q, want Failed", p.Status.Phase, p.Status.Message)
	}
	// ToolHive's operator says it on AuthConfigured too.
	if ac := meta.FindStatusCondition(p.Status.Conditions, thv1.ConditionAuthConfigured); ac == nil || ac.Status != metav1.ConditionFalse || ac.Reason != thv1.ReasonAuthInvalid {
		t.Errorf("AuthConfigured = %+v, want False %s", ac, thv1.ReasonAuthInvalid)
	}
}

// A remoteUrl the gate refuses creates nothing: the one write is the
// status, with one Warning event; the next sync writes nothing and
// records nothing.
func TestRefusedRemoteURLWritesStatusOnly(t *testing.T) {
	for _, c := range []struct {
		url       string
		allow     bool
		mentions  string
		allowHint bool
	}{
		{"http://10.0.0.5:8080/mcp", false, "10.0.0.0/8", true},
		{"http://fetch.team-b.svc.cluster.local/mcp", false, "cluster.local", true},
		{"http://169.254.169.254/latest/meta-data", false, "169.254.0.0/16", false},
		{"http://169.254.169.254/latest/meta-data", true, "169.254.0.0/16", false},
		{"http://127.0.0.1:9000/mcp", true, "loopback", false},
		{"https://kubernetes.default.svc/api", true, "the Kubernetes API", false},
	} {
		t.Run(c.url, func(t *testing.T) {
			p := newProxy("remote", func(p *thv1.MCPRemoteProxy) {
				p.Spec.RemoteURL, p.Spec.AllowPrivateEndpoint = c.url, c.allow
			})
			f := newFixture(t, p)
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatalf("a refused spec is not retried: %v", err)
			}
			wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
			got := f.get("remote")
			assertRefused(t, got, thv1.ReasonRemoteURLInvalid, c.mentions)
			if hint := strings.Contains(got.Status.Message, "allowPrivateEndpoint"); hint != c.allowHint {
				t.Errorf("message %q names allowPrivateEndpoint: %t, want %t", got.Status.Message, hint, c.allowHint)
			}
			if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonRemoteURLInvalid) {
				t.Errorf("events %q, want one Warning %s", evs, thv1.ReasonRemoteURLInvalid)
			}
			f.Refresh()
			acts, err = f.sync("remote")
			if err != nil || len(acts) != 0 || len(f.Events()) != 0 {
				t.Fatalf("second sync: err %v, actions %s", err, wt.Describe(acts))
			}
		})
	}
}

// The same private endpoints are deployed once the spec allows them.
func TestAllowPrivateEndpointDeploys(t *testing.T) {
	for _, url := range []string{"http://10.0.0.5:8080/mcp", "http://fetch.team-b.svc.cluster.local/mcp", "http://[fd00::5]/mcp"} {
		t.Run(url, func(t *testing.T) {
			p := newProxy("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.RemoteURL, p.Spec.AllowPrivateEndpoint = url, true })
			f := newFixture(t, p)
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "create serviceaccounts", "create rolebindings",
				"create configmaps", "create services", "create deployments", "patch mcpremoteproxies/status")
			got := f.get("remote")
			if cv := meta.FindStatusCondition(got.Status.Conditions, thv1.ConditionConfigurationValid); cv == nil ||
				cv.Status != metav1.ConditionTrue || cv.Reason != thv1.ReasonConfigurationValid {
				t.Errorf("ConfigurationValid = %+v, want True", cv)
			}
			if rc := f.runConfig("remote"); !strings.Contains(rc, `"remote_url": "`+url+`"`) {
				t.Errorf("runconfig %s", rc)
			}
			if evs := f.Events(); len(evs) != 0 {
				t.Errorf("events %q", evs)
			}
		})
	}
}

// What a proxy already runs is left as it is when its spec becomes one
// the gate refuses, whether the URL changed or allowPrivateEndpoint was
// withdrawn: no child is written or deleted, the status says why, and
// fixing the spec converges again.
func TestRefusedSpecLeavesExistingChildrenAlone(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*thv1.MCPRemoteProxy)
	}{
		{"url-to-metadata", func(p *thv1.MCPRemoteProxy) { p.Spec.RemoteURL = "http://169.254.169.254/" }},
		{"allow-withdrawn", func(p *thv1.MCPRemoteProxy) { p.Spec.AllowPrivateEndpoint = false }},
	} {
		t.Run(c.name, func(t *testing.T) {
			const good = "http://10.1.2.3:8080/mcp"
			f := newFixture(t, newProxy("remote", func(p *thv1.MCPRemoteProxy) {
				p.Spec.RemoteURL, p.Spec.AllowPrivateEndpoint = good, true
			}))
			f.converge("remote")
			f.Events()
			before := f.deployment("remote")

			f.update("remote", func(p *thv1.MCPRemoteProxy) {
				c.edit(p)
				p.Spec.Replicas = new(int32) // also refused: no part of the spec is applied
			})
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
			assertRefused(t, f.get("remote"), thv1.ReasonRemoteURLInvalid, "spec.remoteUrl")
			after := f.deployment("remote")
			if after.ResourceVersion != before.ResourceVersion {
				t.Errorf("the running Deployment was changed: %v", after.Spec.Template.Spec.Containers[0].Args)
			}
			if rc := f.runConfig("remote"); !strings.Contains(rc, `"remote_url": "`+good+`"`) {
				t.Errorf("the RunConfig was changed: %s", rc)
			}
			if evs := f.Events(); len(evs) != 1 {
				t.Errorf("events %q, want one", evs)
			}

			f.update("remote", func(p *thv1.MCPRemoteProxy) { p.Spec.RemoteURL, p.Spec.AllowPrivateEndpoint = good, true })
			acts, err = f.sync("remote")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "patch deployments", "patch mcpremoteproxies/status")
			got := f.get("remote")
			if !meta.IsStatusConditionTrue(got.Status.Conditions, thv1.ConditionConfigurationValid) || got.Status.Phase != thv1.MCPRemoteProxyPhasePending {
				t.Errorf("status after the fix %+v", got.Status)
			}
			if r := f.deployment("remote").Spec.Replicas; r == nil || *r != 0 {
				t.Errorf("replicas %v: the fixed spec is applied whole", r)
			}
		})
	}
}

// deployment reads the proxy Deployment from the fake clientset.
func (f *fixture) deployment(name string) *appsv1.Deployment {
	f.T.Helper()
	d, err := f.Kube.AppsV1().Deployments(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return d
}

// runConfig reads the proxy's RunConfig from the fake clientset.
func (f *fixture) runConfig(name string) string {
	f.T.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(testNS).Get(context.Background(), naming.RunConfigName(name), metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return cm.Data[schema.Key]
}

// An inline Cedar policy over 8 KiB, or one that does not parse, is
// refused before anything is deployed, as ToolHive v0.63.0's operator
// refuses it (pkg/validation/cedar_validation.go): ConfigurationValid and
// Ready False with AuthzPolicySyntaxInvalid, phase Failed, one Warning
// event, the status the only write. A policy of exactly 8 KiB deploys.
func TestRemoteProxyInlineCedarChecks(t *testing.T) {
	permit := "permit(principal, action, resource);"
	pad := func(n int) string { return permit + "\n//" + strings.Repeat("x", n-len(permit)-3) }
	for _, c := range []struct {
		name, policy, mentions string
	}{
		{"too-large", pad(8193), "cedar policy at index 1 rejected: policy is too large (8193 bytes, max 8192)"},
		{"syntax", "permit(principal, action resource);", "cedar policy at index 1 has invalid syntax"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, newProxy("remote", func(p *thv1.MCPRemoteProxy) {
				p.Spec.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline, Inline: &thv1.InlineCedar{Policies: []string{permit, c.policy}}}
			}))
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatalf("a refused spec is not retried: %v", err)
			}
			wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
			assertRefused(t, f.get("remote"), thv1.ReasonAuthzPolicySyntaxInvalid, c.mentions)
			if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+thv1.ReasonAuthzPolicySyntaxInvalid) {
				t.Errorf("events %q", evs)
			}
		})
	}
	f := newFixture(t, newProxy("remote", func(p *thv1.MCPRemoteProxy) {
		p.Spec.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline, Inline: &thv1.InlineCedar{Policies: []string{pad(8192)}}}
	}))
	f.converge("remote")
	if cv := meta.FindStatusCondition(f.get("remote").Status.Conditions, thv1.ConditionConfigurationValid); cv == nil || cv.Status != metav1.ConditionTrue {
		t.Errorf("an 8 KiB policy: ConfigurationValid %+v", cv)
	}
}
