package v1beta1

// Condition reasons of the workload kinds (MCPServer, MCPRemoteProxy,
// VirtualMCPServer). They are part of the API: users and tools match on
// them, so they are defined once, here, and shared by every controller.
const (
	// Ready=False while the workload waits for its MCPOIDCConfig.
	ReasonWaitingForOIDC = "WaitingForOIDCConfig"
	// OIDCConfigRefValidated.
	ReasonOIDCConfigRefValid    = "OIDCConfigRefValid"
	ReasonOIDCConfigRefNotFound = "OIDCConfigRefNotFound"
	ReasonOIDCConfigRefNotValid = "OIDCConfigRefNotValid"
	// Ready=False while the workload waits for its MCPToolConfig.
	ReasonWaitingForToolConfig = "WaitingForToolConfig"
	// ToolConfigValidated (ToolHive's names).
	ReasonToolConfigValid    = "ToolConfigValid"
	ReasonToolConfigNotFound = "ToolConfigNotFound"
	ReasonToolConfigNotValid = "ToolConfigNotValid"
	// Ready=False while the workload waits for its MCPAuthzConfig.
	ReasonWaitingForAuthzConfig = "WaitingForAuthzConfig"
	// AuthzConfigRefValidated (ToolHive's names).
	ReasonAuthzConfigRefValid    = "AuthzConfigRefValid"
	ReasonAuthzConfigRefNotFound = "AuthzConfigRefNotFound"
	ReasonAuthzConfigRefNotValid = "AuthzConfigRefNotValid"
	// Ready=False while the workload waits for its MCPExternalAuthConfig.
	ReasonWaitingForExternalAuthConfig = "WaitingForExternalAuthConfig"
	// ExternalAuthConfigValidated (ToolHive's names for Valid and
	// NotFound).
	ReasonExternalAuthConfigValid    = "ExternalAuthConfigValid"
	ReasonExternalAuthConfigNotFound = "ExternalAuthConfigNotFound"
	ReasonExternalAuthConfigNotValid = "ExternalAuthConfigNotValid"
	// ReasonEnterpriseRequired is an MCPExternalAuthConfig's Valid=False
	// reason for type obo, which only ToolHive's enterprise build applies.
	// Like every Valid=False reason of the kind, its workloads'
	// ExternalAuthConfigValidated carries it too (ToolHive mirrors it).
	ReasonEnterpriseRequired = "EnterpriseRequired"
	// ReasonInvalidExternalAuthConfig is the mirrored reason when the
	// config's Valid=False condition has none.
	ReasonInvalidExternalAuthConfig = "InvalidExternalAuthConfig"
	// AuthServerRefValidated (ToolHive's names). Ready=False reports the
	// same reason while the workload waits for the referenced config.
	ReasonAuthServerRefValid         = "AuthServerRefValid"
	ReasonAuthServerRefNotFound      = "AuthServerRefNotFound"
	ReasonAuthServerRefInvalidKind   = "AuthServerRefInvalidKind"
	ReasonAuthServerRefInvalidType   = "AuthServerRefInvalidType"
	ReasonAuthServerRefInvalidConfig = "AuthServerRefInvalidConfig"
	ReasonAuthServerRefMultiUpstream = "MultiUpstreamNotSupported"
	ReasonWaitingForAuthServerConfig = "WaitingForAuthServerConfig"
	// ReasonInvalidCABundle: a CA bundle an embedded authorization
	// server names cannot be used (a malformed reference, a missing key,
	// content that is not PEM certificates), on the condition of the
	// reference the server was reached through (ToolHive's name).
	ReasonInvalidCABundle = "InvalidCABundle"
	// ReasonCABundleNotFound: the ConfigMap of such a CA bundle does not
	// exist; the workload waits for it.
	ReasonCABundleNotFound = "CABundleNotFound"
	// AuthServerConfigValidated of a VirtualMCPServer (ToolHive's names);
	// Ready=False reports the invalid reason too.
	ReasonAuthServerConfigValid   = "AuthServerConfigValid"
	ReasonAuthServerConfigInvalid = "AuthServerConfigInvalid"
	// AuthServerConfigValidated=False of a VirtualMCPServer whose Cedar
	// policies cannot get their claims from the upstream it names
	// (ToolHive's names): an explicit primaryUpstreamProvider without an
	// authorization server, or naming none of its upstreams; an
	// authorization server without upstreams.
	ReasonAuthzPrimaryProviderRequiresAuthServer = "AuthzPrimaryProviderRequiresAuthServer"
	ReasonAuthzUpstreamUnknown                   = "AuthzUpstreamUnknown"
	ReasonAuthzRequiresUpstream                  = "AuthzRequiresUpstream"
	// ConditionAuthzUpstreamSelectionWarning: True (reason
	// AuthzUpstreamAutoSelected) while a VirtualMCPServer's inline
	// authorization reads the first of several upstreams, none named.
	ConditionAuthzUpstreamSelectionWarning = "AuthzUpstreamSelectionWarning"
	ReasonAuthzUpstreamAutoSelected        = "AuthzUpstreamAutoSelected"
	// ReasonAuthzPrimaryUpstreamProviderDeprecated: the Warning event of a
	// VirtualMCPServer naming its primary upstream in
	// spec.incomingAuth.authzConfig.inline.
	ReasonAuthzPrimaryUpstreamProviderDeprecated = "AuthzPrimaryUpstreamProviderDeprecated"
	// ReasonAuthzConfigMapNotFound, ReasonAuthzConfigMapInvalid: the
	// ConfigMap an authzConfig of type configMap names is missing, or its
	// file is missing, empty, does not parse or is not one the workload's
	// authorizer takes (ToolHive's names).
	ReasonAuthzConfigMapNotFound = "AuthzConfigMapNotFound"
	ReasonAuthzConfigMapInvalid  = "AuthzConfigMapInvalid"
	// Ready=False while the workload waits for its MCPTelemetryConfig.
	ReasonWaitingForTelemetryConfig = "WaitingForTelemetryConfig"
	// TelemetryConfigRefValidated (ToolHive's names; its "not valid"
	// reason is spelled Invalid).
	ReasonTelemetryConfigRefValid    = "TelemetryConfigRefValid"
	ReasonTelemetryConfigRefNotFound = "TelemetryConfigRefNotFound"
	ReasonTelemetryConfigRefInvalid  = "TelemetryConfigRefInvalid"
	// Ready=False while the workload waits for its MCPWebhookConfig.
	ReasonWaitingForWebhookConfig = "WaitingForWebhookConfig"
	// WebhookConfigValidated (ToolHive declares the condition and its
	// "invalid" reason; the other two follow the other config kinds).
	ReasonWebhookConfigValid    = "WebhookConfigValid"
	ReasonWebhookConfigNotFound = "WebhookConfigNotFound"
	ReasonWebhookConfigInvalid  = "WebhookConfigInvalid"
	// PodTemplateValid.
	ReasonPodTemplateValid   = "ValidPodTemplateSpec"
	ReasonPodTemplateInvalid = "InvalidPodTemplateSpec"
	// Ready=False: user input no child can be built from.
	ReasonInvalidSpec = "InvalidSpec"
	// Ready=False: the vMCP configuration cannot be built.
	ReasonInvalidConfig = "InvalidConfig"
	// Ready=False: spec.serviceAccount names an account hivekeeper manages
	// for another workload.
	ReasonServiceAccountNotAllowed = "ServiceAccountNotAllowed"
	// PodTemplateValid=False (Ready=False for a field outside the
	// template): the pod would be privileged, add capabilities, use the
	// node's namespaces or a host path.
	ReasonPodSecurityNotAllowed = "PodSecurityNotAllowed"
	// Ready=False: a child of that name is controlled by something else.
	ReasonChildConflict = "ChildConflict"
	// Ready=False: the API server refused a child write.
	ReasonChildWriteFailed = "ChildWriteFailed"
	// Ready's two reasons as ToolHive's operator writes them for an
	// MCPServer, and Ready=False of an MCPServer or MCPRemoteProxy whose
	// referenced config is missing or not valid.
	ReasonReady    = "Ready"
	ReasonNotReady = "NotReady"
	// Ready, from the Deployment.
	ReasonDeploymentReady    = "DeploymentReady"
	ReasonDeploymentDegraded = "DeploymentPartiallyReady"
	ReasonDeploymentNotReady = "DeploymentNotReady"
	ReasonScaledToZero       = "ScaledToZero"
	// Ready=False, phase Failed: a vMCP pod failed and none is ready.
	ReasonDeploymentFailed = "DeploymentFailed"
	// Ready=False: the vMCP's group has no members to aggregate yet.
	ReasonNoBackends = "NoBackends"
	// Ready=False while the workload is deleted.
	ReasonTerminating = "Terminating"
	// UnsupportedFields=True: fields hivekeeper stores but does not act on.
	ReasonFieldsNotSupported = "FieldsNotSupported"
	// Event: the finalizer left an object in place that was not the proxy
	// runner's.
	ReasonCleanupSkipped = "CleanupSkipped"
	// Event (Warning, ToolHive's): spec.permissionProfile is set, and
	// ignored, as ToolHive v0.63.0's operator ignores it.
	ReasonPermissionProfileUnsupported = "PermissionProfileUnsupported"
)

