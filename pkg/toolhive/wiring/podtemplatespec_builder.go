package wiring

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// BackendPodPatch renders the patch the runner applies to the backend pod
// as ToolHive's operator renders it: the user's podTemplateSpec decoded as
// a PodTemplateSpec (a field the type does not know is dropped), the
// service account set, each secret appended as a secretKeyRef variable to
// the "mcp" container (added when the template has none), and the whole
// encoded as the type encodes it, "metadata":{} and "containers":[]
// included.
func BackendPodPatch(s *thv1.MCPServer, serviceAccount string) (string, error) {
	tpl, err := DecodePodTemplate(s.Spec.PodTemplateSpec)
	if err != nil {
		return "", err
	}
	if tpl == nil {
		tpl = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{}}}
	}
	tpl.Spec.ServiceAccountName = serviceAccount
	if len(s.Spec.Secrets) > 0 {
		env := make([]corev1.EnvVar, 0, len(s.Spec.Secrets))
		for _, sec := range s.Spec.Secrets {
			name := sec.TargetEnvName
			if name == "" {
				name = sec.Key
			}
			if err := schema.ValidateEnvName(name); err != nil {
				return "", &InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: "spec.secrets: " + err.Error()}
			}
			env = append(env, SecretEnv(name, sec.Name, sec.Key))
		}
		idx := -1
		for i := range tpl.Spec.Containers {
			if tpl.Spec.Containers[i].Name == naming.MCPContainerName {
				idx = i
				break
			}
		}
		if idx < 0 {
			tpl.Spec.Containers = append(tpl.Spec.Containers, corev1.Container{Name: naming.MCPContainerName})
			idx = len(tpl.Spec.Containers) - 1
		}
		tpl.Spec.Containers[idx].Env = append(tpl.Spec.Containers[idx].Env, env...)
	}
	out, err := json.Marshal(tpl)
	if err != nil {
		return "", PodTemplateInvalid("%v", err)
	}
	return string(out), nil
}
