package workload

import (
	"k8s.io/client-go/tools/cache"

	thv1 "github.com/hivekeeper/hivekeeper/pkg/apis/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/framework"
	"github.com/hivekeeper/hivekeeper/pkg/generated/clientset/versioned"
	informers "github.com/hivekeeper/hivekeeper/pkg/generated/informers/externalversions"
	thlisters "github.com/hivekeeper/hivekeeper/pkg/generated/listers/toolhive/v1beta1"
	"github.com/hivekeeper/hivekeeper/pkg/index"
	"github.com/hivekeeper/hivekeeper/pkg/toolhive/wiring"
)

// The config kinds workloads reference by name. Each is one declaration;
// its controller is ConfigController with the kind's validation.

// OIDCConfigs is the MCPOIDCConfig reference every workload kind may make.
var OIDCConfigs = ConfigKind[*thv1.MCPOIDCConfig]{
	Kind:      thv1.KindMCPOIDCConfig,
	Resource:  "mcpoidcconfigs",
	Finalizer: thv1.MCPOIDCConfigFinalizer,
	Informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPOIDCConfigs().Informer()
	},
	Get: func(indexer cache.Indexer, ns, name string) (*thv1.MCPOIDCConfig, error) {
		return thlisters.NewMCPOIDCConfigLister(indexer).MCPOIDCConfigs(ns).Get(name)
	},
	Patch: func(c versioned.Interface, ns string) framework.PatchFunc[*thv1.MCPOIDCConfig] {
		return c.ToolhiveV1beta1().MCPOIDCConfigs(ns).Patch
	},
	Spec:      func(c *thv1.MCPOIDCConfig) any { return &c.Spec },
	Validate:  wiring.ValidateOIDCConfig,
	Index:     index.ByOIDCConfig,
	Condition: thv1.ConditionOIDCConfigRefValidated,
	Valid:     thv1.ReasonOIDCConfigRefValid, NotFound: thv1.ReasonOIDCConfigRefNotFound,
	NotValid: thv1.ReasonOIDCConfigRefNotValid, Waiting: thv1.ReasonWaitingForOIDC,
}

// ToolConfigs is the MCPToolConfig reference of MCPServers and
// MCPRemoteProxies.
var ToolConfigs = ConfigKind[*thv1.MCPToolConfig]{
	// ToolHive v0.63.0's reasons of this kind's Valid condition.
	ValidReason: thv1.ReasonValidationSucceeded, InvalidReason: thv1.ReasonValidationFailed,
	Kind:      thv1.KindMCPToolConfig,
	Resource:  "mcptoolconfigs",
	Finalizer: thv1.MCPToolConfigFinalizer,
	Informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPToolConfigs().Informer()
	},
	Get: func(indexer cache.Indexer, ns, name string) (*thv1.MCPToolConfig, error) {
		return thlisters.NewMCPToolConfigLister(indexer).MCPToolConfigs(ns).Get(name)
	},
	Patch: func(c versioned.Interface, ns string) framework.PatchFunc[*thv1.MCPToolConfig] {
		return c.ToolhiveV1beta1().MCPToolConfigs(ns).Patch
	},
	Spec:      func(c *thv1.MCPToolConfig) any { return &c.Spec },
	Validate:  wiring.ValidateToolConfig,
	Index:     index.ByToolConfig,
	Condition: thv1.ConditionToolConfigValidated,
	Valid:     thv1.ReasonToolConfigValid, NotFound: thv1.ReasonToolConfigNotFound,
	NotValid: thv1.ReasonToolConfigNotValid, Waiting: thv1.ReasonWaitingForToolConfig,
}

// AuthzConfigs is the MCPAuthzConfig reference of MCPServers and
// MCPRemoteProxies.
var AuthzConfigs = ConfigKind[*thv1.MCPAuthzConfig]{
	Kind:      thv1.KindMCPAuthzConfig,
	Resource:  "mcpauthzconfigs",
	Finalizer: thv1.MCPAuthzConfigFinalizer,
	Informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPAuthzConfigs().Informer()
	},
	Get: func(indexer cache.Indexer, ns, name string) (*thv1.MCPAuthzConfig, error) {
		return thlisters.NewMCPAuthzConfigLister(indexer).MCPAuthzConfigs(ns).Get(name)
	},
	Patch: func(c versioned.Interface, ns string) framework.PatchFunc[*thv1.MCPAuthzConfig] {
		return c.ToolhiveV1beta1().MCPAuthzConfigs(ns).Patch
	},
	Spec:      func(c *thv1.MCPAuthzConfig) any { return &c.Spec },
	Validate:  wiring.ValidateAuthzConfig,
	Index:     index.ByAuthzConfig,
	Condition: thv1.ConditionAuthzConfigRefValidated,
	Valid:     thv1.ReasonAuthzConfigRefValid, NotFound: thv1.ReasonAuthzConfigRefNotFound,
	NotValid: thv1.ReasonAuthzConfigRefNotValid, Waiting: thv1.ReasonWaitingForAuthzConfig,
}

