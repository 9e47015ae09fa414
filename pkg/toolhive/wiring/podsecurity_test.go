package wiring

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
)

// Every way a template can reach the node is refused, naming the field as
// the user wrote it, in every container list; what the restricted profile
// allows passes.
func TestCheckPodSecurity(t *testing.T) {
	for _, tc := range []struct {
		template string
		field    string // "" when allowed
	}{
		{`{}`, ""},
		{`{"spec":{"containers":[{"name":"mcp","securityContext":{"privileged":false,"capabilities":{"drop":["ALL"]},"runAsNonRoot":true}}],"hostNetwork":false,
			"volumes":[{"name":"c","configMap":{"name":"x"}},{"name":"e","emptyDir":{}}],"securityContext":{"windowsOptions":{"hostProcess":false}}}}`, ""},
		{`{"spec":{"containers":[{"name":"a"},{"name":"b","securityContext":{"privileged":true}}]}}`, "spec.podTemplateSpec.spec.containers[1].securityContext.privileged"},
		{`{"spec":{"initContainers":[{"name":"i","securityContext":{"privileged":true}}]}}`, "spec.podTemplateSpec.spec.initContainers[0].securityContext.privileged"},
		{`{"spec":{"ephemeralContainers":[{"name":"e","securityContext":{"privileged":true}}]}}`, "spec.podTemplateSpec.spec.ephemeralContainers[0].securityContext.privileged"},
		{`{"spec":{"containers":[{"name":"a","securityContext":{"capabilities":{"add":["NET_ADMIN"]}}}]}}`, "spec.podTemplateSpec.spec.containers[0].securityContext.capabilities.add"},
		{`{"spec":{"ephemeralContainers":[{"name":"e","securityContext":{"capabilities":{"add":["SYS_PTRACE"]}}}]}}`, "spec.podTemplateSpec.spec.ephemeralContainers[0].securityContext.capabilities.add"},
		{`{"spec":{"initContainers":[{"name":"i","securityContext":{"windowsOptions":{"hostProcess":true}}}]}}`, "spec.podTemplateSpec.spec.initContainers[0].securityContext.windowsOptions.hostProcess"},
		{`{"spec":{"securityContext":{"windowsOptions":{"hostProcess":true}}}}`, "spec.podTemplateSpec.spec.securityContext.windowsOptions.hostProcess"},
		{`{"spec":{"hostNetwork":true}}`, "spec.podTemplateSpec.spec.hostNetwork"},
		{`{"spec":{"hostPID":true}}`, "spec.podTemplateSpec.spec.hostPID"},
		{`{"spec":{"hostIPC":true}}`, "spec.podTemplateSpec.spec.hostIPC"},
		{`{"spec":{"volumes":[{"name":"c","configMap":{"name":"x"}},{"name":"h","hostPath":{"path":"/"}}]}}`, "spec.podTemplateSpec.spec.volumes[1].hostPath"},
		// JSON field names are matched as Go decodes them, whatever their
		// case: the pod hivekeeper writes would have the field.
		{`{"spec":{"HostNetwork":true}}`, "spec.podTemplateSpec.spec.hostNetwork"},
	} {
		tpl, err := DecodePodTemplate(&runtime.RawExtension{Raw: []byte(tc.template)})
		if err != nil {
			t.Fatal(err)
		}
		err = CheckPodSecurity(PodTemplateField, &tpl.Spec)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.template, err)
			}
			continue
		}
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionPodTemplateValid || invalid.Reason != thv1.ReasonPodSecurityNotAllowed ||
			!strings.HasPrefix(invalid.Message, tc.field+": ") {
			t.Errorf("%s: %v, want a refusal of %s", tc.template, err, tc.field)
		}
	}
	if err := CheckPodSecurity(PodTemplateField, nil); err != nil {
		t.Errorf("no template: %v", err)
	}
}

func TestCheckVolumes(t *testing.T) {
	vols := []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
	if err := CheckVolumes("spec.volumes", vols); err != nil {
		t.Fatal(err)
	}
	vols = append(vols, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}})
	var invalid *InvalidSpecError
	if err := CheckVolumes("spec.volumes", vols); !errors.As(err, &invalid) || invalid.Condition != thv1.ConditionReady ||
		invalid.Reason != thv1.ReasonPodSecurityNotAllowed || !strings.HasPrefix(invalid.Message, "spec.volumes[1].hostPath: a host path volume is not allowed") {
		t.Errorf("%v", err)
	}
}

func TestCheckTemplateServiceAccount(t *testing.T) {
	other := toolhivetest.ManagedServiceAccount("ns", "bar-vmcp", thv1.KindVirtualMCPServer, "bar")
	var invalid *InvalidSpecError
	if err := CheckTemplateServiceAccount(other, "uid-me", "me-vmcp"); !errors.As(err, &invalid) || invalid.Reason != thv1.ReasonServiceAccountNotAllowed ||
		!strings.HasPrefix(invalid.Message, "spec.podTemplateSpec.spec.serviceAccountName: ServiceAccount \"bar-vmcp\"") {
		t.Errorf("another workload's account: %v", err)
	}
	own := toolhivetest.ManagedServiceAccount("ns", "me-vmcp", thv1.KindVirtualMCPServer, "me")
	if err := CheckTemplateServiceAccount(own, "uid-me", "me-vmcp"); err != nil {
		t.Errorf("its own account: %v", err)
	}
	if err := CheckTemplateServiceAccount(nil, "uid-me", ""); err != nil {
		t.Errorf("no account: %v", err)
	}
}
