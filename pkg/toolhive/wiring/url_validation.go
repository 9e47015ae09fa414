package wiring

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// The remote URL gate of MCPRemoteProxy and MCPServerEntry. A remote proxy
// (or a vMCP, for an entry) makes requests from inside the
// cluster, with the proxy pod's network position, to whatever remoteUrl
// names; whoever may create an MCPRemoteProxy must not be able to point it
// at the node's loopback, the cloud's metadata service or the Kubernetes
// API, and reaches private networks only when the spec opts in.
//
// The rules are ToolHive's operator's at the pinned release
// (cmd/thv-operator/pkg/validation/url_validation.go): literal addresses
// and well-known names only, no DNS resolution, so a sync never waits for
// or depends on a resolver. Two spellings that check lets through are
// refused here too: an IPv6 address with a zone (fe80::1%eth0) and a
// host name with the trailing dot of a fully qualified name
// (localhost.).

// prefixRule is an address range and what it is, for the message.
type prefixRule struct {
	prefix netip.Prefix
	what   string
}

// nameRule is a host name refused together with its subdomains.
type nameRule struct {
	name, what string
}

// neverPrefixes are refused whatever allowPrivateEndpoint says.
var neverPrefixes = []prefixRule{
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\", which reaches the host itself"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local, where cloud metadata services listen"},
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
}

// privatePrefixes are refused unless allowPrivateEndpoint is true.
var privatePrefixes = []prefixRule{
	{netip.MustParsePrefix("10.0.0.0/8"), "a private network (RFC 1918)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private network (RFC 1918)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private network (RFC 1918)"},
	{netip.MustParsePrefix("fc00::/7"), "an IPv6 unique-local network"},
}

// neverNames are refused whatever allowPrivateEndpoint says. They are
// checked before privateNames, so the API server's name under
// cluster.local stays refused when cluster.local is allowed.
var neverNames = []nameRule{
	{"localhost", "loopback"},
	{"kubernetes.default.svc.cluster.local", "the Kubernetes API"},
	{"kubernetes.default.svc", "the Kubernetes API"},
	{"kubernetes.default", "the Kubernetes API"},
	{"metadata.google.internal", "a cloud metadata service"},
}

// privateNames are refused unless allowPrivateEndpoint is true.
var privateNames = []nameRule{
	{"cluster.local", "in-cluster"},
}

// RemoteURLError says why a remote URL is refused.
type RemoteURLError struct {
	msg string
	// Allowable is true when allowPrivateEndpoint would accept the URL.
	Allowable bool
}

func (e *RemoteURLError) Error() string { return e.msg }

// CheckRemoteURL returns nil when a remote proxy may proxy to raw, and a
// *RemoteURLError saying why not otherwise. allowPrivate is
// spec.allowPrivateEndpoint. It is pure: no DNS, no network.
func CheckRemoteURL(raw string, allowPrivate bool) error {
	refuse := func(allowable bool, format string, args ...any) error {
		return &RemoteURLError{msg: fmt.Sprintf(format, args...), Allowable: allowable}
	}
	if raw == "" {
		return refuse(false, "remoteUrl is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return refuse(false, "remoteUrl does not parse: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return refuse(false, "remoteUrl must be http or https, not %q", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return refuse(false, "remoteUrl has no host")
	}

	// A zone (fe80::1%eth0) does not change the address, and no host
	// name has a '%'.
	literal, _, _ := strings.Cut(host, "%")
	if addr, err := netip.ParseAddr(literal); err == nil {
		// ::ffff:127.0.0.1 is 127.0.0.1.
		addr = addr.Unmap()
		for _, r := range neverPrefixes {
			if r.prefix.Contains(addr) {
				return refuse(false, "remoteUrl host %s is %s (%s), which a remote proxy may never reach", host, r.what, r.prefix)
			}
		}
		if !allowPrivate {
			for _, r := range privatePrefixes {
				if r.prefix.Contains(addr) {
					return refuse(true, "remoteUrl host %s is in %s (%s); set spec.allowPrivateEndpoint to true to proxy to it", host, r.what, r.prefix)
				}
			}
		}
		return nil
	}

	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if r, ok := matchName(name, neverNames); ok {
		return refuse(false, "remoteUrl host %s is %s (%s), which a remote proxy may never reach", host, r.what, r.name)
	}
	if !allowPrivate {
		if r, ok := matchName(name, privateNames); ok {
			return refuse(true, "remoteUrl host %s is %s (%s); set spec.allowPrivateEndpoint to true to proxy to it", host, r.what, r.name)
		}
	}
	return nil
}

// matchName finds the rule whose name is name or a parent domain of it.
func matchName(name string, rules []nameRule) (nameRule, bool) {
	for _, r := range rules {
		if name == r.name || strings.HasSuffix(name, "."+r.name) {
			return r, true
		}
	}
	return nameRule{}, false
}
