package handover_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hivekeeper/hivekeeper/test/deliberate"
	"github.com/hivekeeper/hivekeeper/test/toolhive"
)

// allowed is a difference at a switch that hivekeeper makes on purpose:
// docs/compatibility.md's "The differential test" names it (Field, in
// backticks) with its reason and its one-time cost at a switch.
type allowed struct {
	Field, Reason, Cost string
	// entries lists the difference exactly, object by object, for the
	// load's cases.
	entries func(cases []*toolhive.Case) []toolhive.Exception
}

// allowedAtSwitch is the whole list.
var allowedAtSwitch = []allowed{
	{
		Field: "roleRef",
		Reason: "hivekeeper binds each proxy runner's ServiceAccount to a ClusterRole the chart creates once (least privilege, " +
			"no Role per workload to write); ToolHive's operator binds a Role of its own per workload",
		Cost: "each runner RoleBinding is deleted and created again at each switch (a roleRef cannot change in place); " +
			"no pod restarts, the runner's permissions do not lapse for longer than the two requests",
		entries: runnerBindings,
	},
	{
		Field: "RoleBinding (switch --back)",
		Reason: "switch --back creates the RoleBindings hivekeeper bound to its ClusterRoles again, bound to ToolHive's Roles of " +
			"their names (ToolHive's operator never changes a binding's roleRef): the runners get ToolHive's grants back",
		Cost:    "each runner, vMCP and registry API RoleBinding is created again at switch --back; no pod restarts",
		entries: recreatedBack(concat(runnerBindings, vmcpBindings, registryBindings)),
	},
	{
		Field: "vMCP roleRef",
		Reason: "hivekeeper binds a vMCP's ServiceAccount to one of two ClusterRoles the chart creates once, the narrowest set vmcp " +
			"calls in its mode (the controller never reads a Secret); ToolHive's operator binds a Role of its own per vMCP",
		Cost: "each vMCP RoleBinding is deleted and created again at the switch to hivekeeper (a roleRef cannot change in place); " +
			"none back, ToolHive's operator keeps the binding as it finds it; no pod restarts",
		entries: vmcpBindings,
	},
	{
		Field: "outgoingAuth.default.type",
		Reason: "for a default of type discovered ToolHive's operator writes strategy type discovered, which vmcp validate " +
			"refuses; hivekeeper writes unauthenticated, what ToolHive's converter maps discovered to",
		Cost: "the vMCP's config.yaml differs, so its Deployment rolls at each switch",
		entries: concat(
			bothWays(`data["config.yaml"].outgoingAuth.default.type`, `"discovered"`, `"unauthenticated"`, "table/24-vmcp-config.yaml ConfigMap/cfg-vmcp-vmcp-config"),
			vmcpRoll("table/24-vmcp-config.yaml", "cfg-vmcp",
				checksums{"", "c87814cc465630e9ae74e275da09d7a2d12afbcb94bd0c2dff8ccd09ff2373cb", "c8fdc533d6dacba0df813118feb8b86c138b0c92e3d07cfb566171cc7191ccae"},
				checksums{"production", "cfab6b3fe39652dc99b63338ca3750508a1700b5c1cce6b3ac7bf6d37b81befb", "52ef3297ed1930afefbec6294a41ae0b40a9d26e569f6076d7bb5bf94477a214"})),
	},
	{
		Field: "backends[].type",
		Reason: "an MCPServerEntry's backend with a CA bundle: ToolHive's operator writes its caBundlePath without type entry, " +
			"which vmcp refuses, so ToolHive's vMCP does not start; hivekeeper writes type entry there, and no type otherwise",
		Cost: "the vMCP's config.yaml differs, so its Deployment rolls at each switch (ToolHive's pod was not running)",
		entries: concat(
			bothWays(`data["config.yaml"].backends[name=ent-far].type`, toolhive.None, `"entry"`, "table/35-vmcp-entries.yaml ConfigMap/ent-vmcp-vmcp-config"),
			vmcpRoll("table/35-vmcp-entries.yaml", "ent-vmcp",
				checksums{"", "35c36511607f2740d0bfd31be9b77760f826671defcd5390e9c1a658971981a0", "219d5350f013633860fd493b61dc8f0fe285aad12d041bbde44495447950274c"},
				checksums{"production", "f90cbe8a7bb5613449100aea6d9b0f293114269bc0a89610675d14ca329ce6e7", "10b868707731d7423a94c14cf6097f336ce3d6b0341f5f8f574e27b5f4dc3a23"})),
	},
	{
		Field: "xaa client secret variables",
		Reason: "in discovered mode ToolHive's operator names no variable for the client secrets of an xaa strategy of " +
			"spec.outgoingAuth, so its vmcp has none and every call through that strategy fails; hivekeeper names the variables " +
			"the vmcp container gets, as ToolHive's operator does in inline mode",
		Cost: "the vMCP's config.yaml differs, so its Deployment rolls at each switch",
		entries: concat(
			bothWays(`data["config.yaml"].outgoingAuth.default.xaa.idpClientSecretEnv`, toolhive.None, `"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_DEFAULT"`,
				"table/46-vmcp-xaa-discovered.yaml ConfigMap/xdi-vmcp-vmcp-config"),
			bothWays(`data["config.yaml"].outgoingAuth.default.xaa.targetClientSecretEnv`, toolhive.None, `"TOOLHIVE_XAA_TARGET_CLIENT_SECRET_XDI_DEFAULT"`,
				"table/46-vmcp-xaa-discovered.yaml ConfigMap/xdi-vmcp-vmcp-config"),
			bothWays(`data["config.yaml"].outgoingAuth.backends.xdi-plain.xaa.idpClientSecretEnv`, toolhive.None, `"TOOLHIVE_XAA_IDP_CLIENT_SECRET_XDI_BACKEND"`,
				"table/46-vmcp-xaa-discovered.yaml ConfigMap/xdi-vmcp-vmcp-config"),
			vmcpRoll("table/46-vmcp-xaa-discovered.yaml", "xdi-vmcp",
				checksums{"", "4662a1bca8ebf9f9b289dd209dd81a486b6bf46321928efe2c1b65848e16cb3e", "5e5ddeee16668ccc6bd7ffc7feaea3e7a9f0ea4caf46424e4bd0e6e4165c7960"},
				checksums{"production", "048d740c43854118a20926ac0434116c43879aeb4160a1bb3c35e3aaf7c0bf1a", "f2b6c798bd53cc59cbca8fd51741b615a7977bf9db985ccb7cc0494a7c5290b6"})),
	},
	{
		Field:  "spec.volumes host paths",
		Reason: "ToolHive's operator also mounts each spec.volumes host path into the proxy runner's pod, which does not use it; hivekeeper writes them to the RunConfig only",
		Cost:   "a proxy with spec.volumes rolls at each switch",
		entries: listed([]toolhive.Exception{
			{Path: "spec.template.spec.containers[name=toolhive].volumeMounts[name=cache]", A: "(none)", B: `{"mountPath":"/cache","name":"cache"}`, Objects: []string{"back-to-toolhive table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "spec.template.spec.containers[name=toolhive].volumeMounts[name=data]", A: "(none)", B: `{"mountPath":"/data","name":"data","readOnly":true}`, Objects: []string{"back-to-toolhive table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "spec.template.spec.volumes[name=cache]", A: "(none)", B: `{"hostPath":{"path":"/var/cache/mcp","type":""},"name":"cache"}`, Objects: []string{"back-to-toolhive table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "spec.template.spec.volumes[name=data]", A: "(none)", B: `{"hostPath":{"path":"/srv/data","type":""},"name":"data"}`, Objects: []string{"back-to-toolhive table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "spec.template.spec.containers[name=toolhive].volumeMounts[name=cache]", A: `{"mountPath":"/cache","name":"cache"}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "spec.template.spec.containers[name=toolhive].volumeMounts[name=data]", A: `{"mountPath":"/data","name":"data","readOnly":true}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "spec.template.spec.volumes[name=cache]", A: `{"hostPath":{"path":"/var/cache/mcp","type":""},"name":"cache"}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "spec.template.spec.volumes[name=data]", A: `{"hostPath":{"path":"/srv/data","type":""},"name":"data"}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "(writes)", A: "(none)", B: "patch", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/volumes-only"}},
			{Path: "(writes)", A: "(none)", B: "patch", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/runtime-all"}},
			{Path: "(writes)", A: "(none)", B: "patch", Objects: []string{"to-hivekeeper table/21-permission-profile-configmap.yaml Deployment/profile-configmap"}},
			{Path: "spec.template.spec.containers[name=toolhive].volumeMounts[name=data]", A: `{"mountPath":"/data","name":"data"}`, B: "(none)", Objects: []string{"to-hivekeeper table/21-permission-profile-configmap.yaml Deployment/profile-configmap"}},
			{Path: "spec.template.spec.volumes[name=data]", A: `{"hostPath":{"path":"/srv/data","type":""},"name":"data"}`, B: "(none)", Objects: []string{"to-hivekeeper table/21-permission-profile-configmap.yaml Deployment/profile-configmap"}},
			{Path: "spec.template.spec.containers[name=toolhive].volumeMounts[name=config]", A: `{"mountPath":"/config","name":"config","readOnly":true}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/volumes-only"}},
			{Path: "spec.template.spec.containers[name=toolhive].volumeMounts[name=work-again]", A: `{"mountPath":"/work/","name":"work-again"}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/volumes-only"}},
			{Path: "spec.template.spec.containers[name=toolhive].volumeMounts[name=work]", A: `{"mountPath":"/work","name":"work"}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/volumes-only"}},
			{Path: "spec.template.spec.volumes[name=config]", A: `{"hostPath":{"path":"/etc/mcp","type":""},"name":"config"}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/volumes-only"}},
			{Path: "spec.template.spec.volumes[name=work-again]", A: `{"hostPath":{"path":"/srv/other","type":""},"name":"work-again"}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/volumes-only"}},
			{Path: "spec.template.spec.volumes[name=work]", A: `{"hostPath":{"path":"/srv/work","type":""},"name":"work"}`, B: "(none)", Objects: []string{"to-hivekeeper table/15-runtime-features.yaml Deployment/volumes-only"}},
		}),
	},
	{
		Field:   "RoleBinding/roleRef",
		Reason:  "an MCPRegistry's registry API account is bound to the chart's ClusterRole (the same rules as ToolHive's Role, which hivekeeper cannot write)",
		Cost:    "each registry API RoleBinding is deleted and created again at the switch to hivekeeper, and at switch --back; no pod restarts",
		entries: registryBindings,
	},
	{
		Field:  "ToolHive's take-over updates",
		Reason: "ToolHive's operator updates these objects once when it takes them back, writing what it finds (no field of theirs changes)",
		Cost:   "one update each at the switch back; no pod restarts",
		entries: listed([]toolhive.Exception{
			{Path: "(writes)", A: "(none)", B: "update", Objects: []string{"back-to-toolhive examples/embedding-servers/basic-embedding.yaml StatefulSet/basic-embedding"}},
			{Path: "(writes)", A: "(none)", B: "update", Objects: []string{"back-to-toolhive examples/embedding-servers/embedding-advanced.yaml StatefulSet/advanced-embedding"}},
			{Path: "(writes)", A: "(none)", B: "update", Objects: []string{"back-to-toolhive examples/embedding-servers/embedding-with-cache.yaml StatefulSet/embedding-with-cache"}},
			{Path: "(writes)", A: "(none)", B: "update", Objects: []string{"back-to-toolhive examples/virtual-mcps/vmcp_optimizer_all_options.yaml StatefulSet/optimizer-embedding"}},
			{Path: "(writes)", A: "(none)", B: "update", Objects: []string{"back-to-toolhive examples/virtual-mcps/vmcp_optimizer_quickstart.yaml StatefulSet/optimizer-embedding"}},
			{Path: "(writes)", A: "(none)", B: "update", Objects: []string{"back-to-toolhive table/25-remote-pod-template.yaml Deployment/remote-templated"}},
		}),
	},
}

// bothWays is a difference of one path on one object of a case that
// goes from ToolHive's operator's value to hivekeeper's at the switch
// there, and back at the switch back.
func bothWays(path, toolhiveValue, hivekeeperValue, object string) func([]*toolhive.Case) []toolhive.Exception {
	return func([]*toolhive.Case) []toolhive.Exception {
		return []toolhive.Exception{
			{Cause: "allowed", Path: path, A: toolhiveValue, B: hivekeeperValue, Objects: []string{"to-hivekeeper " + object}},
			{Cause: "allowed", Path: path, A: hivekeeperValue, B: toolhiveValue, Objects: []string{"back-to-toolhive " + object}},
		}
	}
}

// vmcpRoll is what a difference in a vMCP's config.yaml brings at each
// switch: its content checksum and its pod template's follow, and the
// ConfigMap and Deployment are written. sums are each operator's checksum
// in each scenario (its values add to the config, so the sums differ).
func vmcpRoll(caseName, vmcp string, sums ...checksums) func([]*toolhive.Case) []toolhive.Exception {
	config, deployment := caseName+" ConfigMap/"+vmcp+"-vmcp-config", caseName+" Deployment/"+vmcp
	lists := []func([]*toolhive.Case) []toolhive.Exception{
		listed([]toolhive.Exception{
			{Path: "(writes)", A: toolhive.None, B: "patch", Objects: []string{"to-hivekeeper " + config}},
			{Path: "(writes)", A: toolhive.None, B: "patch", Objects: []string{"to-hivekeeper " + deployment}},
			{Path: "(writes)", A: toolhive.None, B: "update", Objects: []string{"back-to-toolhive " + config}},
			{Path: "(writes)", A: toolhive.None, B: "update", Objects: []string{"back-to-toolhive " + deployment}},
		}),
	}
	for _, sum := range sums {
		lists = append(lists, inScenario(sum.scenario, concat(
			bothWays(`metadata.annotations["toolhive.stacklok.dev/content-checksum"]`, toolhive.Show(sum.thv), toolhive.Show(sum.hive), config),
			bothWays(`spec.template.metadata.annotations["toolhive.stacklok.dev/runconfig-checksum"]`, toolhive.Show(sum.thv), toolhive.Show(sum.hive), deployment))))
	}
	return concat(lists...)
}

// checksums are a config's checksums written by ToolHive's operator and
// by hivekeeper in a scenario ("" the first).
type checksums struct{ scenario, thv, hive string }

// inScenario names the objects of entries as the scenario's.
func inScenario(name string, entries func([]*toolhive.Case) []toolhive.Exception) func([]*toolhive.Case) []toolhive.Exception {
	return func(cases []*toolhive.Case) []toolhive.Exception {
		out := entries(cases)
		for i := range out {
			objects := slices.Clone(out[i].Objects)
			for j, o := range objects {
				objects[j] = scenario{name: name}.label(o)
			}
			out[i].Objects = objects
			// A back switch's checksums are ToolHive's operator's to
			// write when it gets to the object.
			out[i].Optional = out[i].Optional || (name != "" && strings.Contains(objects[0], "back-to-toolhive "))
		}
		return out
	}
}

// concat joins lists of entries.
func concat(lists ...func([]*toolhive.Case) []toolhive.Exception) func([]*toolhive.Case) []toolhive.Exception {
	return func(cases []*toolhive.Case) []toolhive.Exception {
		var out []toolhive.Exception
		for _, l := range lists {
			out = append(out, l(cases)...)
		}
		return out
	}
}

// listed is a difference listed exactly, object by object, as the
// suite saw it. What ToolHive's operator writes when it takes the objects
// back is optional: it gets to some of them after the suite's settle
// window in some runs (its one worker and its rate limiter), and what it
// writes then is its own; hivekeeper's side, the switch to it, is exact.
func listed(exceptions []toolhive.Exception) func([]*toolhive.Case) []toolhive.Exception {
	return func([]*toolhive.Case) []toolhive.Exception {
		out := make([]toolhive.Exception, len(exceptions))
		for i, e := range exceptions {
			e.Cause = "allowed"
			e.Optional = len(e.Objects) == 1 && strings.HasPrefix(e.Objects[0], "back-to-toolhive ")
			out[i] = e
		}
		return out
	}
}

// allowedDifferences expands allowedAtSwitch for the load.
func allowedDifferences(cases []*toolhive.Case) []toolhive.Exception {
	var out []toolhive.Exception
	for _, a := range allowedAtSwitch {
		for _, e := range a.entries(cases) {
			e.Cause = a.Field + ": " + a.Reason + "; at a switch: " + a.Cost
			out = append(out, e)
		}
	}
	return out
}

// runnerBindings are, for every MCPServer and MCPRemoteProxy of the load
// ToolHive's operator runs, the runner RoleBinding recreated at the
// switch to hivekeeper, its roleRef moving from ToolHive's Role to
// hivekeeper's ClusterRole. Switching back changes no roleRef: ToolHive's
// operator leaves a binding's roleRef as it finds it.
func runnerBindings(cases []*toolhive.Case) []toolhive.Exception {
	var out []toolhive.Exception
	for _, c := range cases {
		for _, w := range c.Workloads {
			var binding, clusterRole string
			switch {
			case waiting[c.Name+" "+w.ID()] != "":
				continue
			case w.Kind == "MCPServer" && stdio(c, w.Name):
				binding, clusterRole = w.Name+"-proxy-runner", "hivekeeper-stdio-proxy-runner"
			case w.Kind == "MCPServer":
				binding, clusterRole = w.Name+"-proxy-runner", "hivekeeper-proxy-runner"
			case w.Kind == "MCPRemoteProxy":
				binding, clusterRole = w.Name+"-remote-proxy-runner", "hivekeeper-remote-proxy-runner"
			default:
				continue
			}
			object := []string{"to-hivekeeper " + c.Name + " RoleBinding/" + binding}
			out = append(out,
				toolhive.Exception{Path: pathRecreated, A: "the uid before", B: "a new uid", Objects: object},
				toolhive.Exception{Path: "roleRef.kind", A: toolhive.Show("Role"), B: toolhive.Show("ClusterRole"), Objects: object},
				toolhive.Exception{Path: "roleRef.name", A: toolhive.Show(binding), B: toolhive.Show(clusterRole), Objects: object},
				toolhive.Exception{Path: pathWrites, A: toolhive.None, B: "create,delete", Objects: object},
			)
		}
	}
	return out
}

// vmcpBindings are, for every VirtualMCPServer of the load with an account
// of its own, its RoleBinding recreated at the switch to hivekeeper, its
// roleRef moving from ToolHive's Role to hivekeeper's ClusterRole of its
// mode. Switching back changes no roleRef.
func vmcpBindings(cases []*toolhive.Case) []toolhive.Exception {
	var out []toolhive.Exception
	for _, c := range cases {
		for _, o := range c.Objects {
			if o.GetKind() != "VirtualMCPServer" || notBoth[c.Name+" VirtualMCPServer "+o.GetName()] != "" {
				continue
			}
			if sa, _, _ := unstructured.NestedString(o.Object, "spec", "serviceAccount"); sa != "" {
				continue
			}
			clusterRole := "hivekeeper-vmcp-discovered"
			if src, _, _ := unstructured.NestedString(o.Object, "spec", "outgoingAuth", "source"); src == "inline" {
				clusterRole = "hivekeeper-vmcp-inline"
			}
			binding := o.GetName() + "-vmcp"
			object := []string{"to-hivekeeper " + c.Name + " RoleBinding/" + binding}
			out = append(out,
				toolhive.Exception{Path: pathRecreated, A: "the uid before", B: "a new uid", Objects: object},
				toolhive.Exception{Path: "roleRef.kind", A: toolhive.Show("Role"), B: toolhive.Show("ClusterRole"), Objects: object},
				toolhive.Exception{Path: "roleRef.name", A: toolhive.Show(binding), B: toolhive.Show(clusterRole), Objects: object},
				toolhive.Exception{Path: pathWrites, A: toolhive.None, B: "create,delete", Objects: object},
			)
		}
	}
	return out
}

// notBoth are the VirtualMCPServers of the load whose RoleBinding one of
// the operators does not write, so no switch recreates it, with the
// reason.
var notBoth = map[string]string{
	"examples/virtual-mcps/vmcp_inline_incoming_auth.yaml VirtualMCPServer inline-auth-vmcp": "its MCPOIDCConfig is not in " +
		"the file: both operators wait for it",
	"examples/virtual-mcps/vmcp_production_full.yaml VirtualMCPServer production-vmcp": "its MCPOIDCConfig is not in the " +
		"file: both operators wait for it",
	"examples/virtual-mcps/vmcp_with_oidcconfig_ref.yaml VirtualMCPServer shared-auth-vmcp": "its MCPOIDCConfig's client " +
		"secret is missing: ToolHive's operator reads it and waits, hivekeeper (which reads no Secret) runs the vMCP",
}

// stdio reports whether the case's MCPServer name runs a stdio server
// (the transport's default), whose runner hivekeeper binds to the stdio
// runner ClusterRole.
func stdio(c *toolhive.Case, name string) bool {
	for _, o := range c.Objects {
		if o.GetKind() == "MCPServer" && o.GetName() == name {
			t, _, _ := unstructured.NestedString(o.Object, "spec", "transport")
			return t == "" || t == "stdio"
		}
	}
	return false
}

// waiting are the workloads whose runner RoleBinding hivekeeper leaves
// as it is, because it writes nothing for them, with the reason.
var waiting = map[string]string{
	"table/20-remote-private-refused.yaml MCPRemoteProxy remote-private": "its remote URL is private and not allowed; both operators refuse it",
	"examples/external-auth/mcpserver_with_external_auth.yaml MCPServer fetch-with-auth": "its MCPExternalAuthConfig is in " +
		"another file: hivekeeper waits for it",
	"table/50-auth-server-validation.yaml MCPServer asv-delegate-audience-server": "both operators refuse its authorization " +
		"server's delegate client, whose audience is not the resource URL",
}

// pendingList describes pending_test.go.
var pendingList = toolhive.PendingList{
	File:    "pending_test.go",
	Package: "handover_test",
	Var:     "pendingDifferences",
	Doc: "pendingDifferences is the work list of TestHandover: every difference a switch from ToolHive's operator to\n" +
		"hivekeeper (to-hivekeeper) or back (back-to-toolhive) makes today that is not one hivekeeper makes on purpose\n" +
		"(allowedAtSwitch). Each entry names its path, the values before and after the switch and every object showing\n" +
		"it; an entry no longer seen fails the test. Causes are in causes_test.go.",
	Command: "go test ./test/handover -run TestHandover -update-pending",
	Causes:  handoverCauses,
}

// TestAllowedDifferencesDocumented keeps allowedAtSwitch and the list of
// deliberate differences docs/compatibility.md's table is generated from
// (test/deliberate) the same: every field allowed here is listed there
// for the handover suite, and no other.
func TestAllowedDifferencesDocumented(t *testing.T) {
	var fields []string
	for _, a := range allowedAtSwitch {
		fields = append(fields, a.Field)
	}
	slices.Sort(fields)
	if want := deliberate.Fields(deliberate.SuiteHandover); !slices.Equal(fields, want) {
		t.Errorf("allowedAtSwitch accepts %q; test/deliberate lists %q for the handover suite: list each deliberate difference in both", fields, want)
	}
}

// registryBindings are the registry API RoleBindings recreated at the
// switch to hivekeeper, bound to the chart's ClusterRole.
var registryBindings = listed([]toolhive.Exception{
	{Path: "(recreated)", A: "the uid before", B: "a new uid", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-api.yaml RoleBinding/api-configyaml-registry-api"}},
	{Path: "(writes)", A: "(none)", B: "create,delete", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-api.yaml RoleBinding/api-configyaml-registry-api"}},
	{Path: "roleRef.kind", A: `"Role"`, B: `"ClusterRole"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-api.yaml RoleBinding/api-configyaml-registry-api"}},
	{Path: "roleRef.name", A: `"api-configyaml-registry-api"`, B: `"hivekeeper-registry-api"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-api.yaml RoleBinding/api-configyaml-registry-api"}},
	{Path: "(recreated)", A: "the uid before", B: "a new uid", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-configmap.yaml RoleBinding/configmap-configyaml-registry-api"}},
	{Path: "(writes)", A: "(none)", B: "create,delete", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-configmap.yaml RoleBinding/configmap-configyaml-registry-api"}},
	{Path: "roleRef.kind", A: `"Role"`, B: `"ClusterRole"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-configmap.yaml RoleBinding/configmap-configyaml-registry-api"}},
	{Path: "roleRef.name", A: `"configmap-configyaml-registry-api"`, B: `"hivekeeper-registry-api"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-configmap.yaml RoleBinding/configmap-configyaml-registry-api"}},
	{Path: "(recreated)", A: "the uid before", B: "a new uid", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-git-auth.yaml RoleBinding/git-auth-configyaml-registry-api"}},
	{Path: "(writes)", A: "(none)", B: "create,delete", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-git-auth.yaml RoleBinding/git-auth-configyaml-registry-api"}},
	{Path: "roleRef.kind", A: `"Role"`, B: `"ClusterRole"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-git-auth.yaml RoleBinding/git-auth-configyaml-registry-api"}},
	{Path: "roleRef.name", A: `"git-auth-configyaml-registry-api"`, B: `"hivekeeper-registry-api"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-git-auth.yaml RoleBinding/git-auth-configyaml-registry-api"}},
	{Path: "(recreated)", A: "the uid before", B: "a new uid", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-minimal.yaml RoleBinding/minimal-configyaml-registry-api"}},
	{Path: "(writes)", A: "(none)", B: "create,delete", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-minimal.yaml RoleBinding/minimal-configyaml-registry-api"}},
	{Path: "roleRef.kind", A: `"Role"`, B: `"ClusterRole"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-minimal.yaml RoleBinding/minimal-configyaml-registry-api"}},
	{Path: "roleRef.name", A: `"minimal-configyaml-registry-api"`, B: `"hivekeeper-registry-api"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-minimal.yaml RoleBinding/minimal-configyaml-registry-api"}},
	{Path: "(recreated)", A: "the uid before", B: "a new uid", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-oauth.yaml RoleBinding/oauth-configyaml-registry-api"}},
	{Path: "(writes)", A: "(none)", B: "create,delete", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-oauth.yaml RoleBinding/oauth-configyaml-registry-api"}},
	{Path: "roleRef.kind", A: `"Role"`, B: `"ClusterRole"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-oauth.yaml RoleBinding/oauth-configyaml-registry-api"}},
	{Path: "roleRef.name", A: `"oauth-configyaml-registry-api"`, B: `"hivekeeper-registry-api"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-oauth.yaml RoleBinding/oauth-configyaml-registry-api"}},
	{Path: "(recreated)", A: "the uid before", B: "a new uid", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-pgpass.yaml RoleBinding/pgpass-configyaml-registry-api"}},
	{Path: "(writes)", A: "(none)", B: "create,delete", Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-pgpass.yaml RoleBinding/pgpass-configyaml-registry-api"}},
	{Path: "roleRef.kind", A: `"Role"`, B: `"ClusterRole"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-pgpass.yaml RoleBinding/pgpass-configyaml-registry-api"}},
	{Path: "roleRef.name", A: `"pgpass-configyaml-registry-api"`, B: `"hivekeeper-registry-api"`, Objects: []string{"to-hivekeeper examples/mcp-registries/mcpregistry-configyaml-pgpass.yaml RoleBinding/pgpass-configyaml-registry-api"}},
})

// recreatedBack are, for each RoleBinding list recreates at the switch to
// hivekeeper, its recreation at switch --back: the plugin creates it
// again bound to ToolHive's Role (its roleRef then mirrors the switch's,
// which the suite takes as taken back).
func recreatedBack(list func([]*toolhive.Case) []toolhive.Exception) func([]*toolhive.Case) []toolhive.Exception {
	return func(cases []*toolhive.Case) []toolhive.Exception {
		var out []toolhive.Exception
		for _, e := range list(cases) {
			if e.Path != pathRecreated {
				continue
			}
			back := e
			back.Objects = nil
			for _, o := range e.Objects {
				back.Objects = append(back.Objects, strings.Replace(o, "to-hivekeeper ", "back-to-toolhive ", 1))
			}
			out = append(out, back)
		}
		return out
	}
}