// Reasons of an MCPGroup's Ready condition.
const (
	// ReasonMembershipComputed: the lists in status are the group's members.
	ReasonMembershipComputed = "MembershipComputed"
	// ReasonMembershipUnavailable: the membership index could not be read,
	// so the lists in status are the last known ones.
	ReasonMembershipUnavailable = "MembershipUnavailable"
)

// ToolHive's condition of an MCPGroup, which its `Checked` printer column
// reads: whether the members could be listed. hivekeeper writes it beside
// its Ready condition, in the same situations (True with the lists, False
// when the membership cannot be read).
const (
	ConditionMCPServersChecked         = "MCPServersChecked"
	ReasonListMCPServersCheckSucceeded = "ListMCPServersCheckSucceeded"
	ReasonListMCPServersCheckFailed    = "ListMCPServersCheckFailed"
	// MessageGroupBeingDeleted is the GroupRefValidated message ToolHive's
	// operator writes on each member (MCPServer, MCPRemoteProxy,
	// MCPServerEntry) of a group it deletes, with reason GroupRefNotFound.
	MessageGroupBeingDeleted = "Referenced MCPGroup is being deleted"
)

// Phases of an MCPRemoteProxy. There is no Stopped phase: a proxy scaled
// to zero is Pending with Ready=False reason ScaledToZero.
const (
	MCPRemoteProxyPhasePending     = "Pending"
	MCPRemoteProxyPhaseReady       = "Ready"
	MCPRemoteProxyPhaseFailed      = "Failed"
	MCPRemoteProxyPhaseTerminating = "Terminating"
)

