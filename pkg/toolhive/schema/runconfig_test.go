package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestMarshalWritesToolHiveEncoding pins the encoding of ToolHive's
// operator: keys in the order of runner.RunConfig, the keys its type
// always writes present even when empty, map keys sorted, two-space
// indent, no final newline.
func TestMarshalWritesToolHiveEncoding(t *testing.T) {
	out, err := Marshal(&RunConfig{SchemaVersion: SchemaVersion, Name: "a", Port: 8080, EnvVars: map[string]string{"B": "2", "A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "schema_version": "v0.1.0",
  "image": "",
  "name": "a",
  "transport": "",
  "host": "",
  "port": 8080,
  "permission_profile": null,
  "env_vars": {
    "A": "1",
    "B": "2"
  }
}`
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
}

// TestMarshalEscapesHTML: ToolHive's operator encodes with
// json.MarshalIndent, which escapes <, > and &.
func TestMarshalEscapesHTML(t *testing.T) {
	out, _ := Marshal(&RunConfig{CmdArgs: []string{"a<b>&c"}})
	if !strings.Contains(out, `"a\u003cb\u003e\u0026c"`) {
		t.Fatalf("args were not escaped as ToolHive escapes them: %s", out)
	}
}

// TestOIDCAndRemoteAuthWriteEveryKey: the keys ToolHive's types write
// without omitempty are written empty.
func TestOIDCAndRemoteAuthWriteEveryKey(t *testing.T) {
	out, err := Marshal(&RunConfig{
		OIDCConfig:          &OIDCConfig{Issuer: "https://idp"},
		RemoteAuthConfig:    &RemoteAuthConfig{BearerToken: "tok,target=bearer_token"},
		TokenExchangeConfig: &TokenExchangeConfig{TokenURL: "https://sts", Audience: "api"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"JWKSURL": ""`, `"ClientSecret": ""`, `"AllowPrivateIP": false`, `"Scopes": null`,
		`"use_pkce": false`, `"cached_token_expiry": "0001-01-01T00:00:00Z"`, `"cached_secret_expiry": "0001-01-01T00:00:00Z"`,
		`"client_id": ""`, `"client_secret": ""`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("%s missing from\n%s", want, out)
		}
	}
}

func TestSetTransportEnv(t *testing.T) {
	for _, c := range []struct {
		transport string
		target    int32
		want      map[string]string
	}{
		{"stdio", 8080, map[string]string{"MCP_TRANSPORT": "stdio"}},
		{"sse", 9000, map[string]string{"MCP_TRANSPORT": "sse", "MCP_PORT": "9000", "FASTMCP_PORT": "9000", "OTHER": "x"}},
		{"streamable-http", 0, map[string]string{"MCP_TRANSPORT": "streamable-http"}},
	} {
		rc := &RunConfig{Transport: c.transport, TargetPort: c.target}
		if c.transport == "sse" {
			rc.EnvVars = map[string]string{"MCP_PORT": "1", "OTHER": "x"}
		}
		rc.SetTransportEnv()
		if !maps.Equal(rc.EnvVars, c.want) {
			t.Errorf("%s: env %v, want %v", c.transport, rc.EnvVars, c.want)
		}
	}
}

func TestChecksum(t *testing.T) {
	data := map[string]string{Key: "{}"}
	labels := map[string]string{"app": "mcpserver"}
	base := Checksum(data, labels, nil)
	if len(base) != 64 {
		t.Fatalf("not hex sha256: %q", base)
	}
	if got := Checksum(data, labels, map[string]string{ChecksumAnnotation: "anything"}); got != base {
		t.Error("the checksum annotation itself must not feed the checksum")
	}
	if got := Checksum(map[string]string{Key: "{ }"}, labels, nil); got == base {
		t.Error("a data change must change the checksum")
	}
	if got := Checksum(data, map[string]string{"app": "other"}, nil); got == base {
		t.Error("a label change must change the checksum")
	}
	if got := Checksum(data, labels, map[string]string{"x": "y"}); got == base {
		t.Error("an annotation change must change the checksum")
	}
	// ToolHive's encoding: keys and values concatenated, no separator.
	sum := sha256.Sum256([]byte("runconfig.json{}app" + "mcpserver"))
	if got := Checksum(data, labels, nil); got != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum %s, want ToolHive's %x", got, sum)
	}
	// ToolHive's operator's checksum of the config.yaml it wrote for a
	// vMCP of an anonymous, two-member group, with its labels.
	cfg := "name: tools-vmcp\ngroupRef: tools\nincomingAuth:\n    type: anonymous\noutgoingAuth:\n    source: discovered\n" +
		"aggregation:\n    conflictResolution: prefix\n    conflictResolutionConfig:\n        prefixFormat: '{workload}_'\n" +
		"operational:\n    timeouts:\n        default: 30s\n    failureHandling:\n        healthCheckInterval: 30s\n" +
		"        unhealthyThreshold: 3\n        statusReportingInterval: 30s\n        partialFailureMode: fail\n" +
		"        circuitBreaker:\n            failureThreshold: 5\n            timeout: 1m0s\n"
	vmcpLabels := map[string]string{"toolhive.stacklok.io/component": "vmcp-config", "toolhive.stacklok.io/virtual-mcp-server": "tools-vmcp",
		"toolhive.stacklok.io/managed-by": "toolhive-operator"}
	if got, want := Checksum(map[string]string{"config.yaml": cfg}, vmcpLabels, nil), "9e74bccc49ff681b19bcdf9ef2191524b0956c93fa612e2deba4258b4567c397"; got != want {
		t.Errorf("checksum %s, want ToolHive's %s", got, want)
	}
	// Map order never matters.
	for range 20 {
		if Checksum(map[string]string{"a": "1", "b": "2", "c": "3"}, nil, nil) != Checksum(map[string]string{"c": "3", "b": "2", "a": "1"}, nil, nil) {
			t.Fatal("checksum depends on map order")
		}
	}
}

