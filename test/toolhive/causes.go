package toolhive

import "regexp"

// OutputCauses are the reasons hivekeeper's bytes differ from ToolHive's
// operator's today, each with what would remove it: the groups of the
// differential test's and the handover suite's pending lists, which
// see the same differences (one side by side, the other before and after
// a switch). A difference takes the first cause that matches it, so the
// narrow ones come first.
var OutputCauses = []Cause{
	// What ToolHive v0.63.0 changed, which hivekeeper follows.
	NewCause("vmcp backend phase (v0.63.0)", "none: hivekeeper writes what ToolHive v0.63.0's operator writes, no phase in an "+
		"inline backend's metadata (allowed in the differential); against v0.47.0 an inline vMCP's config.yaml changes at a switch",
		"ConfigMap", `^data\["config\.yaml"\]\.backends\[name=[^]]*\]\.metadata\.workload_status$`, ""),

	// The RunConfig.
	NewCause("runconfig middleware_configs", "write middleware_configs as ToolHive's operator does (the list the runner would "+
		"otherwise derive at start, in its order and with its parameters)", "ConfigMap", `^data\["runconfig\.json"\]\.middleware_configs`, ""),
	NewCause("runconfig env_vars", "write env_vars MCP_TRANSPORT, MCP_PORT and FASTMCP_PORT as ToolHive's operator does",
		"ConfigMap", `^data\["runconfig\.json"\]\.env_vars`, ""),
	NewCause("runconfig permission_profile", "write ToolHive's builder's default permission profile (network, outbound allowed) "+
		"when the spec sets none", "ConfigMap", `^data\["runconfig\.json"\]\.permission_profile$`, ""),
	NewCause("runconfig empty keys", "write the keys ToolHive's Go types encode without omitempty, empty: oidc_config's, "+
		"token_exchange_config's, remote_auth_config's zero values, a remote proxy's image", "ConfigMap",
		`^data\["runconfig\.json"\]\.(oidc_config\.|token_exchange_config\.|remote_auth_config\.|image$)`, ""),
	NewCause("checksums", "compute the content and pod-template checksums as ToolHive's operator does; they follow once the "+
		"bytes they cover match", "", `checksum"\]$`, ""),
	NewCause("labels", "label ConfigMaps, RoleBindings and ServiceAccounts as ToolHive's operator does (its "+
		"toolhive.stacklok.io/* labels; none on RoleBindings and ServiceAccounts)", "", `^metadata\.labels`, ""),

	// The proxy Deployment.
	NewCause("probes", "the proxy's probes as ToolHive's operator writes them: liveness timeout 5s, a startup probe, "+
		"readiness initial delay 15s", "Deployment", `(livenessProbe|readinessProbe|startupProbe)`, ""),
	NewCause("privileged false", "write securityContext.privileged: false on the proxy container", "Deployment",
		`securityContext\.privileged$`, ""),
	NewCause("tmp emptyDir", "hivekeeper mounts an emptyDir at /tmp in the proxy pod; ToolHive's operator does not", "Deployment",
		`(volumes|volumeMounts)\[name=tmp\]$`, ""),
	NewCause("proxy args", "the runner's arguments as ToolHive's operator writes them (--foreground=true, the --k8s-pod-patch "+
		"JSON form, the remote URL's place)", "Deployment", `\.args$`, ""),
	NewCause("spec.volumes hostPath", "ToolHive's operator mounts spec.volumes' host paths into the proxy pod; hivekeeper only "+
		"records them in the RunConfig (its admission policy refuses hostPath)", "Deployment",
		`(volumes|volumeMounts)\[name=(data|cache|config|work|work-again)\]$`, ""),
	NewCause("inline authz ConfigMap", "ToolHive's operator writes an inline authorization config into ConfigMap "+
		"<name>-authz-inline and mounts it at /etc/toolhive/authz", "", `.*`, `(ConfigMap/.*-authz-inline$|Deployment/authz-inline$)`),
	NewCause("proxy env", "the proxy container's environment as ToolHive's operator writes it (its order, "+
		"TOOLHIVE_SECRETS_PROVIDER, header injection, token exchange and OTEL variables)", "Deployment", `\.env(\[| \(order\))`, ""),
	NewCause("oidc CA volume", "project only the CA bundle's key into the OIDC CA volume, as ToolHive's operator does",
		"Deployment", `oidc-ca-bundle-.*\.items$`, ""),
	NewCause("runner ServiceAccount imagePullSecrets", "copy spec.imagePullSecrets onto the runner ServiceAccount, as "+
		"ToolHive's operator does", "ServiceAccount", `^imagePullSecrets$`, ""),
}

// NewCause matches differences on objects of kind (a regular
// expression, "" for any) at a path matching path, and naming an object
// matching object ("" for any).
func NewCause(name, todo, kind, path, object string) Cause {
	k, p, o := regexp.MustCompile(kind), regexp.MustCompile(path), regexp.MustCompile(object)
	return Cause{Name: name, Todo: todo, Match: func(d Difference) bool {
		return k.MatchString(d.Kind()) && p.MatchString(d.Path) && o.MatchString(d.Object)
	}}
}