// ExternalAuthConfigs is the MCPExternalAuthConfig reference of MCPServers
// and MCPRemoteProxies.
var ExternalAuthConfigs = ConfigKind[*thv1.MCPExternalAuthConfig]{
	// ToolHive v0.63.0's reasons of this kind's Valid condition.
	ValidReason: thv1.ReasonValidationSucceeded, InvalidReason: thv1.ReasonValidationFailed,
	Kind:      thv1.KindMCPExternalAuthConfig,
	Resource:  "mcpexternalauthconfigs",
	Finalizer: thv1.MCPExternalAuthConfigFinalizer,
	Informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPExternalAuthConfigs().Informer()
	},
	Get: func(indexer cache.Indexer, ns, name string) (*thv1.MCPExternalAuthConfig, error) {
		return thlisters.NewMCPExternalAuthConfigLister(indexer).MCPExternalAuthConfigs(ns).Get(name)
	},
	Patch: func(c versioned.Interface, ns string) framework.PatchFunc[*thv1.MCPExternalAuthConfig] {
		return c.ToolhiveV1beta1().MCPExternalAuthConfigs(ns).Patch
	},
	Spec:          func(c *thv1.MCPExternalAuthConfig) any { return &c.Spec },
	Validate:      wiring.ValidateExternalAuthConfig,
	ReleaseChecks: wiring.ExternalAuthConfigReleaseChecks,
	Refuse:        wiring.RefuseExternalAuthConfig,
	Advisories:    wiring.ExternalAuthAdvisories,
	Index:         index.ByExternalAuthConfig,
	AlsoIndexes:   []string{index.ByAuthServerRef},
	Condition:     thv1.ConditionExternalAuthConfigValidated,
	Valid:         thv1.ReasonExternalAuthConfigValid, NotFound: thv1.ReasonExternalAuthConfigNotFound,
	NotValid: thv1.ReasonExternalAuthConfigNotValid, Waiting: thv1.ReasonWaitingForExternalAuthConfig,
	MirrorInvalid: true,
}

// TelemetryConfigs is the MCPTelemetryConfig reference of MCPServers and
// MCPRemoteProxies.
var TelemetryConfigs = ConfigKind[*thv1.MCPTelemetryConfig]{
	// ToolHive v0.63.0's reasons of this kind's Valid condition.
	ValidReason: thv1.ReasonValidationSucceeded, InvalidReason: thv1.ReasonValidationFailed,
	Kind:      thv1.KindMCPTelemetryConfig,
	Resource:  "mcptelemetryconfigs",
	Finalizer: thv1.MCPTelemetryConfigFinalizer,
	Informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPTelemetryConfigs().Informer()
	},
	Get: func(indexer cache.Indexer, ns, name string) (*thv1.MCPTelemetryConfig, error) {
		return thlisters.NewMCPTelemetryConfigLister(indexer).MCPTelemetryConfigs(ns).Get(name)
	},
	Patch: func(c versioned.Interface, ns string) framework.PatchFunc[*thv1.MCPTelemetryConfig] {
		return c.ToolhiveV1beta1().MCPTelemetryConfigs(ns).Patch
	},
	Spec:      func(c *thv1.MCPTelemetryConfig) any { return &c.Spec },
	Validate:  wiring.ValidateTelemetryConfig,
	Index:     index.ByTelemetryConfig,
	Condition: thv1.ConditionTelemetryConfigRefValidated,
	Valid:     thv1.ReasonTelemetryConfigRefValid, NotFound: thv1.ReasonTelemetryConfigRefNotFound,
	NotValid: thv1.ReasonTelemetryConfigRefInvalid, Waiting: thv1.ReasonWaitingForTelemetryConfig,
}

