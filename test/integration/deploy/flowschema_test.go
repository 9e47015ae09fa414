package deploy_test

import (
	"context"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// The chart's FlowSchema names the chart's ServiceAccount and puts it in
// workload-high, ahead of the built-in service-accounts schema (9000);
// flowSchema.create=false renders none.
func TestChartFlowSchema(t *testing.T) {
	objs := render(t, "hk", "team-ops")
	schemas := find(objs, "FlowSchema")
	if len(schemas) != 1 {
		t.Fatalf("%d FlowSchemas rendered, want 1", len(schemas))
	}
	fs := decode[flowcontrolv1.FlowSchema](t, schemas[0]).Spec
	if fs.PriorityLevelConfiguration.Name != "workload-high" {
		t.Errorf("priority level %q, want workload-high", fs.PriorityLevelConfiguration.Name)
	}
	if p := fs.MatchingPrecedence; p <= 900 || p >= 9000 {
		t.Errorf("matchingPrecedence %d: must come after kube-system's service accounts (900) and before service-accounts (9000)", p)
	}
	sa := find(objs, "ServiceAccount")[0]
	want := flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: sa.GetName(), Namespace: "team-ops"}}
	if len(fs.Rules) != 1 || len(fs.Rules[0].Subjects) != 1 || !equality.Semantic.DeepEqual(fs.Rules[0].Subjects[0], want) {
		t.Errorf("rules %+v, want one whose only subject is the chart's ServiceAccount team-ops/%s", fs.Rules, sa.GetName())
	}
	if n := len(find(render(t, "hk", "team-ops", "--set", "flowSchema.create=false"), "FlowSchema")); n != 0 {
		t.Errorf("flowSchema.create=false renders %d FlowSchemas", n)
	}
}

// On a real API server, API Priority and Fairness classifies the chart's
// ServiceAccount into workload-high by the chart's FlowSchema, and into
// workload-low (every ServiceAccount's level) without it.
func TestFlowSchemaClassifiesTheController(t *testing.T) {
	env := framework.Get(t)
	for _, tc := range []struct {
		args      []string
		wantLevel string
	}{
		{wantLevel: "workload-high"},
		{args: []string{"--set", "flowSchema.create=false"}, wantLevel: "workload-low"},
	} {
		t.Run(tc.wantLevel, func(t *testing.T) {
			release, watched := env.Namespace(t), env.Namespace(t)
			in := install(t, env, release, watched, tc.args...)
			cfg := env.ConfigForUser(in.user, in.groups...)
			// APF reads FlowSchemas from an informer: wait for it to
			// classify by the new one.
			framework.Eventually(t, 10*time.Second, func() (bool, error) {
				_, level, err := framework.Classify(context.Background(), env.Kube, cfg, watched)
				return level == tc.wantLevel, err
			}, "the controller's requests classified into "+tc.wantLevel)
		})
	}
}
