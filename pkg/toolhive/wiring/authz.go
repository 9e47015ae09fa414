package wiring

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cedar-policy/cedar-go"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// authzVersion is the version of the runner's authorization file format.
const authzVersion = "1.0"

// authzKeys maps each authorizer backend the runner registers to the key
// its configuration sits under in the runner's authorization config.
var authzKeys = map[string]string{thv1.AuthzTypeCedar: "cedar", thv1.AuthzTypeHTTP: "pdp"}

// pdpOptions are the parts of the runner's httpv1 options it requires.
type pdpOptions struct {
	HTTP *struct {
		URL string `json:"url"`
	} `json:"http"`
	ClaimMapping string `json:"claim_mapping"`
}

// ValidateAuthzConfig returns every problem of an MCPAuthzConfig that the
// runner would otherwise only find when it starts (and then crash-loop):
// an unknown backend, a Cedar policy or entity store that does not parse,
// an httpv1 config without its URL or claim mapping.
func ValidateAuthzConfig(c *thv1.MCPAuthzConfig) []string {
	if _, ok := authzKeys[c.Spec.Type]; !ok {
		return []string{fmt.Sprintf("spec.type: %q is not an authorizer of the runner (cedarv1, httpv1)", c.Spec.Type)}
	}
	if len(c.Spec.Config.Raw) == 0 {
		return []string{"spec.config: required"}
	}
	switch c.Spec.Type {
	case thv1.AuthzTypeCedar:
		var o schema.CedarOptions
		if err := json.Unmarshal(c.Spec.Config.Raw, &o); err != nil {
			return []string{"spec.config: " + err.Error()}
		}
		return validateCedar("spec.config", o.Policies, o.EntitiesJSON)
	default:
		var o pdpOptions
		if err := json.Unmarshal(c.Spec.Config.Raw, &o); err != nil {
			return []string{"spec.config: " + err.Error()}
		}
		var errs []string
		if o.HTTP == nil || o.HTTP.URL == "" {
			errs = append(errs, "spec.config.http.url: required")
		}
		if o.ClaimMapping != "mpe" && o.ClaimMapping != "standard" {
			errs = append(errs, fmt.Sprintf("spec.config.claim_mapping: %q is not mpe or standard", o.ClaimMapping))
		}
		return errs
	}
}

// validateCedar parses policies and entities as the runner will.
func validateCedar(path string, policies []string, entities string) []string {
	var errs []string
	if len(policies) == 0 {
		errs = append(errs, path+".policies: at least one policy is required")
	}
	for i, p := range policies {
		var policy cedar.Policy
		if err := policy.UnmarshalCedar([]byte(p)); err != nil {
			errs = append(errs, fmt.Sprintf("%s.policies[%d]: %v", path, i, err))
		}
	}
	if entities != "" {
		var m cedar.EntityMap
		if err := json.Unmarshal([]byte(entities), &m); err != nil {
			errs = append(errs, fmt.Sprintf("%s.entities_json: %v", path, err))
		}
	}
	return errs
}

// AuthzRunConfig is the RunConfig's authz_config for a workload's
// authorization: inline, from a ConfigMap (file, as the controller read
// it), or an MCPAuthzConfig (at most one is set; nil for none), as
// ToolHive's operator writes it: the format version, the backend type,
// and the backend's options under its key. A file from a ConfigMap is
// written as it was read, with the spec's claim settings over a Cedar
// file's own. Inline policies that do not parse are refused (an
// InvalidSpecError naming the field): a workload is never run without
// the authorization it asked for.
func AuthzRunConfig(inline *thv1.InlineAuthz, ref *thv1.MCPAuthzConfig, file *AuthzFile) (json.RawMessage, error) {
	var typ string
	var options any
	switch {
	case ref != nil:
		var v any
		if err := json.Unmarshal(ref.Spec.Config.Raw, &v); err != nil {
			return nil, fmt.Errorf("MCPAuthzConfig %s: spec.config: %w", ref.Name, err)
		}
		typ, options = ref.Spec.Type, v
	case inline == nil:
		return nil, nil
	case inline.Type == thv1.AuthzConfigTypeInline && inline.Inline != nil:
		if errs := validateCedar("spec.authzConfig.inline", inline.Inline.Policies, inline.Inline.EntitiesJSON); len(errs) > 0 {
			return nil, &InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec, Message: strings.Join(errs, "; ")}
		}
		// In the order of ToolHive's Cedar types, as its operator encodes
		// an inline config.
		return json.Marshal(schema.CedarAuthzConfig{Version: authzVersion, Type: thv1.AuthzTypeCedar, Options: &schema.CedarOptions{
			Policies: inline.Inline.Policies, EntitiesJSON: inline.Inline.EntitiesJSON,
			GroupClaimName: inline.GroupClaimName, RoleClaimName: inline.RoleClaimName, GroupEntityType: inline.GroupEntityType,
		}})
	case AuthzFromConfigMap(inline) != "":
		if file == nil {
			return nil, &InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec,
				Message: fmt.Sprintf("spec.authzConfig: ConfigMap %s has not been read", inline.ConfigMap.Name)}
		}
		return file.withClaimOverrides(inline)
	default:
		return nil, &InvalidSpecError{Condition: thv1.ConditionReady, Reason: thv1.ReasonInvalidSpec,
			Message: fmt.Sprintf("spec.authzConfig: type %s without its %s block", inline.Type, inline.Type)}
	}
	// A referenced config is a map to ToolHive's operator: its keys sorted.
	return json.Marshal(map[string]any{"version": authzVersion, "type": typ, authzKeys[typ]: options})
}