// WebhookConfigs is the MCPWebhookConfig reference of MCPServers (ToolHive
// gives MCPRemoteProxy no such reference).
var WebhookConfigs = ConfigKind[*thv1.MCPWebhookConfig]{
	// ToolHive v0.63.0's reasons of this kind's Valid condition.
	ValidReason: thv1.ReasonValidationSucceeded, InvalidReason: thv1.ReasonValidationFailed,
	Kind:      thv1.KindMCPWebhookConfig,
	Resource:  "mcpwebhookconfigs",
	Finalizer: thv1.MCPWebhookConfigFinalizer,
	Informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().MCPWebhookConfigs().Informer()
	},
	Get: func(indexer cache.Indexer, ns, name string) (*thv1.MCPWebhookConfig, error) {
		return thlisters.NewMCPWebhookConfigLister(indexer).MCPWebhookConfigs(ns).Get(name)
	},
	Patch: func(c versioned.Interface, ns string) framework.PatchFunc[*thv1.MCPWebhookConfig] {
		return c.ToolhiveV1beta1().MCPWebhookConfigs(ns).Patch
	},
	Spec:      func(c *thv1.MCPWebhookConfig) any { return &c.Spec },
	Validate:  wiring.ValidateWebhookConfig,
	Index:     index.ByWebhookConfig,
	Condition: thv1.ConditionWebhookConfigValidated,
	Valid:     thv1.ReasonWebhookConfigValid, NotFound: thv1.ReasonWebhookConfigNotFound,
	NotValid: thv1.ReasonWebhookConfigInvalid, Waiting: thv1.ReasonWaitingForWebhookConfig,
}

// AuthServerConfigs is spec.authServerRef of MCPServers and
// MCPRemoteProxies: the MCPExternalAuthConfig kind again, reached through
// its own index and reported in its own condition. Its controller is
// ExternalAuthConfigs' (AlsoIndexes), so this declaration is never given
// to NewConfigController.
var AuthServerConfigs = func() ConfigKind[*thv1.MCPExternalAuthConfig] {
	k := ExternalAuthConfigs
	k.Index, k.AlsoIndexes = index.ByAuthServerRef, nil
	k.Condition = thv1.ConditionAuthServerRefValidated
	k.Valid, k.NotFound = thv1.ReasonAuthServerRefValid, thv1.ReasonAuthServerRefNotFound
	k.NotValid, k.Waiting = thv1.ReasonAuthServerRefInvalidConfig, thv1.ReasonWaitingForAuthServerConfig
	// ToolHive's authServerRef condition keeps its own reason.
	k.MirrorInvalid = false
	return k
}()

// CompositeToolDefinitions is the reference of VirtualMCPServers to
// VirtualMCPCompositeToolDefinitions (spec.config.compositeToolRefs). Its
// status keeps ToolHive's fields (validationStatus, validationErrors,
// referencingVirtualServers) beside the shared ones, derived from them.
var CompositeToolDefinitions = ConfigKind[*thv1.VirtualMCPCompositeToolDefinition]{
	Kind:      thv1.KindVirtualMCPCompositeToolDefinition,
	Resource:  "virtualmcpcompositetooldefinitions",
	Finalizer: thv1.VirtualMCPCompositeToolDefinitionFinalizer,
	Informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Toolhive().V1beta1().VirtualMCPCompositeToolDefinitions().Informer()
	},
	Get: func(indexer cache.Indexer, ns, name string) (*thv1.VirtualMCPCompositeToolDefinition, error) {
		return thlisters.NewVirtualMCPCompositeToolDefinitionLister(indexer).VirtualMCPCompositeToolDefinitions(ns).Get(name)
	},
	Patch: func(c versioned.Interface, ns string) framework.PatchFunc[*thv1.VirtualMCPCompositeToolDefinition] {
		return c.ToolhiveV1beta1().VirtualMCPCompositeToolDefinitions(ns).Patch
	},
	Spec: func(c *thv1.VirtualMCPCompositeToolDefinition) any { return &c.Spec },
	Validate: func(c *thv1.VirtualMCPCompositeToolDefinition) []string {
		return wiring.ValidateCompositeTool("spec", &c.Spec)
	},
	FullStatus: compositeToolStatus,
	Index:      index.ByCompositeToolDefinition,
	Condition:  thv1.ConditionCompositeToolRefsValidated,
	Valid:      thv1.ReasonCompositeToolRefsValid, NotFound: thv1.ReasonCompositeToolRefNotFound,
	NotValid: thv1.ReasonCompositeToolRefInvalid, Waiting: thv1.ReasonWaitingForCompositeToolRefs,
}

// compositeToolStatus derives ToolHive's status fields of a definition
// from the shared status about to be written.
func compositeToolStatus(c *thv1.VirtualMCPCompositeToolDefinition, s *thv1.ConfigStatus, problems []string) (old, desired any) {
	want := c.Status.DeepCopy()
	want.ConfigStatus = *s
	want.ValidationStatus = thv1.ValidationStatusValid
	want.ValidationErrors = nil
	if len(problems) > 0 {
		want.ValidationStatus = thv1.ValidationStatusInvalid
		want.ValidationErrors = problems
	}
	want.ReferencingVirtualServers = nil
	for _, r := range s.ReferencingWorkloads {
		if r.Kind == thv1.KindVirtualMCPServer {
			want.ReferencingVirtualServers = append(want.ReferencingVirtualServers, r.Name)
		}
	}
	return &c.Status, want
}
