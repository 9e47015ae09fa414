package proxy

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/drift"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/naming"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/toolhivetest"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

func TestChecksumSurvivesOverridesAndFollowsRunConfig(t *testing.T) {
	s := newServer("v", func(s *thv1.MCPServer) { s.Spec.ResourceOverrides = toolhivetest.MCPServerOverrides["both"] })
	d1, _ := BuildMCPServer(s, Input{RunnerImage: "r"})
	tpl := d1.Deployment.Spec.Template.Annotations
	if tpl[naming.AnnotationRunConfigChecksum] == "" || tpl["vault.hashicorp.com/role"] != "mcp" {
		t.Fatalf("template annotations %v", tpl)
	}
	if _, leaked := tpl["owner"]; leaked {
		t.Errorf("deployment-level annotation leaked into the pod template: %v", tpl)
	}
	if d1.Deployment.Annotations["owner"] != "platform" {
		t.Errorf("deployment annotations %v", d1.Deployment.Annotations)
	}
	s2 := s.DeepCopy()
	s2.Spec.Args = []string{"--verbose"}
	d2, _ := BuildMCPServer(s2, Input{RunnerImage: "r"})
	if d2.Deployment.Spec.Template.Annotations[naming.AnnotationRunConfigChecksum] == tpl[naming.AnnotationRunConfigChecksum] {
		t.Error("a RunConfig change did not change the checksum")
	}
	if got := drift.DiffDeployment(d2.Deployment, d1.Deployment); len(got) == 0 {
		t.Error("a RunConfig change is not drift on the Deployment")
	}
}

func TestInvalidInputsNeverPanic(t *testing.T) {
	for name, mut := range map[string]func(*thv1.MCPServer){
		"env-with-equals":  func(s *thv1.MCPServer) { s.Spec.Env = []thv1.NameValue{{Name: "A=B", Value: "x"}} },
		"env-with-newline": func(s *thv1.MCPServer) { s.Spec.Env = []thv1.NameValue{{Name: "A\nB"}} },
		"bad-quantity":     func(s *thv1.MCPServer) { s.Spec.Resources.Limits.CPU = "lots" },
		"image-an-option":  func(s *thv1.MCPServer) { s.Spec.Image = "--k8s-pod-patch={}" },
		"pts-not-object":   func(s *thv1.MCPServer) { s.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(`[1,2]`)} },
		"pts-spec-string":  func(s *thv1.MCPServer) { s.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(`{"spec":"x"}`)} },
		"pts-env-string": func(s *thv1.MCPServer) {
			s.Spec.Secrets = secretSets["two"]
			s.Spec.PodTemplateSpec = &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"mcp","env":"x"}]}}`)}
		},
	} {
		s := newServer("x", mut)
		_, err := BuildMCPServer(s, Input{RunnerImage: "r"})
		var invalid *wiring.InvalidSpecError
		if err == nil || !errorsAs(err, &invalid) {
			t.Errorf("%s: want InvalidSpecError, got %v", name, err)
		}
	}
}

// TestGenerationEnvNamesItsAPIVersion pins the explicit fieldRef apiVersion
// in what the builder produces: the API server defaults it to "v1", and a
// build without it was the root of a perpetual update loop in the field.
// (The comparator also normalises it; this keeps the builder honest.)
func TestGenerationEnvNamesItsAPIVersion(t *testing.T) {
	d, err := BuildMCPServer(newServer("fetch"), Input{RunnerImage: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Deployment.Spec.Template.Spec.Containers[0].Env {
		if e.Name == naming.EnvMCPServerGeneration {
			if fr := e.ValueFrom.FieldRef; fr == nil || fr.APIVersion != "v1" {
				t.Fatalf("%s fieldRef %+v lacks apiVersion v1", naming.EnvMCPServerGeneration, fr)
			}
			return
		}
	}
	t.Fatalf("no %s env", naming.EnvMCPServerGeneration)
}