func TestValidateEnvName(t *testing.T) {
	for _, bad := range []string{"", "A=B", "A\nB", "A\rB"} {
		if ValidateEnvName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := ValidateEnvName("GOOD_NAME"); err != nil {
		t.Error(err)
	}
}

// TestSetContainerLabels pins the labels ToolHive's operator writes for the
// same workload; the runner reads the transport back from them.
func TestSetContainerLabels(t *testing.T) {
	rc := &RunConfig{ContainerName: "fetch", BaseName: "fetch-base", Transport: "stdio", Port: 8081}
	rc.SetContainerLabels()
	want := map[string]string{
		"toolhive": "true", "toolhive-name": "fetch", "toolhive-basename": "fetch-base",
		"toolhive-transport": "stdio", "toolhive-port": "8081",
	}
	if len(rc.ContainerLabels) != len(want) {
		t.Fatalf("labels %v, want %v", rc.ContainerLabels, want)
	}
	for k, v := range want {
		if rc.ContainerLabels[k] != v {
			t.Errorf("label %s = %q, want %q", k, rc.ContainerLabels[k], v)
		}
	}
	out, err := Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"container_labels": {`) {
		t.Errorf("container_labels missing from %s", out)
	}
}

// The registration rate is a float64: encoding/json prints it in the
// RunConfig, a YAML encoder (ToolHive's 'g' format) in
// authserver-config.yaml, which differ for integral values from 1e6 and
// for small ones.
func TestRegistrationRateEncodings(t *testing.T) {
	for rate, want := range map[float64][2]string{
		1:                   {"1", "1"},
		0.2:                 {"0.2", "0.2"},
		0.16666666666666666: {"0.16666666666666666", "0.16666666666666666"},
		1e6:                 {"1000000", "1e+06"},
		1234567:             {"1234567", "1.234567e+06"},
		0.00001:             {"0.00001", "1e-05"},
	} {
		c := &EmbeddedAuthServerConfig{RegistrationRateLimit: &RegistrationRateLimit{RequestsPerSecond: rate, Burst: 2}}
		js, err := Marshal(&RunConfig{EmbeddedAuthServerConfig: c})
		if err != nil {
			t.Fatal(err)
		}
		if w := `"requests_per_second": ` + want[0] + `,`; !strings.Contains(js, w) {
			t.Errorf("%v: RunConfig lacks %s:\n%s", rate, w, js)
		}
		y, err := MarshalAuthServerConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		if w := "    requests_per_second: " + want[1] + "\n"; !strings.Contains(y, w) {
			t.Errorf("%v: YAML lacks %q:\n%s", rate, w, y)
		}
	}
}

// TestChecksumOfToolHivesConfigMap recomputes the checksum ToolHive's
// operator wrote on a RunConfig ConfigMap it created (recorded by the
// differential test) from that ConfigMap's data and labels.
func TestChecksumOfToolHivesConfigMap(t *testing.T) {
	raw, err := os.ReadFile("../../../test/conformance/testdata/toolhive-v0.66.0/table/01-stdio-minimal/ConfigMap.fetch-runconfig.yaml")
	if err != nil {
		t.Fatalf("%v (the differential's -record writes it)", err)
	}
	var cm struct {
		Data     map[string]string `json:"data"`
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	want := cm.Metadata.Annotations[ChecksumAnnotation]
	if got := Checksum(cm.Data, cm.Metadata.Labels, cm.Metadata.Annotations); want == "" || got != want {
		t.Errorf("checksum %s, ToolHive's operator wrote %s", got, want)
	}
}
