package wiring

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// A ConfigMap's authorization file is read as ToolHive's operator reads
// it: YAML or JSON, kept whole as JSON with its keys sorted (what the
// runner and its authorizer get), and checked as the runner checks it
// when it loads it, in the same words.
func TestParseAuthzFile(t *testing.T) {
	for _, tc := range []struct {
		name, data, want, err string
	}{
		{name: "json", data: `{"version":"1.0","type":"cedarv1","cedar":{"policies":["p"],"entities_json":"[]"}}`,
			want: `{"cedar":{"entities_json":"[]","policies":["p"]},"type":"cedarv1","version":"1.0"}`},
		// YAML 1.1, as ToolHive reads it: yes is true, and so is a key n false.
		{name: "yaml, unknown keys kept", data: "version: \"1.0\"\ntype: cedarv1\ncedar:\n  policies: ['permit(principal, action, resource);']\n  extra: yes\n  n: 1.50\n",
			want: `{"cedar":{"extra":true,"false":1.5,"policies":["permit(principal, action, resource);"]},"type":"cedarv1","version":"1.0"}`},
		{name: "httpv1", data: `{"version":"1.0","type":"httpv1","pdp":{"http":{"url":"http://pdp:9000"},"claim_mapping":"mpe"}}`,
			want: `{"pdp":{"claim_mapping":"mpe","http":{"url":"http://pdp:9000"}},"type":"httpv1","version":"1.0"}`},
		{name: "empty", data: " \n", err: `authz ConfigMap ns/cm key "authz.json" is empty`},
		{name: "no version", data: `{"type":"cedarv1"}`, err: `invalid authz config from ConfigMap ns/cm key "authz.json": version is required`},
		{name: "no type", data: `{"version":"1.0"}`, err: `invalid authz config from ConfigMap ns/cm key "authz.json": type is required`},
		{name: "unknown type", data: `{"version":"1.0","type":"opa"}`,
			err: `invalid authz config from ConfigMap ns/cm key "authz.json": unsupported configuration type: opa (registered types: [cedarv1 httpv1])`},
		{name: "no cedar options", data: `{"version":"1.0","type":"cedarv1","cedar":null}`,
			err: `invalid authz config from ConfigMap ns/cm key "authz.json": invalid cedarv1 configuration: cedar configuration is required (missing 'cedar' field)`},
		{name: "no policy", data: `{"version":"1.0","type":"cedarv1","cedar":{"policies":[]}}`,
			err: `invalid authz config from ConfigMap ns/cm key "authz.json": invalid cedarv1 configuration: at least one policy is required for Cedar authorization`},
		{name: "pdp without url", data: `{"version":"1.0","type":"httpv1","pdp":{"http":{},"claim_mapping":"mpe"}}`,
			err: `invalid authz config from ConfigMap ns/cm key "authz.json": invalid httpv1 configuration: http.url is required`},
		{name: "pdp claim mapping", data: `{"version":"1.0","type":"httpv1","pdp":{"http":{"url":"u"},"claim_mapping":"x"}}`,
			err: `invalid authz config from ConfigMap ns/cm key "authz.json": invalid httpv1 configuration: invalid claim_mapping "x" (valid values: mpe, standard)`},
		{name: "not a document", data: `version: [`, err: `failed to parse authz config from ConfigMap ns/cm key "authz.json": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseAuthzFile("ns", "cm", "authz.json", tc.data)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(f.Raw()) != tc.want {
				t.Fatalf("got %s, %v\nwant %s", f.Raw(), err, tc.want)
			}
		})
	}
}

// The RunConfig's authz_config from a ConfigMap is the file as read;
// with the spec's claim settings it is re-encoded as ToolHive's Cedar
// types order it (keys they do not know dropped), each setting over the
// file's own. A file that is not Cedar's is left as it is.
func TestAuthzRunConfigFromConfigMap(t *testing.T) {
	const cedarFile = `{"version":"1.0","type":"cedarv1","cedar":{"policies":["p"],"role_claim_name":"r","group_claim_name":"file","extra":1}}`
	cm := func(mut func(*thv1.InlineAuthz)) *thv1.InlineAuthz {
		a := &thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap, ConfigMap: &thv1.ConfigMapAuthzRef{Name: "cm"}}
		if mut != nil {
			mut(a)
		}
		return a
	}
	for _, tc := range []struct {
		name, file string
		authz      *thv1.InlineAuthz
		want       string
	}{
		{"as read", cedarFile, cm(nil), `{"cedar":{"extra":1,"group_claim_name":"file","policies":["p"],"role_claim_name":"r"},"type":"cedarv1","version":"1.0"}`},
		{"claim settings", cedarFile, cm(func(a *thv1.InlineAuthz) { a.GroupClaimName, a.GroupEntityType = "groups", "Team" }),
			`{"version":"1.0","type":"cedarv1","cedar":{"policies":["p"],"entities_json":"","group_claim_name":"groups","role_claim_name":"r","group_entity_type":"Team"}}`},
		{"multi-valued claims kept", `{"version":"1.0","type":"cedarv1","cedar":{"policies":["p"],"multi_valued_claims":["teams"]}}`,
			cm(func(a *thv1.InlineAuthz) { a.RoleClaimName = "roles" }),
			`{"version":"1.0","type":"cedarv1","cedar":{"policies":["p"],"entities_json":"","role_claim_name":"roles","multi_valued_claims":["teams"]}}`},
		{"httpv1 untouched", `{"version":"1.0","type":"httpv1","pdp":{"http":{"url":"u"},"claim_mapping":"mpe"}}`, cm(func(a *thv1.InlineAuthz) { a.RoleClaimName = "roles" }),
			`{"pdp":{"claim_mapping":"mpe","http":{"url":"u"}},"type":"httpv1","version":"1.0"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseAuthzFile("ns", "cm", "authz.json", tc.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AuthzRunConfig(tc.authz, nil, f)
			if err != nil || string(got) != tc.want {
				t.Errorf("got %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
	_, err := AuthzRunConfig(cm(nil), nil, nil)
	var invalid *InvalidSpecError
	if !errors.As(err, &invalid) || invalid.Message != "spec.authzConfig: ConfigMap cm has not been read" {
		t.Errorf("without the file: %v", err)
	}
}

// The ConfigMap's key is mounted as authz.json where ToolHive's operator
// mounts it, read-only; no ConfigMap of hivekeeper's is written.
func TestAuthzFileFromConfigMap(t *testing.T) {
	for key, want := range map[string]string{"": "authz.json", "policy.yaml": "policy.yaml"} {
		w, err := InlineAuthzFile(&thv1.InlineAuthz{Type: thv1.AuthzConfigTypeConfigMap, ConfigMap: &thv1.ConfigMapAuthzRef{Name: "policies", Key: key}}, "fetch")
		if err != nil {
			t.Fatal(err)
		}
		vol := []corev1.Volume{{Name: "authz-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "policies"},
			Items:                []corev1.KeyToPath{{Key: want, Path: "authz.json"}},
		}}}}
		mount := []corev1.VolumeMount{{Name: "authz-config", MountPath: "/etc/toolhive/authz", ReadOnly: true}}
		if !reflect.DeepEqual(w.Volumes, vol) || !reflect.DeepEqual(w.Mounts, mount) || w.Data != nil {
			t.Errorf("key %q: %+v", key, w)
		}
	}
}
