package proxy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The permission profile and its mounts follow ToolHive's builder: a
// builtin profile by name, volumes joined to it (read-only ones as read
// mounts), a second volume at a container path already mounted left out,
// and with no profile but volumes the builder's default, network.
func TestPermissionProfileAndMounts(t *testing.T) {
	none := schema.BuiltinProfile(schema.ProfileNone)
	network := schema.BuiltinProfile(schema.ProfileNetwork)
	for name, tc := range map[string]struct {
		ref        *thv1.PermissionProfileRef
		vols       []thv1.Volume
		nameOrPath string
		read       []string
		write      []string
		base       *schema.PermissionProfile
	}{
		"nothing": {},
		"none":    {ref: &thv1.PermissionProfileRef{Type: "builtin", Name: "none"}, nameOrPath: "none", base: none},
		// The schema's default type.
		"untyped-network": {ref: &thv1.PermissionProfileRef{Name: "network"}, nameOrPath: "network", base: network},
		"stdio-alias":     {ref: &thv1.PermissionProfileRef{Type: "builtin", Name: "stdio"}, nameOrPath: "stdio", base: none},
		"volumes-default": {
			vols: []thv1.Volume{{Name: "a", HostPath: "/h/a", MountPath: "/a", ReadOnly: true}, {Name: "b", HostPath: "/h/b", MountPath: "/b"},
				{Name: "b2", HostPath: "/h/b2", MountPath: "/b/"}},
			read: []string{"/h/a:/a"}, write: []string{"/h/b:/b"}, base: network,
		},
		"configmap-with-volumes": {
			ref:        &thv1.PermissionProfileRef{Type: "configmap", Name: "cm", Key: "p.json"},
			vols:       []thv1.Volume{{Name: "a", HostPath: "/h/a", MountPath: "/a"}},
			nameOrPath: "/etc/toolhive/profiles/p.json",
		},
		// ToolHive reads a trailing ":ro" as read-only whatever made it.
		"mount-named-ro": {
			ref:  &thv1.PermissionProfileRef{Type: "builtin", Name: "none"},
			vols: []thv1.Volume{{Name: "a", HostPath: "/h/a", MountPath: "ro"}}, nameOrPath: "none", read: []string{"/h/a"}, base: none,
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer("x", func(s *thv1.MCPServer) { s.Spec.PermissionProfile, s.Spec.Volumes = tc.ref, tc.vols })
			o, err := resolveRuntime(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if o.PermissionProfileNameOrPath != tc.nameOrPath {
				t.Errorf("name or path %q, want %q", o.PermissionProfileNameOrPath, tc.nameOrPath)
			}
			var want *schema.PermissionProfile
			if tc.base != nil {
				p := *tc.base
				p.Read, p.Write = tc.read, tc.write
				want = &p
			}
			if !reflect.DeepEqual(o.PermissionProfile, want) {
				g, _ := json.Marshal(o.PermissionProfile)
				w, _ := json.Marshal(want)
				t.Errorf("profile %s, want %s", g, w)
			}
		})
	}
	// The builtin profiles as toolhive-core encodes them.
	if got := mustJSON(t, none); got != `{"name":"none","network":{"outbound":{},"inbound":{}}}` {
		t.Errorf("none: %s", got)
	}
	if got := mustJSON(t, network); got != `{"name":"network","network":{"outbound":{"insecure_allow_all":true},"inbound":{}}}` {
		t.Errorf("network: %s", got)
	}
}

