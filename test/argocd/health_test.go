package argocd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

func script(t *testing.T) string {
	t.Helper()
	s, err := ReadScript()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// asServed is obj as the API server returns it: JSON, decoded.
func asServed(t *testing.T, kind string, obj any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["apiVersion"], m["kind"] = thv1.SchemeGroupVersion.String(), kind
	return m
}

func meta(generation int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "x", Namespace: "ns", Generation: generation}
}

func valid(status metav1.ConditionStatus, message string) []metav1.Condition {
	return []metav1.Condition{{Type: thv1.ConditionValid, Status: status, Reason: "r", Message: message}}
}

// TestHealthOfEachPhase: every kind in the phases it reports, and a status
// that describes an older generation, read as Argo CD shows them.
func TestHealthOfEachPhase(t *testing.T) {
	s := script(t)
	server := func(phase, message string, observed int64) *thv1.MCPServer {
		return &thv1.MCPServer{ObjectMeta: meta(2), Status: thv1.MCPServerStatus{Phase: phase, Message: message, ObservedGeneration: observed}}
	}
	for _, c := range []struct {
		name, kind      string
		obj             any
		status, message string
	}{
		{"no status yet", "MCPServer", &thv1.MCPServer{ObjectMeta: meta(1)}, "Progressing", "Waiting for the controller to report a status"},
		{"running", "MCPServer", server("Ready", "MCP server is running", 2), "Healthy", "MCP server is running"},
		{"an older generation", "MCPServer", server("Ready", "MCP server is running", 1), "Progressing", "Waiting for the controller to observe generation 2"},
		{"starting", "MCPServer", server("Pending", "MCP server is starting", 2), "Progressing", "MCP server is starting"},
		{"crash-looping", "MCPServer", server("Failed", "MCP server pod failed: CrashLoopBackOff", 2), "Degraded", "MCP server pod failed: CrashLoopBackOff"},
		{"scaled to zero", "MCPServer", server("Stopped", "MCP server is stopped (scaled to zero)", 2), "Suspended", "MCP server is stopped (scaled to zero)"},
		{"being deleted", "MCPServer", server("Terminating", "", 2), "Progressing", "Terminating"},
		{"phase without message reads Ready", "MCPRemoteProxy", &thv1.MCPRemoteProxy{ObjectMeta: meta(1), Status: thv1.MCPRemoteProxyStatus{Phase: "Failed",
			Conditions: []metav1.Condition{{Type: thv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "NotReady", Message: "MCPOIDCConfig \"a\" not found"}}}},
			"Degraded", "MCPOIDCConfig \"a\" not found"},
		{"backends down", "VirtualMCPServer", &thv1.VirtualMCPServer{ObjectMeta: meta(1), Status: thv1.VirtualMCPServerStatus{Phase: "Degraded",
			Message: "Virtual MCP server is running but all 2 backends are unhealthy"}}, "Degraded", "Virtual MCP server is running but all 2 backends are unhealthy"},
		{"downloading", "EmbeddingServer", &thv1.EmbeddingServer{ObjectMeta: meta(1), Status: thv1.EmbeddingServerStatus{Phase: "Downloading"}}, "Progressing", "Downloading"},
		{"entry valid", "MCPServerEntry", &thv1.MCPServerEntry{ObjectMeta: meta(1), Status: thv1.MCPServerEntryStatus{Phase: "Valid"}}, "Healthy", "Valid"},
		{"group ready", "MCPGroup", &thv1.MCPGroup{ObjectMeta: meta(1), Status: thv1.MCPGroupStatus{Phase: "Ready"}}, "Healthy", "Ready"},
		{"registry failed", "MCPRegistry", &thv1.MCPRegistry{ObjectMeta: meta(1), Status: thv1.MCPRegistryStatus{Phase: "Failed", Message: "no source"}}, "Degraded", "no source"},
		{"config valid", "MCPOIDCConfig", &thv1.MCPOIDCConfig{ObjectMeta: meta(1), Status: thv1.ConfigStatus{ObservedGeneration: 1,
			Conditions: valid(metav1.ConditionTrue, "Spec validation passed")}}, "Healthy", "Spec validation passed"},
		{"config invalid", "MCPExternalAuthConfig", &thv1.MCPExternalAuthConfig{ObjectMeta: meta(1), Status: thv1.ConfigStatus{
			Conditions: valid(metav1.ConditionFalse, "bearerToken requires tokenSecretRef")}}, "Degraded", "bearerToken requires tokenSecretRef"},
		{"config not yet checked", "MCPToolConfig", &thv1.MCPToolConfig{ObjectMeta: meta(1), Status: thv1.ConfigStatus{ConfigHash: "h"}}, "Progressing", "Waiting for the controller to report a status"},
		{"composite valid", "VirtualMCPCompositeToolDefinition", &thv1.VirtualMCPCompositeToolDefinition{ObjectMeta: meta(1),
			Status: thv1.VirtualMCPCompositeToolDefinitionStatus{ValidationStatus: "Valid"}}, "Healthy", "Valid"},
		{"composite invalid", "VirtualMCPCompositeToolDefinition", &thv1.VirtualMCPCompositeToolDefinition{ObjectMeta: meta(1),
			Status: thv1.VirtualMCPCompositeToolDefinitionStatus{ValidationStatus: "Invalid", ValidationErrors: []string{"step a: no tool", "step b: cycle"}}},
			"Degraded", "step a: no tool; step b: cycle"},
		{"a phase the script does not know", "MCPServer", server("Sleeping", "", 2), "Unknown", "Unknown phase Sleeping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, message, err := Health(s, asServed(t, c.kind, c.obj))
			if err != nil {
				t.Fatal(err)
			}
			if status != c.status || message != c.message {
				t.Errorf("health %s %q, want %s %q", status, message, c.status, c.message)
			}
		})
	}
}

// TestEveryPhaseIsKnown: each phase a CRD allows maps to one of Argo CD's
// statuses, so a phase added to a kind cannot read Unknown unnoticed.
func TestEveryPhaseIsKnown(t *testing.T) {
	s := script(t)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(Script()), "..", "..", "config", "crd", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			phase, ok := v.Schema.OpenAPIV3Schema.Properties["status"].Properties["phase"]
			if !ok {
				continue
			}
			for _, e := range phase.Enum {
				var p string
				if err := json.Unmarshal(e.Raw, &p); err != nil {
					t.Fatal(err)
				}
				seen++
				obj := map[string]any{"kind": crd.Spec.Names.Kind, "metadata": map[string]any{"name": "x"}, "status": map[string]any{"phase": p}}
				status, message, err := Health(s, obj)
				if err != nil || status == "Unknown" || status == "" {
					t.Errorf("%s %s phase %s: %s %q %v", crd.Spec.Names.Kind, v.Name, p, status, message, err)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no phase enum found in the CRDs")
	}
	if !strings.Contains(s, "toolhive.stacklok.dev_*") {
		t.Error("the script does not say the key it is installed under")
	}
}
