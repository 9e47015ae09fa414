package wiring

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
)

// DefaultAuthzFileKey is the key of a ConfigMap's authorization file when
// spec.authzConfig.configMap.key is unset, and the file's name in the
// proxy container either way.
const DefaultAuthzFileKey = "authz.json"

// AuthzFileKey is the key of the authorization file in the ConfigMap an
// authzConfig of type configMap names.
func AuthzFileKey(ref *thv1.ConfigMapAuthzRef) string {
	if ref == nil || ref.Key == "" {
		return DefaultAuthzFileKey
	}
	return ref.Key
}

// AuthzFromConfigMap reports whether authz takes its authorization from a
// ConfigMap (type configMap), and names it; "" otherwise.
func AuthzFromConfigMap(authz *thv1.InlineAuthz) string {
	if authz == nil || authz.Type != thv1.AuthzConfigTypeConfigMap || authz.ConfigMap == nil {
		return ""
	}
	return authz.ConfigMap.Name
}

// AuthzFile is an authorization file read from a ConfigMap and checked as
// the runner checks it when it loads it: its raw JSON is what the
// RunConfig's authz_config holds (before the spec's claim settings).
type AuthzFile struct {
	Version string `json:"version"`
	Type    string `json:"type"`
	raw     json.RawMessage
}

// UnmarshalJSON keeps the document whole: the runner passes it on as it
// is, to the authorizer its type names.
func (f *AuthzFile) UnmarshalJSON(data []byte) error {
	var head struct {
		Version string `json:"version"`
		Type    string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	f.Version, f.Type, f.raw = head.Version, head.Type, append(json.RawMessage(nil), data...)
	return nil
}

// Raw is the file as JSON, as ToolHive's operator stores it in the
// RunConfig.
func (f *AuthzFile) Raw() json.RawMessage { return f.raw }

// ParseAuthzFile reads the authorization file held under key of the
// ConfigMap namespace/name, as ToolHive's operator reads it: YAML (JSON
// being YAML too) converted to JSON, then checked for a version, a type
// the runner has an authorizer for, and that authorizer's required
// options. The error says what is wrong in ToolHive's words.
func ParseAuthzFile(namespace, name, key, data string) (*AuthzFile, error) {
	if strings.TrimSpace(data) == "" {
		return nil, fmt.Errorf("authz ConfigMap %s/%s key %q is empty", namespace, name, key)
	}
	var f AuthzFile
	if err := yaml.Unmarshal([]byte(data), &f); err != nil {
		f = AuthzFile{}
		if err2 := json.Unmarshal([]byte(data), &f); err2 != nil {
			return nil, fmt.Errorf("failed to parse authz config from ConfigMap %s/%s key %q: %w; json fallback error: %w",
				namespace, name, key, err, err2)
		}
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("invalid authz config from ConfigMap %s/%s key %q: %w", namespace, name, key, err)
	}
	return &f, nil
}

// validate is the runner's check of a loaded authorization config.
func (f *AuthzFile) validate() error {
	switch {
	case f.Version == "":
		return fmt.Errorf("version is required")
	case f.Type == "":
		return fmt.Errorf("type is required")
	}
	if _, ok := authzKeys[f.Type]; !ok {
		return fmt.Errorf("unsupported configuration type: %s (registered types: [%s %s])", f.Type, thv1.AuthzTypeCedar, thv1.AuthzTypeHTTP)
	}
	if len(f.raw) == 0 {
		return fmt.Errorf("configuration data is required for type %s", f.Type)
	}
	var err error
	if f.Type == thv1.AuthzTypeCedar {
		err = f.validateCedar()
	} else {
		err = f.validatePDP()
	}
	if err != nil {
		return fmt.Errorf("invalid %s configuration: %w", f.Type, err)
	}
	return nil
}

func (f *AuthzFile) validateCedar() error {
	var c struct {
		Options *struct {
			Policies []string `json:"policies"`
		} `json:"cedar"`
	}
	if err := json.Unmarshal(f.raw, &c); err != nil {
		return fmt.Errorf("failed to parse configuration: %w", err)
	}
	if c.Options == nil {
		return fmt.Errorf("cedar configuration is required (missing 'cedar' field)")
	}
	if len(c.Options.Policies) == 0 {
		return fmt.Errorf("at least one policy is required for Cedar authorization")
	}
	return nil
}

func (f *AuthzFile) validatePDP() error {
	var c struct {
		Options *pdpOptions `json:"pdp"`
	}
	if err := json.Unmarshal(f.raw, &c); err != nil {
		return fmt.Errorf("failed to parse HTTP PDP configuration: %w", err)
	}
	switch o := c.Options; {
	case o == nil:
		return fmt.Errorf("pdp configuration is required (missing 'pdp' field)")
	case o.HTTP == nil:
		return fmt.Errorf("http configuration is required")
	case o.HTTP.URL == "":
		return fmt.Errorf("http.url is required")
	case o.ClaimMapping == "":
		return fmt.Errorf("claim_mapping is required (valid values: mpe, standard)")
	case o.ClaimMapping != "mpe" && o.ClaimMapping != "standard":
		return fmt.Errorf("invalid claim_mapping %q (valid values: mpe, standard)", o.ClaimMapping)
	}
	return nil
}

// CedarOptions are the file's Cedar options: an error when it has none
// (a "cedar" key holding an object), which ToolHive's operator reports
// as the file not being a Cedar config.
func (f *AuthzFile) CedarOptions() (*schema.CedarOptions, error) {
	var c schema.CedarAuthzConfig
	if err := json.Unmarshal(f.raw, &c); err != nil {
		return nil, fmt.Errorf("failed to unmarshal config: %w", err)
	}
	if c.Options == nil {
		return nil, fmt.Errorf("cedar config is nil")
	}
	return c.Options, nil
}

// withClaimOverrides is the file with the spec's claim settings (group
// and role claims, group entity type) over its own, re-encoded as
// ToolHive's operator re-encodes a Cedar config; a file that is not a
// Cedar config, or a spec that sets none of them, leaves it as it is.
func (f *AuthzFile) withClaimOverrides(spec *thv1.InlineAuthz) (json.RawMessage, error) {
	if spec.GroupClaimName == "" && spec.RoleClaimName == "" && spec.GroupEntityType == "" {
		return f.raw, nil
	}
	// ToolHive's operator decodes into its Cedar config type and encodes
	// it again, which is schema.CedarAuthzConfig's order and keys.
	var c schema.CedarAuthzConfig
	if err := json.Unmarshal(f.raw, &c); err != nil || c.Options == nil {
		return f.raw, nil
	}
	if spec.GroupClaimName != "" {
		c.Options.GroupClaimName = spec.GroupClaimName
	}
	if spec.RoleClaimName != "" {
		c.Options.RoleClaimName = spec.RoleClaimName
	}
	if spec.GroupEntityType != "" {
		c.Options.GroupEntityType = spec.GroupEntityType
	}
	return json.Marshal(c)
}
