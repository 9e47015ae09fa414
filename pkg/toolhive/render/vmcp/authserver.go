package vmcp

import (
	"fmt"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/schema"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// authServer wires spec.authServerConfig (see wiring.InlineAuthServer)
// and renders its configuration: the YAML of ToolHive's authserver
// RunConfig, which ToolHive's operator writes under its own key of the
// configuration ConfigMap and vmcp reads beside config.yaml. Empty without
// an authorization server.
func authServer(v *thv1.VirtualMCPServer, oidc wiring.OIDCWiring) (wiring.AuthServerWiring, string, error) {
	w, err := wiring.InlineAuthServer(v.Spec.AuthServerConfig, oidc.Resolved)
	if err != nil || w.Config == nil {
		return w, "", err
	}
	out, err := schema.MarshalAuthServerConfig(w.Config)
	if err != nil {
		return w, "", invalidSpec("spec.authServerConfig: %v", err)
	}
	return w, out, nil
}

// applyAuthServer does to config.yaml what ToolHive's operator does when
// the vMCP runs an authorization server with upstreams: token exchange
// and AWS STS strategies that name no subject provider use the first
// upstream's token, and authorization reads its claims from that upstream
// (primaryUpstreamProvider).
func applyAuthServer(cfg map[string]any, w wiring.AuthServerWiring) {
	first := w.FirstUpstreamName()
	if first == "" {
		return
	}
	if in, ok := cfg[keyIncomingAuth].(*schema.VMCPIncomingAuth); ok && in.Authz != nil {
		in.Authz.PrimaryUpstreamProvider = first
	}
	out, _ := cfg[keyOutgoingAuth].(map[string]any)
	inject := func(s any) {
		bs, ok := s.(*schema.VMCPBackendStrategy)
		if !ok || bs == nil {
			return
		}
		if bs.TokenExchange != nil && bs.TokenExchange.SubjectProviderName == "" {
			bs.TokenExchange.SubjectProviderName = first
		}
		if bs.AwsSts != nil && bs.AwsSts.SubjectProviderName == "" {
			bs.AwsSts.SubjectProviderName = first
		}
	}
	inject(out["default"])
	switch backends := out["backends"].(type) {
	case map[string]any:
		for _, s := range backends {
			inject(s)
		}
	case map[string]*schema.VMCPBackendStrategy:
		for _, s := range backends {
			inject(s)
		}
	}
}

// replacedConfigSections are the sections of spec.config that config.yaml
// takes from other spec fields instead, as ToolHive's operator does, by
// section: what replaces it.
var replacedConfigSections = []struct{ section, by string }{
	{keyIncomingAuth, "spec.incomingAuth"},
	{keyOutgoingAuth, "spec.outgoingAuth"},
	{keyTelemetry, "spec.telemetryConfigRef"},
	{keyBackends, "the members of spec.groupRef"},
}

// UnsupportedFields names the spec fields hivekeeper stores without acting
// on, for the UnsupportedFields condition: sections of spec.config that
// other fields replace (which ToolHive's operator ignores too; it warns of
// spec.config.telemetry only).
func UnsupportedFields(v *thv1.VirtualMCPServer) []string {
	var out []string
	cfg, _ := decodeConfig(v) // an undecodable config is the build's error
	for _, r := range replacedConfigSections {
		if val, set := cfg[r.section]; set && val != nil {
			out = append(out, fmt.Sprintf("spec.config.%s (replaced by %s)", r.section, r.by))
		}
	}
	return out
}
