package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/test/integration/framework"
)

// TestCRDRejectsInvalidInput sends objects the schemas must refuse and
// checks the API server says why, in words a user can act on. They are
// written as unstructured objects: the Go types could not even express
// some of them (a port of 70000 in an int32 field is fine, but "lots" of
// CPU is only wrong to the schema).
func TestCRDRejectsInvalidInput(t *testing.T) {
	env := framework.Get(t)
	ns := env.Namespace(t)
	server := func(spec map[string]any) (string, map[string]any) {
		base := map[string]any{"image": "ghcr.io/example/fetch:1.0"}
		for k, v := range spec {
			base[k] = v
		}
		return "mcpservers", base
	}
	cases := []struct {
		name     string
		resource string
		spec     map[string]any
		// objName, when set, is the object's name.
		objName string
		// every phrase must appear in the error message
		want []string
		// note says what ToolHive's operator then does with the input, if
		// its CRDs accept it
		note string
	}{
		{"empty image", "mcpservers", map[string]any{"image": ""}, "",
			[]string{"spec.image", "at least 1 chars long"}, ""},
		{"image starting with '-'", "mcpservers", map[string]any{"image": "--k8s-pod-patch={}"}, "",
			[]string{"spec.image", "may not start with '-'", "argument of the proxy runner"}, "the proxy runner reads it as an option"},
		{"transport tcp", "", map[string]any{"transport": "tcp"}, "",
			[]string{"spec.transport", `Unsupported value: "tcp"`, `"stdio"`, `"streamable-http"`, `"sse"`}, ""},
		{"proxyPort 70000", "", map[string]any{"proxyPort": int64(70000)}, "",
			[]string{"spec.proxyPort", "less than or equal to 65535"}, ""},
		{"sessionAffinity Sticky", "", map[string]any{"sessionAffinity": "Sticky"}, "",
			[]string{"spec.sessionAffinity", `Unsupported value: "Sticky"`, `"ClientIP"`, `"None"`}, ""},
		{"resources cpu lots", "", map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "lots"}}}, "",
			[]string{"spec.resources.limits.cpu", "cpu must be a Kubernetes quantity"}, ""},
		{"MCPServer name of 51 characters", "", nil, strings.Repeat("s", thv1.MaxMCPServerNameLength+1),
			[]string{"metadata.name", "MCPServer name may have at most 50 characters", "mcp-<name>-headless"}, "the proxy Service mcp-<name>-proxy is then refused, after other children were made"},
		{"MCPRemoteProxy name of 47 characters", "mcpremoteproxies", map[string]any{"remoteUrl": "https://mcp.example.com/mcp"}, strings.Repeat("r", thv1.MaxMCPRemoteProxyNameLength+1),
			[]string{"metadata.name", "MCPRemoteProxy name may have at most 46 characters", "mcp-<name>-remote-proxy"}, ""},
		{"VirtualMCPServer name of 59 characters", "virtualmcpservers", map[string]any{"groupRef": map[string]any{"name": "team"}, "incomingAuth": map[string]any{"type": "anonymous"}}, strings.Repeat("v", thv1.MaxVirtualMCPServerNameLength+1),
			[]string{"metadata.name", "VirtualMCPServer name may have at most 58 characters", "vmcp-<name>"}, ""},
		{"MCPOIDCConfig with both blocks", "mcpoidcconfigs", map[string]any{
			"type":                     "inline",
			"inline":                   map[string]any{"issuer": "https://idp.example.com", "clientId": "hive"},
			"kubernetesServiceAccount": map[string]any{"issuer": "https://kubernetes.default.svc"},
		}, "", []string{"kubernetesServiceAccount must be set if and only if type is kubernetesServiceAccount"}, ""},
		{"VirtualMCPServer type oidc without a reference", "virtualmcpservers", map[string]any{
			"incomingAuth": map[string]any{"type": "oidc"},
			"groupRef":     map[string]any{"name": "team"},
		}, "", []string{"spec.incomingAuth", "type oidc requires oidcConfigRef"}, ""},
	}
	kinds := map[string]string{"mcpservers": thv1.KindMCPServer, "mcpoidcconfigs": thv1.KindMCPOIDCConfig,
		"virtualmcpservers": thv1.KindVirtualMCPServer, "mcpremoteproxies": thv1.KindMCPRemoteProxy}
	createOn := func(on *framework.Env, resource, name string, spec map[string]any) error {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": thv1.SchemeGroupVersion.String(),
			"kind":       kinds[resource],
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       spec,
		}}
		_, err := on.Dynamic.Resource(thv1.SchemeGroupVersion.WithResource(resource)).Namespace(ns).
			Create(context.Background(), obj, metav1.CreateOptions{})
		return err
	}
	create := func(resource, name string, spec map[string]any) error { return createOn(env, resource, name, spec) }
	// The same inputs go to ToolHive's CRDs of the release users run, on
	// an API server of their own: the report's last column is their
	// answer.
	toolhiveEnv := toolhiveCRDServer(t, ns)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource, spec := tc.resource, tc.spec
			if resource == "" || resource == "mcpservers" {
				resource, spec = server(tc.spec)
			}
			name := tc.objName
			if name == "" {
				name = "invalid-" + string(rune('a'+i))
			}
			err := create(resource, name, spec)
			if err == nil {
				t.Fatalf("the API server accepted %s", tc.name)
			}
			t.Logf("rejected: %v", err)
			if !apierrors.IsInvalid(err) {
				t.Errorf("error is not 422 Invalid: %v", err)
			}
			for _, phrase := range tc.want {
				if !strings.Contains(err.Error(), phrase) {
					t.Errorf("message does not say %q:\n%v", phrase, err)
				}
			}
			prefix := fmt.Sprintf("%s.%s %q is invalid: ", kinds[resource], thv1.SchemeGroupVersion.Group, name)
			answer := "accepted"
			if tc.note != "" {
				answer += ": " + tc.note
			}
			if err := createOn(toolhiveEnv, resource, name, spec); err != nil {
				answer = "rejected: " + strings.TrimPrefix(err.Error(), prefix)
			}
			t.Logf("ToolHive's CRDs: %s", answer)
			recordInput(t, tc.name, strings.TrimPrefix(err.Error(), prefix), answer)
		})
	}

	// The longest names are accepted: the limits refuse nothing they need not.
	for resource, limit := range map[string]int{"mcpservers": thv1.MaxMCPServerNameLength, "mcpremoteproxies": thv1.MaxMCPRemoteProxyNameLength, "virtualmcpservers": thv1.MaxVirtualMCPServerNameLength} {
		spec := map[string]any{"image": "ghcr.io/example/fetch:1.0"}
		switch resource {
		case "mcpremoteproxies":
			spec = map[string]any{"remoteUrl": "https://mcp.example.com/mcp"}
		case "virtualmcpservers":
			spec = map[string]any{"groupRef": map[string]any{"name": "team"}, "incomingAuth": map[string]any{"type": "anonymous"}}
		}
		if err := create(resource, strings.Repeat("x", limit), spec); err != nil {
			t.Errorf("a %s named with %d characters, the limit, was refused: %v", kinds[resource], limit, err)
		}
	}
}

// toolhiveCRDs is the release of ToolHive whose CRDs the bad inputs are
// also given: the release users run (TOOLHIVE_VERSION).
var toolhiveCRDs = framework.ToolHiveNewestRelease

// toolhiveCRDServer starts an API server with ToolHive's CRDs of
// toolhiveCRDs and namespace ns, stopped when the test ends, and records
// the release for the report.
func toolhiveCRDServer(t *testing.T, ns string) *framework.Env {
	t.Helper()
	version, src, err := framework.ToolHiveSource(toolhiveCRDs)
	if err != nil {
		t.Fatalf("ToolHive's source: %v", err)
	}
	srv, err := framework.Start(framework.Options{CRDDir: filepath.Join(src, "deploy", "charts", "operator-crds", "files", "crds")})
	if err != nil {
		t.Fatalf("an API server with ToolHive %s's CRDs: %v", version, err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	})
	thvEnv, err := framework.NewEnv(srv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := thvEnv.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setToolHiveRelease(version)
	return thvEnv
}
