// Package wiring is the translation of ToolHive's API, feature by feature,
// into what ToolHive's runtime reads: the RunConfig's blocks, and the
// environment variables, volumes and mounts a proxy or vMCP pod needs for
// them. One file per feature, named after the file of ToolHive's operator
// that wires the same feature (authserver.go, authz.go, oidc.go,
// tokenexchange.go, telemetry.go, webhook.go, tools_config.go, audit.go,
// podtemplatespec_patch.go, ...), so that a port can be checked against
// ToolHive's code side by side; the *_validation.go files are the checks
// a config kind's controller reports as Valid=False.
//
// Everything here is a pure function of a spec and the configs it
// references, resolved beforehand: no client, lister, index or framework.
// User input nothing can be built from is an *InvalidSpecError, which the
// reconcile outline turns into a condition and an event.
package wiring
