// Package release is the one place where what hivekeeper writes depends on
// the ToolHive release it writes for. ToolHive ships almost every week,
// and a cluster switched from ToolHive's operator must get, byte for byte,
// what that operator wrote, so each difference between the supported
// releases' output is one field of Release, and the builders read the
// field instead of comparing versions.
//
// A new ToolHive release is taken on by measuring what its operator writes
// against the previous release's (make toolhive-delta), then adding a row
// to Releases with a field for each difference found.
package release

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Release is what one ToolHive release's operator writes differently from
// the others hivekeeper supports.
type Release struct {
	// Version is the release, as its tags name it (v0.66.0).
	Version string
	// WorkloadUsageMetrics: the operator passes its usage-metrics settings
	// to the container of every MCPServer, MCPRemoteProxy and
	// VirtualMCPServer (TOOLHIVE_SKIP_UPDATE_CHECK,
	// TOOLHIVE_USAGE_METRICS_ENABLED, or the installation's
	// TOOLHIVE_ANONYMOUS_ID).
	WorkloadUsageMetrics bool
	// AuthServerTLSPort: a workload whose embedded authorization server has
	// a tlsListener gets an https-auth container port and Service port
	// 8443 after http.
	AuthServerTLSPort bool
	// SPIFFEFileBundles: SPIFFE trust domains whose bundle source is a
	// file are accepted, other bundle sources are refused, and SPIFFE
	// X.509 client authentication needs an https issuer and client ids
	// that are not delegate clients. Without it every SPIFFE trust domain
	// is refused as not yet enforced.
	SPIFFEFileBundles bool
}

// Releases are the ToolHive releases whose output hivekeeper writes, oldest
// first. Newest is the last.
var Releases = []Release{
	{Version: "v0.63.0"},
	{Version: "v0.66.0", WorkloadUsageMetrics: true, AuthServerTLSPort: true, SPIFFEFileBundles: true},
}

// Newest is the newest release hivekeeper writes for, its default.
func Newest() Release { return Releases[len(Releases)-1] }

// Versions lists the supported releases, oldest first.
func Versions() []string {
	out := make([]string, len(Releases))
	for i, r := range Releases {
		out[i] = r.Version
	}
	return out
}

// Lookup returns the release named exactly v (with or without its leading
// "v").
func Lookup(v string) (Release, error) {
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	i := slices.IndexFunc(Releases, func(r Release) bool { return r.Version == v })
	if i < 0 {
		return Release{}, fmt.Errorf("ToolHive release %q is not one hivekeeper writes for (%s)", v, strings.Join(Versions(), ", "))
	}
	return Releases[i], nil
}

// For returns the release whose output a ToolHive operator at version v
// writes: the newest supported release not newer than v, and exact=true
// when v is that release (ToolHive's patch releases are not told apart).
// A version older than every supported release, or one that is not a
// version (a "latest" or digest tag), is an error: what it writes is not
// known.
func For(v string) (r Release, exact bool, err error) {
	want, ok := parse(v)
	if !ok {
		return Release{}, false, fmt.Errorf("%q is not a ToolHive release version", v)
	}
	for i := len(Releases) - 1; i >= 0; i-- {
		have, _ := parse(Releases[i].Version)
		if compare(have, want) <= 0 {
			return Releases[i], have[0] == want[0] && have[1] == want[1], nil
		}
	}
	return Release{}, false, fmt.Errorf("ToolHive %s is older than every release hivekeeper writes for (%s)", v, strings.Join(Versions(), ", "))
}

// Target is the release hivekeeper writes for a ToolHive operator at
// version v: For's where it knows one; the oldest supported release for
// an operator older than all of them (what ToolHive's own upgrade would
// write next); the newest when v is no version ("" or "latest").
func Target(v string) Release {
	r, _, err := For(v)
	switch {
	case err == nil:
		return r
	case IsVersion(v):
		return Releases[0]
	}
	return Newest()
}

// IsVersion says whether v reads as a release version (vMAJOR.MINOR.PATCH).
func IsVersion(v string) bool {
	_, ok := parse(v)
	return ok
}

// parse reads vMAJOR.MINOR.PATCH (a pre-release or build suffix ignored).
func parse(v string) ([3]int, bool) {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	var out [3]int
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

func compare(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}
