package wiring

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckRemoteURL pins the remote URL gate: which URLs are refused
// always, which only without allowPrivateEndpoint, and that a refusal
// says whether allowPrivateEndpoint would help.
func TestCheckRemoteURL(t *testing.T) {
	const (
		ok      = "ok"      // accepted either way
		private = "private" // refused unless allowPrivateEndpoint
		never   = "never"   // refused either way
	)
	for _, c := range []struct {
		url, want string
	}{
		// Public endpoints.
		{"https://mcp.example.com/mcp", ok},
		{"http://legacy.example.com:8080/sse", ok},
		{"https://8.8.8.8/mcp", ok},
		{"https://[2001:db8::1]:8443/mcp", ok},
		{"http://192.0.2.10:9000/mcp", ok},  // documentation range, not private
		{"http://172.32.0.1/mcp", ok},       // just outside 172.16.0.0/12
		{"http://11.0.0.1/mcp", ok},         // just outside 10.0.0.0/8
		{"http://169.255.0.1/mcp", ok},      // just outside link-local
		{"http://fetch.team-a.svc/mcp", ok}, // not resolved, and not under cluster.local
		{"http://notlocalhost/mcp", ok},     // a suffix only matches whole labels
		{"http://mycluster.local/mcp", ok},
		{"http://kubernetes.default.example.com/mcp", ok},

		// Private networks and in-cluster names.
		{"http://10.0.0.5/mcp", private},
		{"http://172.16.0.1/mcp", private},
		{"http://172.31.255.255/mcp", private},
		{"http://192.168.1.10:8080/mcp", private},
		{"http://[fd00::1]/mcp", private},
		{"http://[fc00::1]/mcp", private},
		{"http://[::ffff:10.1.2.3]/mcp", private},
		{"http://fetch.team-a.svc.cluster.local:8080/mcp", private},
		{"http://FETCH.Team-A.SVC.Cluster.Local/mcp", private},
		{"http://cluster.local/mcp", private},
		{"http://fetch.team-a.svc.cluster.local./mcp", private},

		// Never: loopback, link-local, metadata, the API server.
		{"http://127.0.0.1:8080/mcp", never},
		{"http://127.1.2.3/mcp", never},
		{"http://0.0.0.0/mcp", never},
		{"http://169.254.169.254/latest/meta-data", never},
		{"http://[::1]/mcp", never},
		{"http://[::]/mcp", never},
		{"http://[fe80::1]/mcp", never},
		{"http://[fe80::1%25eth0]/mcp", never},
		{"http://[::ffff:127.0.0.1]/mcp", never},
		{"http://[::ffff:169.254.169.254]/mcp", never},
		{"http://localhost:3000/mcp", never},
		{"http://LocalHost/mcp", never},
		{"http://localhost./mcp", never},
		{"http://api.localhost/mcp", never},
		{"https://kubernetes.default.svc/api", never},
		{"https://kubernetes.default.svc.cluster.local/api", never},
		{"https://kubernetes.default/api", never},
		{"http://metadata.google.internal/computeMetadata/v1", never},
		{"http://user:pass@127.0.0.1/mcp", never},

		// Not a URL the proxy can use.
		{"", never},
		{"ftp://mcp.example.com", never},
		{"http:///mcp", never},
		{"http://%zz/", never},
	} {
		for _, allow := range []bool{false, true} {
			err := CheckRemoteURL(c.url, allow)
			refused := err != nil
			wantRefused := c.want == never || (c.want == private && !allow)
			if refused != wantRefused {
				t.Errorf("CheckRemoteURL(%q, allowPrivateEndpoint=%t) = %v, want refused %t", c.url, allow, err, wantRefused)
				continue
			}
			if !refused {
				continue
			}
			var e *RemoteURLError
			if !errors.As(err, &e) {
				t.Errorf("CheckRemoteURL(%q): %T, want *RemoteURLError", c.url, err)
				continue
			}
			if e.Allowable != (c.want == private) {
				t.Errorf("CheckRemoteURL(%q, %t): Allowable = %t: %v", c.url, allow, e.Allowable, err)
			}
			if hint := strings.Contains(e.Error(), "allowPrivateEndpoint"); hint != e.Allowable {
				t.Errorf("CheckRemoteURL(%q, %t): message %q names allowPrivateEndpoint: %t, want %t", c.url, allow, e.Error(), hint, e.Allowable)
			}
		}
	}
}