// MCPRemoteProxy's checks of its spec before anything is deployed: the
// condition and its reasons are ToolHive's names, except
// ReasonHeaderForwardInvalid, which ToolHive's operator does not have (it
// writes such headers and its runner refuses to start).
const (
	// ConditionConfigurationValid is False, and nothing is created or
	// changed, while the spec fails a check; True otherwise.
	ConditionConfigurationValid = "ConfigurationValid"
	ReasonConfigurationValid    = "ConfigurationValid"
	// ReasonRemoteURLInvalid: remoteUrl is not http(s), or names an
	// address or host a remote proxy must not reach (a private one only
	// without spec.allowPrivateEndpoint).
	ReasonRemoteURLInvalid = "RemoteURLInvalid"
	// ReasonHeaderForwardInvalid: spec.headerForward names a header the
	// runner refuses or cannot send, or two that collide.
	ReasonHeaderForwardInvalid = "HeaderForwardInvalid"
	// ReasonAuthzPolicySyntaxInvalid: an inline Cedar policy is over
	// 8 KiB or does not parse.
	ReasonAuthzPolicySyntaxInvalid = "AuthzPolicySyntaxInvalid"
	// ReasonExternalAuthConfigFetchError: the MCPExternalAuthConfig
	// spec.externalAuthConfigRef names does not exist (ToolHive's
	// operator reads it among these checks, and names its failure so).
	ReasonExternalAuthConfigFetchError = "ExternalAuthConfigFetchError"
	// ConditionAuthConfigured: ToolHive's. A remote proxy's is False
	// (ReasonAuthInvalid) while a check fails; a vMCP's is True
	// (ReasonAuthValid) once its references are resolved.
	ConditionAuthConfigured = "AuthConfigured"
	ReasonAuthValid         = "AuthValid"
	ReasonAuthInvalid       = "AuthInvalid"
)

