package vmcp

import (
	"fmt"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/release"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// authServer wires spec.authServerConfig and its
// spec.authServerUpstreamFilter (see wiring.InlineAuthServer) and renders
// their configuration: the YAML of ToolHive's authserver RunConfig, which
// ToolHive's operator writes under its own key of the configuration
// ConfigMap and vmcp reads beside config.yaml. Empty without an
// authorization server.
func authServer(v *thv1.VirtualMCPServer, oidc wiring.OIDCWiring, r release.Release) (wiring.AuthServerWiring, string, error) {
	w, err := wiring.InlineAuthServer(wiring.Owner{Namespace: v.Namespace, Name: v.Name}, v.Spec.AuthServerConfig, v.Spec.AuthServerUpstreamFilter, oidc.Resolved, r)
	if err != nil || w.Config == nil {
		return w, "", err
	}
	out, err := schema.MarshalAuthServerConfig(w.Config)
	if err != nil {
		return w, "", invalidSpec("spec.authServerConfig: %v", err)
	}
	return w, out, nil
}

// UnsupportedFields names the spec fields hivekeeper stores without acting
// on, for the UnsupportedFields condition: sections of spec.config that
// other fields replace (which ToolHive's operator ignores too; it warns of
// spec.config.telemetry only).
func UnsupportedFields(v *thv1.VirtualMCPServer) []string {
	var out []string
	c := v.Spec.Config
	if c == nil {
		return out
	}
	replaced := []struct {
		section, by string
		set         bool
	}{
		{"incomingAuth", "spec.incomingAuth", c.IncomingAuth != nil},
		{"outgoingAuth", "spec.outgoingAuth", c.OutgoingAuth != nil},
		{"telemetry", "spec.telemetryConfigRef", c.Telemetry != nil},
		{"sessionStorage", "spec.sessionStorage", c.SessionStorage != nil},
		{"backends", "the members of spec.groupRef, in inline mode", len(c.Backends) > 0 && !Discovers(v)},
	}
	for _, r := range replaced {
		if r.set {
			out = append(out, fmt.Sprintf("spec.config.%s (replaced by %s)", r.section, r.by))
		}
	}
	return out
}
