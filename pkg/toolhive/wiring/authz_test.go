package wiring

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

const permitList = `permit(principal, action == Action::"list_tools", resource);`

func authzConfig(name, typ, config string) *thv1.MCPAuthzConfig {
	return &thv1.MCPAuthzConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Generation: 1, ResourceVersion: "7"},
		Spec:       thv1.MCPAuthzConfigSpec{Type: typ, Config: runtime.RawExtension{Raw: []byte(config)}},
	}
}

// What the runner would only find when it starts, and then crash-loop on,
// is a validation error of the config instead.
func TestValidateAuthzConfig(t *testing.T) {
	for _, tc := range []struct {
		name, typ, config string
		want              []string // substrings, one per error
	}{
		{"cedar", "cedarv1", `{"policies":[` + quote(permitList) + `],"entities_json":"[]"}`, nil},
		{"http", "httpv1", `{"http":{"url":"http://pdp:8080"},"claim_mapping":"standard"}`, nil},
		{"unknown type", "opa", `{}`, []string{`spec.type: "opa"`}},
		{"empty config", "cedarv1", ``, []string{"spec.config: required"}},
		{"no policy", "cedarv1", `{"policies":[]}`, []string{"at least one policy"}},
		{"policy does not parse", "cedarv1", `{"policies":["permit(principal"]}`, []string{"spec.config.policies[0]"}},
		{"entities do not parse", "cedarv1", `{"policies":[` + quote(permitList) + `],"entities_json":"{"}`, []string{"spec.config.entities_json"}},
		{"http without url and mapping", "httpv1", `{"http":{}}`, []string{"http.url: required", "claim_mapping"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateAuthzConfig(authzConfig("a", tc.typ, tc.config))
			if len(errs) != len(tc.want) {
				t.Fatalf("errors = %q, want %d", errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

// The RunConfig's authz_config is what ToolHive's operator writes: the
// format version, the backend type and its options under the backend's
// key; inline policies become a cedarv1 config with the claim settings.
func TestAuthzRunConfig(t *testing.T) {
	inline := &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeInline, GroupClaimName: "groups",
		Inline: &thv1.InlineCedar{Policies: []string{permitList}, EntitiesJSON: "[]"}}
	for _, tc := range []struct {
		name   string
		inline *thv1.InlineAuthz
		ref    *thv1.MCPAuthzConfig
		want   string
	}{
		{"none", nil, nil, ""},
		// In the order of ToolHive's Cedar types.
		{"inline", inline, nil, `{"version":"1.0","type":"cedarv1","cedar":{"policies":[` + quote(permitList) + `],"entities_json":"[]","group_claim_name":"groups"}}`},
		// A reference is a map to ToolHive's operator: its keys sorted.
		{"cedar reference", nil, authzConfig("a", "cedarv1", `{"policies":["p"], "entities_json":"[]"}`),
			`{"cedar":{"entities_json":"[]","policies":["p"]},"type":"cedarv1","version":"1.0"}`},
		{"http reference", nil, authzConfig("a", "httpv1", `{"http":{"url":"u"},"claim_mapping":"mpe"}`),
			`{"pdp":{"claim_mapping":"mpe","http":{"url":"u"}},"type":"httpv1","version":"1.0"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AuthzRunConfig(tc.inline, tc.ref, nil)
			if err != nil || string(got) != tc.want {
				t.Errorf("got %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

// A workload is never run without the authorization it asked for: what
// hivekeeper cannot apply is an invalid spec, not a silent omission.
func TestAuthzRunConfigRefuses(t *testing.T) {
	for name, in := range map[string]*thv1.InlineAuthz{
		"configMap":  {Type: thv1.AuthzConfigTypeConfigMap, ConfigMap: &thv1.ConfigMapAuthzRef{Name: "policies"}},
		"bad policy": {Type: thv1.AuthzConfigTypeInline, Inline: &thv1.InlineCedar{Policies: []string{"forbid("}}},
	} {
		_, err := AuthzRunConfig(in, nil, nil)
		var invalid *InvalidSpecError
		if !errors.As(err, &invalid) || !strings.Contains(invalid.Message, "spec.authzConfig") {
			t.Errorf("%s: err = %v, want an InvalidSpecError naming spec.authzConfig", name, err)
		}
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
