package wiring

import (
	"encoding/json"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// BackendPodPatch renders the patch the runner applies to the backend pod:
// the user's podTemplateSpec, the service account, and each secret as a
// secretKeyRef env var on the "mcp" container. It works on the generic
// JSON so that fields hivekeeper does not model pass through untouched,
// and it checks the result decodes as a PodTemplateSpec.
func BackendPodPatch(s *thv1.MCPServer, serviceAccount string) (string, error) {
	invalid := PodTemplateInvalid
	if _, err := DecodePodTemplate(s.Spec.PodTemplateSpec); err != nil {
		return "", err
	}
	var tpl map[string]any
	if pt := s.Spec.PodTemplateSpec; pt != nil && len(pt.Raw) > 0 {
		if err := json.Unmarshal(pt.Raw, &tpl); err != nil {
			return "", invalid("not a JSON object: %v", err)
		}
	}
	if tpl == nil {
		// Absent, or JSON null in any spelling: an empty patch.
		tpl = map[string]any{}
	}
	spec, ok := tpl["spec"].(map[string]any)
	if tpl["spec"] != nil && !ok {
		return "", invalid("spec must be an object")
	}
	if spec == nil {
		spec = map[string]any{}
		tpl["spec"] = spec
	}
	spec["serviceAccountName"] = serviceAccount

	if len(s.Spec.Secrets) > 0 {
		containers, ok := spec["containers"].([]any)
		if spec["containers"] != nil && !ok {
			return "", invalid("spec.containers must be a list")
		}
		idx := -1
		for i, c := range containers {
			if cm, ok := c.(map[string]any); ok && cm["name"] == naming.MCPContainerName {
				idx = i
			}
		}
		if idx < 0 {
			containers = append(containers, map[string]any{"name": naming.MCPContainerName})
			idx = len(containers) - 1
		}
		mcp := containers[idx].(map[string]any)
		env, ok := mcp["env"].([]any)
		if mcp["env"] != nil && !ok {
			return "", invalid("env of container %q must be a list", naming.MCPContainerName)
		}
		for _, sec := range s.Spec.Secrets {
			name := sec.TargetEnvName
			if name == "" {
				name = sec.Key
			}
			if err := schema.ValidateEnvName(name); err != nil {
				return "", &InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: "spec.secrets: " + err.Error()}
			}
			entry := map[string]any{
				"name": name,
				"valueFrom": map[string]any{"secretKeyRef": map[string]any{
					"name": sec.Name, "key": sec.Key,
				}},
			}
			replaced := false
			for i, e := range env {
				if em, ok := e.(map[string]any); ok && em["name"] == name {
					env[i], replaced = entry, true
				}
			}
			if !replaced {
				env = append(env, entry)
			}
		}
		mcp["env"] = env
		spec["containers"] = containers
	}
	// encoding/json sorts map keys: equal inputs give equal bytes, so the
	// Deployment args never churn.
	out, err := json.Marshal(tpl)
	if err != nil {
		return "", invalid("%v", err)
	}
	return string(out), nil
}