// FuzzBuildRuntime is FuzzBuild for the fields that tune the runner:
// whatever volume paths, profile references, refill periods, token
// counts, sizes and Redis settings reach Build, it does not panic, any
// error is an InvalidSpecError, what it builds has no drift against what
// the API server would store, and a Redis password's Secret never shows
// in the RunConfig.
//
//	go test -run='^$' -fuzz=FuzzBuildRuntime -fuzztime=60s ./pkg/toolhive/render/proxy/
func FuzzBuildRuntime(f *testing.F) {
	f.Add("/srv/data", "/data", true, "builtin", "none", "", "1m", int32(10), int64(0), int32(-1), "redis", "redis:6379", "s", "k")
	f.Add("/a", "ro", false, "configmap", "cm", "p.json", "1h30m", int32(1), int64(4096), int32(0), "memory", "", "", "")
	f.Add("", "/b", false, "", "network", "", "0s", int32(0), int64(-1), int32(2), "redis", "", "", "")
	f.Fuzz(func(t *testing.T, hostPath, mountPath string, readOnly bool, profileType, profileName, profileKey, refill string,
		maxTokens int32, bodySize int64, backendReplicas int32, provider, address, secretName, secretKey string) {
		for _, p := range []*string{&hostPath, &mountPath, &profileType, &profileName, &profileKey, &refill, &provider, &address, &secretName, &secretKey} {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
		}
		s := newServer("fuzz", func(s *thv1.MCPServer) {
			s.Spec.Volumes = []thv1.Volume{{Name: "v", HostPath: hostPath, MountPath: mountPath, ReadOnly: readOnly}}
			if profileType != "" || profileName != "" {
				s.Spec.PermissionProfile = &thv1.PermissionProfileRef{Type: profileType, Name: profileName, Key: profileKey}
			}
			s.Spec.Audit = &thv1.AuditConfig{Enabled: readOnly}
			s.Spec.MaxRequestBodySize = bodySize
			if backendReplicas >= 0 {
				s.Spec.BackendReplicas = &backendReplicas
			}
			if provider != "" {
				s.Spec.SessionStorage = &thv1.SessionStorageConfig{Provider: provider, Address: address}
				if secretName != "" {
					s.Spec.SessionStorage.PasswordRef = &thv1.SecretKeyRef{Name: secretName, Key: secretKey}
				}
			}
			if refill != "" {
				b := &thv1.RateLimitBucket{MaxTokens: maxTokens, RefillPeriod: refill}
				s.Spec.RateLimiting = &thv1.RateLimitConfig{Shared: b, Tools: []thv1.ToolRateLimitConfig{{Name: "t", PerUser: b}}}
			}
		})
		d, err := BuildMCPServer(s, Input{RunnerImage: "runner:test"})
		if err != nil {
			var invalid *wiring.InvalidSpecError
			if !errorsAs(err, &invalid) {
				t.Fatalf("Build returned %T %q, want an *wiring.InvalidSpecError", err, err)
			}
			return
		}
		assertMCPServerNoDrift(t, "fuzz", d)
		var rc schema.RunConfig
		if err := json.Unmarshal([]byte(d.RunConfig.Data[schema.Key]), &rc); err != nil {
			t.Fatalf("RunConfig is not JSON: %v", err)
		}
		if secretName != "" && len(secretName) > 3 && strings.Contains(d.RunConfig.Data[schema.Key], `"`+secretName+`"`) {
			t.Errorf("the Redis password's Secret %q is in the RunConfig", secretName)
		}
	})
}

// spec.proxyReadTimeout reaches the RunConfig as ToolHive's builder
// writes it: time.Duration's String, nothing for zero, and a negative one
// refuses the server.
func TestProxyReadTimeout(t *testing.T) {
	for in, want := range map[string]string{"30s": "30s", "1m": "1m0s", "90s": "1m30s", "500ms": "500ms", "0s": "", "0": ""} {
		s := newServer("x", func(s *thv1.MCPServer) { s.Spec.ProxyReadTimeout = &in })
		d, err := BuildMCPServer(s, Input{RunnerImage: "runner:test"})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var rc map[string]any
		if err := json.Unmarshal([]byte(d.RunConfig.Data[schema.Key]), &rc); err != nil {
			t.Fatal(err)
		}
		got, set := rc["proxy_read_timeout"]
		if want == "" && set || want != "" && got != want {
			t.Errorf("%s: proxy_read_timeout %v (set %v), want %q", in, got, set, want)
		}
	}
	for _, in := range []string{"-1s", "soon"} {
		s := newServer("x", func(s *thv1.MCPServer) { s.Spec.ProxyReadTimeout = &in })
		var invalid *wiring.InvalidSpecError
		if _, err := BuildMCPServer(s, Input{RunnerImage: "runner:test"}); !errorsAs(err, &invalid) || !strings.Contains(invalid.Message, "spec.proxyReadTimeout") {
			t.Errorf("%s: error %v, want an InvalidSpecError naming spec.proxyReadTimeout", in, err)
		}
	}
}
