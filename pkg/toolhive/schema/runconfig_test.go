package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMarshalIndentsTwoSpacesAndOmitsEmpty(t *testing.T) {
	out, err := Marshal(&RunConfig{SchemaVersion: SchemaVersion, Name: "a", Port: 8080, EnvVars: map[string]string{"B": "2", "A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"schema_version\": \"v0.1.0\",\n  \"name\": \"a\",\n  \"port\": 8080,\n  \"env_vars\": {\n    \"A\": \"1\",\n    \"B\": \"2\"\n  }\n}"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	var back RunConfig
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
}

func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	out, _ := Marshal(&RunConfig{CmdArgs: []string{"a<b>&c"}})
	if !strings.Contains(out, "a<b>&c") {
		t.Fatalf("args were escaped: %s", out)
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
