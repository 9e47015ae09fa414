package wiring

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// PodTemplateField is the path of a podTemplateSpec's pod spec, the
// prefix of the fields CheckPodSecurity names in a template.
const PodTemplateField = "spec.podTemplateSpec.spec"

// CheckPodSecurity refuses a pod spec that would give the pod access to
// the node or more than a container's privileges: a privileged container,
// added capabilities, the node's network, PID or IPC namespace, a host
// path volume, or a Windows host process. hivekeeper creates every pod of
// a workload (or has its runner create it) with its own permissions, so
// whoever may create a ToolHive resource would otherwise get such a pod
// without being allowed to create pods at all. The check holds whether or
// not the chart's admission policy is installed.
//
// field is where spec sits in the user's object (PodTemplateField for a
// podTemplateSpec); the error names the first refused field under it, with
// PodTemplateValid=False when the spec is a podTemplateSpec's. A nil spec
// passes.
func CheckPodSecurity(field string, spec *corev1.PodSpec) error {
	if spec == nil {
		return nil
	}
	refuse := func(path, what string) error {
		condition := thv1.ConditionReady
		if field == PodTemplateField {
			condition = thv1.ConditionPodTemplateValid
		}
		return &InvalidSpecError{
			Condition: condition,
			Reason:    thv1.ReasonPodSecurityNotAllowed,
			Message: fmt.Sprintf("%s.%s: %s is not allowed: hivekeeper runs no pod with access to the node or added privileges",
				field, path, what),
		}
	}
	for _, ns := range []struct {
		on   bool
		name string
	}{{spec.HostNetwork, "hostNetwork"}, {spec.HostPID, "hostPID"}, {spec.HostIPC, "hostIPC"}} {
		if ns.on {
			return refuse(ns.name, "the node's namespace")
		}
	}
	if err := checkVolumes(spec.Volumes, refuse); err != nil {
		return err
	}
	if sc := spec.SecurityContext; sc != nil && hostProcess(sc.WindowsOptions) {
		return refuse("securityContext.windowsOptions.hostProcess", "a host process")
	}
	lists := []struct {
		name string
		scs  []*corev1.SecurityContext
	}{
		{"initContainers", containerContexts(spec.InitContainers)},
		{"containers", containerContexts(spec.Containers)},
		{"ephemeralContainers", ephemeralContexts(spec.EphemeralContainers)},
	}
	for _, l := range lists {
		for i, sc := range l.scs {
			if sc == nil {
				continue
			}
			at := fmt.Sprintf("%s[%d].securityContext", l.name, i)
			switch {
			case sc.Privileged != nil && *sc.Privileged:
				return refuse(at+".privileged", "a privileged container")
			case sc.Capabilities != nil && len(sc.Capabilities.Add) > 0:
				return refuse(at+".capabilities.add", "adding capabilities")
			case hostProcess(sc.WindowsOptions):
				return refuse(at+".windowsOptions.hostProcess", "a host process")
			}
		}
	}
	return nil
}

// CheckPodTemplate decodes a podTemplateSpec and refuses it as
// CheckPodSecurity does: the template is the user's, so the error names
// the field as the user wrote it. A template that is not one is a
// PodTemplateInvalid error; none passes.
func CheckPodTemplate(raw *runtime.RawExtension) error {
	tpl, err := DecodePodTemplate(raw)
	if err != nil || tpl == nil {
		return err
	}
	return CheckPodSecurity(PodTemplateField, &tpl.Spec)
}

// CheckVolumes refuses a host path among volumes, which sit at field in
// the user's object (an MCPRegistry's spec.volumes).
func CheckVolumes(field string, volumes []corev1.Volume) error {
	return checkVolumes(volumes, func(path, what string) error {
		return &InvalidSpecError{
			Condition: thv1.ConditionReady,
			Reason:    thv1.ReasonPodSecurityNotAllowed,
			Message: fmt.Sprintf("%s%s: %s is not allowed: hivekeeper runs no pod with access to the node or added privileges",
				field, strings.TrimPrefix(path, "volumes"), what),
		}
	})
}

func checkVolumes(volumes []corev1.Volume, refuse func(path, what string) error) error {
	for i, v := range volumes {
		if v.HostPath != nil {
			return refuse(fmt.Sprintf("volumes[%d].hostPath", i), "a host path volume")
		}
	}
	return nil
}

func hostProcess(w *corev1.WindowsSecurityContextOptions) bool {
	return w != nil && w.HostProcess != nil && *w.HostProcess
}

func containerContexts(cs []corev1.Container) []*corev1.SecurityContext {
	out := make([]*corev1.SecurityContext, len(cs))
	for i := range cs {
		out[i] = cs[i].SecurityContext
	}
	return out
}

func ephemeralContexts(cs []corev1.EphemeralContainer) []*corev1.SecurityContext {
	out := make([]*corev1.SecurityContext, len(cs))
	for i := range cs {
		out[i] = cs[i].SecurityContext
	}
	return out
}

// CheckTemplateServiceAccount is CheckServiceAccount for the account a
// podTemplateSpec names (spec.serviceAccountName), which wins over the one
// hivekeeper would give the pod: sa is that account from the lister (nil
// when the template names none or it does not exist), own the managed
// account this workload may name ("" for none).
func CheckTemplateServiceAccount(sa *corev1.ServiceAccount, ownerUID types.UID, own string) error {
	err := CheckServiceAccount(sa, ownerUID, own)
	var invalid *InvalidSpecError
	if errors.As(err, &invalid) {
		invalid.Message = strings.Replace(invalid.Message, "spec.serviceAccount", PodTemplateField+".serviceAccountName", 1)
	}
	return err
}
