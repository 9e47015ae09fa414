package workloadtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
)

// RefusedPodTemplate is a podTemplateSpec every kind with one must refuse,
// and the field its refusal names.
type RefusedPodTemplate struct {
	Name, Template, Field string
}

// RefusedPodTemplates reach the node each in its own way, in each
// container list.
var RefusedPodTemplates = []RefusedPodTemplate{
	{"privileged", `{"spec":{"containers":[{"name":"extra","image":"busybox","securityContext":{"privileged":true}}]}}`,
		"spec.podTemplateSpec.spec.containers[0].securityContext.privileged"},
	{"capabilities", `{"spec":{"initContainers":[{"name":"init","image":"busybox","securityContext":{"capabilities":{"add":["SYS_ADMIN"]}}}]}}`,
		"spec.podTemplateSpec.spec.initContainers[0].securityContext.capabilities.add"},
	{"ephemeral", `{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox","securityContext":{"privileged":true}}]}}`,
		"spec.podTemplateSpec.spec.ephemeralContainers[0].securityContext.privileged"},
	{"hostPID", `{"spec":{"hostPID":true}}`, "spec.podTemplateSpec.spec.hostPID"},
	{"hostPath", `{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}`, "spec.podTemplateSpec.spec.volumes[0].hostPath"},
}

// AssertRefusedPod checks one sync of a workload whose spec would give its
// pod what hivekeeper refuses (access to the node, another workload's
// account): only its status was written, no child, with condition False
// for reason and a message naming field ("" for a kind without that
// condition), and one Warning event of reason naming field.
func (f *Fixture) AssertRefusedPod(t *testing.T, acts []core.Action, statusResource string, conditions []metav1.Condition, condition, reason, field string) {
	t.Helper()
	AssertActions(t, acts, "patch "+statusResource+"/status")
	if condition != "" {
		c := meta.FindStatusCondition(conditions, condition)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || !strings.HasPrefix(c.Message, field+": ") {
			t.Errorf("%s condition %+v, want False for %s naming %s", condition, c, reason, field)
		}
	}
	if evs := f.Events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+reason+" "+field+": ") {
		t.Errorf("events %q, want one Warning %s naming %s", evs, reason, field)
	}
}