// Finalizers.
const (
	// MCPServerFinalizer holds an MCPServer until what the proxy runner
	// created for it (which carries no owner reference) is removed.
	MCPServerFinalizer = "mcpserver.toolhive.stacklok.dev/finalizer"
	// MCPOIDCConfigFinalizer keeps a config that workloads still reference
	// from being removed.
	MCPOIDCConfigFinalizer = "mcpoidcconfig.toolhive.stacklok.dev/finalizer"
	// MCPToolConfigFinalizer does the same for an MCPToolConfig. It is the
	// name ToolHive's operator uses, so a config that operator finalized
	// is released by hivekeeper once no workload references it.
	MCPToolConfigFinalizer = "toolhive.stacklok.dev/toolconfig-finalizer"
	// MCPAuthzConfigFinalizer does the same for an MCPAuthzConfig, again
	// with ToolHive's name.
	MCPAuthzConfigFinalizer = "mcpauthzconfig.toolhive.stacklok.dev/finalizer"
	// MCPExternalAuthConfigFinalizer does the same for an
	// MCPExternalAuthConfig, with ToolHive's name.
	MCPExternalAuthConfigFinalizer = "mcpexternalauthconfig.toolhive.stacklok.dev/finalizer"
	// MCPTelemetryConfigFinalizer does the same for an
	// MCPTelemetryConfig, with ToolHive's name.
	MCPTelemetryConfigFinalizer = "mcptelemetryconfig.toolhive.stacklok.dev/finalizer"
	// MCPWebhookConfigFinalizer does the same for an MCPWebhookConfig,
	// with ToolHive's name.
	MCPWebhookConfigFinalizer = "mcpwebhookconfig.toolhive.stacklok.dev/finalizer"
	// VirtualMCPCompositeToolDefinitionFinalizer does the same for a
	// composite tool definition; ToolHive's operator holds none, so the
	// name follows the others.
	VirtualMCPCompositeToolDefinitionFinalizer = "virtualmcpcompositetooldefinition.toolhive.stacklok.dev/finalizer"
	// MCPGroupFinalizer is ToolHive's on an MCPGroup: its operator adds
	// it and, on deletion, marks the members' GroupRefValidated False
	// before releasing it. hivekeeper adds and releases the same name, so
	// a group created under either operator deletes under the other.
	MCPGroupFinalizer = "toolhive.stacklok.dev/mcpgroup-finalizer"
)

// A VirtualMCPServer's spec.config.compositeToolRefs: ToolHive's condition
// and reasons, and the Ready reason while the server waits for them.
const (
	ConditionCompositeToolRefsValidated = "CompositeToolRefsValidated"
	ReasonCompositeToolRefsValid        = "CompositeToolRefsValid"
	ReasonCompositeToolRefNotFound      = "CompositeToolRefNotFound"
	ReasonCompositeToolRefInvalid       = "CompositeToolRefInvalid"
	ReasonWaitingForCompositeToolRefs   = "WaitingForCompositeToolDefinition"
)

// What a VirtualMCPServer's vmcp reports of its backends (status.runtime),
// and how the controller's verdict reads it, in ToolHive's words: the
// conditions vmcp sets besides Ready, each backend's health, and Ready's
// reasons once the pods are ready but backends are not.
const (
	ConditionDegraded           = "Degraded"
	ConditionBackendsDiscovered = "BackendsDiscovered"
	ReasonBackendsUnavailable   = "BackendsUnavailable"
	ReasonBackendsDegraded      = "BackendsDegraded"

	BackendStatusReady           = "ready"
	BackendStatusUnavailable     = "unavailable"
	BackendStatusDegraded        = "degraded"
	BackendStatusUnknown         = "unknown"
	BackendStatusUnauthenticated = "unauthenticated"
)

// MCPServerEntry conditions and reasons, ToolHive's names. Valid sums
// them up; GroupRefValidated, ExternalAuthConfigValidated and
// ConfigurationValid's RemoteURLInvalid are shared with the workloads.
const (
	ConditionRemoteURLValidated    = "RemoteURLValidated"
	ConditionCABundleRefValidated  = "CABundleRefValidated"
	ReasonRemoteURLValid           = "RemoteURLValid"
	ReasonEntryValid               = "ConfigValid"
	ReasonEntryInvalid             = "ConfigInvalid"
	ReasonGroupRefValidated        = "GroupRefIsValid"
	ReasonGroupRefNotReady         = "GroupRefNotReady"
	ReasonAuthConfigValid          = "AuthConfigValid"
	ReasonAuthConfigNotFound       = "AuthConfigNotFound"
	ReasonAuthConfigNotConfigured  = "AuthConfigNotConfigured"
	ReasonCABundleRefValid         = "CABundleRefValid"
	ReasonCABundleRefNotFound      = "CABundleRefNotFound"
	ReasonCABundleRefNotConfigured = "CABundleRefNotConfigured"
	// ReasonCABundleRefInvalid: a CA bundle reference that cannot be used,
	// a malformed one or a ConfigMap without its key (the workloads').
	ReasonCABundleRefInvalid = "CABundleRefInvalid"
)

// Annotations users set on an MCPServer to restart its proxy, and the one
// hivekeeper sets to record that it did.
const (
	AnnotationRestartedAt          = "mcpserver.toolhive.stacklok.dev/restarted-at"
	AnnotationRestartStrategy      = "mcpserver.toolhive.stacklok.dev/restart-strategy"
	AnnotationLastProcessedRestart = "mcpserver.toolhive.stacklok.dev/last-processed-restart"

	RestartRolling   = "rolling"
	RestartImmediate = "immediate"
)
