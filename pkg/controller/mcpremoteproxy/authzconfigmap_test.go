package mcpremoteproxy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	wt "github.com/hivekeeper/hivekeeper/pkg/workload/workloadtest"
)

// An MCPRemoteProxy authorizes from a ConfigMap's Cedar file as an
// MCPServer does; a file of another authorizer, or a missing ConfigMap,
// is a failed check of the spec in ToolHive's words (ConfigurationValid
// and AuthConfigured False), and nothing is written.
func TestAuthzFromConfigMap(t *testing.T) {
	withCM := func(p *thv1.MCPRemoteProxy) {
		p.Spec.AuthzConfig = &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap, ConfigMap: &thv1.ConfigMapAuthzRef{Name: "policies"}}
	}
	cm := func(file string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "policies", ResourceVersion: "4"},
			Data: map[string]string{"authz.json": file}}
	}
	ok := newFixture(t, newProxy("remote", withCM), cm(`{"version":"1.0","type":"cedarv1","cedar":{"policies":["permit(principal, action, resource);"]}}`))
	ok.converge("remote")
	if c := meta.FindStatusCondition(ok.get("remote").Status.Conditions, thv1.ConditionConfigurationValid); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ConfigurationValid %+v", c)
	}

	for _, tc := range []struct {
		name   string
		cm     *corev1.ConfigMap
		reason string
		msg    string
	}{
		{"httpv1", cm(`{"version":"1.0","type":"httpv1","pdp":{"http":{"url":"http://pdp"},"claim_mapping":"mpe"}}`), thv1.ReasonAuthzConfigMapInvalid,
			`authorization ConfigMap "policies" is invalid: authz ConfigMap team-a/policies is not a Cedar config: cedar config is nil`},
		{"missing", nil, thv1.ReasonAuthzConfigMapNotFound, `authorization ConfigMap "policies" not found in namespace "team-a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newProxy("remote", withCM))
			if tc.cm != nil {
				f = newFixture(t, newProxy("remote", withCM), tc.cm)
			}
			acts, err := f.sync("remote")
			if err != nil {
				t.Fatal(err)
			}
			wt.AssertActions(t, acts, "patch mcpremoteproxies/status")
			st := f.get("remote").Status
			for cond, reason := range map[string]string{thv1.ConditionConfigurationValid: tc.reason, thv1.ConditionAuthConfigured: thv1.ReasonAuthInvalid} {
				if c := meta.FindStatusCondition(st.Conditions, cond); c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || c.Message != tc.msg {
					t.Errorf("%s %+v, want %s %q", cond, c, reason, tc.msg)
				}
			}
			if c := meta.FindStatusCondition(st.Conditions, thv1.ConditionReady); st.Phase != thv1.MCPRemoteProxyPhaseFailed || st.Message != "Validation failed: "+tc.msg ||
				c == nil || c.Reason != thv1.ReasonNotReady {
				t.Errorf("phase %s, message %q, Ready %+v", st.Phase, st.Message, c)
			}
			if ev := f.Warnings(); len(ev) != 1 || ev[0] != "Warning "+tc.reason+" "+tc.msg {
				t.Errorf("warnings %q", ev)
			}
		})
	}
}
