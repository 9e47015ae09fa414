package vmcp

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
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
