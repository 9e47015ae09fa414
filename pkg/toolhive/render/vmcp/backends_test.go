package vmcp

import (
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
)

// ToolHive's name of an entry's CA bundle volume, within a DNS label.
func TestCABundleVolumeName(t *testing.T) {
	if got := caBundleVolumeName("far"); got != "ca-bundle-far" {
		t.Errorf("short: %s", got)
	}
	long := strings.Repeat("a", 43) + "-" + strings.Repeat("b", 20)
	got := caBundleVolumeName(long)
	if len(got) > 63 || !strings.HasPrefix(got, "ca-bundle-"+strings.Repeat("a", 43)+"-") || strings.Contains(got, "--") {
		t.Errorf("long: %s (%d)", got, len(got))
	}
	if got := caBundleVolumeName("far.example"); len(validation.IsDNS1123Label(got)) != 0 || !strings.HasPrefix(got, "ca-bundle-far-example-") {
		t.Errorf("dotted: %s", got)
	}
}

// A name taken by an MCPServer and an MCPRemoteProxy of the group is one
// backend, the MCPServer's: vmcp identifies backends by name.
func TestBackendNameTakenTwiceIsTheMCPServers(t *testing.T) {
	got := membersOf([]any{newMember("x", testGroup), newRemoteMember("x", testGroup), newRemoteMember("y", testGroup)})
	if len(got) != 2 || got[0].URL != "http://mcp-x-proxy.team-a.svc.cluster.local:8080/mcp" || got[1].Name != "y" {
		t.Fatalf("backends %+v", got)
	}
}

// A member's annotations reach its backend's metadata, Kubernetes' own
// excepted: kubectl apply's last-applied-configuration changes with every
// apply, and recording it would rewrite config.yaml and roll the vMCP each
// time.
func TestBackendMetadataLeavesKubernetesAnnotationsOut(t *testing.T) {
	own := map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"MCPServer"}`,
		"kubernetes.io/description":                        "fetch",
		"deployment.kubernetes.io/revision":                "4",
		"k8s.io/owner":                                     "x",
	}
	member := newMember("fetch", testGroup, func(s *thv1.MCPServer) {
		s.Annotations = map[string]string{"team.example.com/owner": "search", "kubernetesish.example.com/x": "kept"}
		for k, v := range own {
			s.Annotations[k] = v
		}
	})
	got := membersOf([]any{member})
	if len(got) != 1 {
		t.Fatalf("backends %+v", got)
	}
	want := map[string]string{
		"team.example.com/owner": "search", "kubernetesish.example.com/x": "kept",
		metaToolType: toolTypeMCP, metaWorkloadType: "mcp_server", metaNamespace: testNS,
	}
	if !maps.Equal(got[0].Metadata, want) {
		t.Errorf("metadata %v, want %v", got[0].Metadata, want)
	}
}

// An entry's backend is typed entry only beside its caBundlePath, the one
// place vmcp reads the type: ToolHive's operator writes no type, and
// writing one on every entry would rewrite config.yaml (and roll the vMCP)
// on a switch from it.
func TestEntryBackendTypedOnlyWithCABundle(t *testing.T) {
	plain := newEntry("plain", testGroup)
	withCA := newEntry("far", testGroup, func(e *thv1.MCPServerEntry) {
		e.Spec.CABundleRef = &thv1.CABundleSource{ConfigMapRef: &thv1.ConfigMapKeyRef{Name: "far-ca"}}
	})
	if b := entryBackend(plain); b.Type != "" || b.CABundlePath != "" {
		t.Errorf("plain entry: type %q, caBundlePath %q; want neither", b.Type, b.CABundlePath)
	}
	if b := entryBackend(withCA); b.Type != backendTypeEntry || b.CABundlePath != "/etc/toolhive/ca-bundles/far/ca.crt" {
		t.Errorf("entry with a CA bundle: type %q, caBundlePath %q", b.Type, b.CABundlePath)
	}
}