// Where ToolHive's operator also writes an inline authorization config: a
// ConfigMap labelled toolhive.stacklok.io/authz=inline, mounted read-only
// in the proxy container. The runner reads the RunConfig's authz_config,
// not this file; it is written so that the pod is the one ToolHive's
// operator runs.
const (
	LabelAuthz         = "toolhive.stacklok.io/authz"
	labelAuthzInline   = "inline"
	authzInlineKey     = "authz.json"
	authzInlineVolume  = "authz-config"
	authzInlineMount   = "/etc/toolhive/authz"
	defaultEntitiesDoc = "[]"
)

// AuthzFileWiring is the inline authorization ConfigMap's data, and the
// proxy pod's volume and mount of it.
type AuthzFileWiring struct {
	Data    map[string]string
	Volumes []corev1.Volume
	Mounts  []corev1.VolumeMount
}

// InlineAuthzFile is what a workload's authorization file adds to a
// proxy named name, as ToolHive's operator writes it. Inline
// authorization: the policies and the entities ("[]" when none) under the
// runner's Cedar keys, compact JSON with sorted keys (the claim settings
// are not in it), in ConfigMap AuthzInlineName(name), key authz.json.
// Authorization from a ConfigMap: that ConfigMap's key, as authz.json.
// Either is mounted read-only at /etc/toolhive/authz; a workload without
// either gets nothing.
func InlineAuthzFile(inline *thv1.InlineAuthz, name string) (AuthzFileWiring, error) {
	if cm := AuthzFromConfigMap(inline); cm != "" {
		return AuthzFileWiring{
			Volumes: []corev1.Volume{authzFileVolume(cm, AuthzFileKey(inline.ConfigMap))},
			Mounts:  []corev1.VolumeMount{{Name: authzInlineVolume, MountPath: authzInlineMount, ReadOnly: true}},
		}, nil
	}
	if inline == nil || inline.Type != thv1.AuthzConfigTypeInline || inline.Inline == nil {
		return AuthzFileWiring{}, nil
	}
	entities := inline.Inline.EntitiesJSON
	if entities == "" {
		entities = defaultEntitiesDoc
	}
	data, err := json.Marshal(map[string]any{"version": authzVersion, "type": thv1.AuthzTypeCedar,
		authzKeys[thv1.AuthzTypeCedar]: map[string]any{"policies": inline.Inline.Policies, "entities_json": entities}})
	if err != nil {
		return AuthzFileWiring{}, fmt.Errorf("encoding the inline authorization config: %w", err)
	}
	return AuthzFileWiring{
		Data:    map[string]string{authzInlineKey: string(data)},
		Volumes: []corev1.Volume{authzFileVolume(naming.AuthzInlineName(name), authzInlineKey)},
		Mounts:  []corev1.VolumeMount{{Name: authzInlineVolume, MountPath: authzInlineMount, ReadOnly: true}},
	}, nil
}

// authzFileVolume is the volume of key of ConfigMap cm as authz.json.
func authzFileVolume(cm, key string) corev1.Volume {
	return corev1.Volume{Name: authzInlineVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm},
		Items:                []corev1.KeyToPath{{Key: key, Path: authzInlineKey}},
	}}}
}

// ConfigMap is the inline authorization ConfigMap with meta, nil when
// the workload has no inline authorization (authorization from a
// ConfigMap mounts the user's own).
func (w AuthzFileWiring) ConfigMap(meta metav1.ObjectMeta) *corev1.ConfigMap {
	if w.Data == nil {
		return nil
	}
	meta.Labels = maps.Clone(meta.Labels)
	meta.Labels[LabelAuthz] = labelAuthzInline
	return &corev1.ConfigMap{ObjectMeta: meta, Data: w.Data}
}

// PrimaryUpstreamProvider is the upstream a VirtualMCPServer names
// explicitly as the one whose claims Cedar reads:
// spec.authServerConfig.primaryUpstreamProvider, else the deprecated
// spec.incomingAuth.authzConfig.inline.primaryUpstreamProvider
// (deprecated=true); "" for none.
func PrimaryUpstreamProvider(v *thv1.VirtualMCPServer) (name string, deprecated bool) {
	if a := v.Spec.AuthServerConfig; a != nil && a.PrimaryUpstreamProvider != "" {
		return a.PrimaryUpstreamProvider, false
	}
	if a := v.Spec.IncomingAuth.AuthzConfig; a != nil && a.Inline != nil && a.Inline.PrimaryUpstreamProvider != "" {
		return a.Inline.PrimaryUpstreamProvider, true
	}
	return "", false
}
