package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ValidationStatus values of a VirtualMCPCompositeToolDefinition (ToolHive's).
const (
	ValidationStatusValid   = "Valid"
	ValidationStatusInvalid = "Invalid"
	ValidationStatusUnknown = "Unknown"
)

// Step types, error actions and elicitation response actions of a
// composite tool workflow, as ToolHive's vmcp reads them.
const (
	WorkflowStepTypeTool        = "tool"
	WorkflowStepTypeElicitation = "elicitation"
	WorkflowStepTypeForEach     = "forEach"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels=toolhive.stacklok.dev/auto-migrate-storage-version=true
// +kubebuilder:resource:shortName=vmcpctd;compositetool,categories=toolhive
// +kubebuilder:printcolumn:name="Workflow",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.validationStatus`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`

// VirtualMCPCompositeToolDefinition is a composite tool (a workflow of
// backend tool calls) that VirtualMCPServers in the same namespace share
// by naming it in spec.config.compositeToolRefs.
type VirtualMCPCompositeToolDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the composite tool, in the keys of vmcp's compositeTools
	// entries. Fields hivekeeper does not model are preserved.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +required
	Spec CompositeToolSpec `json:"spec"`
	// Status is written by hivekeeper's controller of the kind only.
	// +optional
	Status VirtualMCPCompositeToolDefinitionStatus `json:"status,omitempty"`
}

// CompositeToolSpec is one composite tool: vmcp's CompositeToolConfig.
type CompositeToolSpec struct {
	// Name is the tool's name as clients see it.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Description tells clients and models what the tool does.
	// +optional
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the tool's input, an object schema.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Parameters *runtime.RawExtension `json:"parameters,omitempty"`
	// Timeout of the whole workflow, a Go duration.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	Timeout string `json:"timeout,omitempty"`
	// Steps of the workflow.
	// +required
	Steps []WorkflowStep `json:"steps"`
	// Output shapes the tool's structured result; without it the last
	// step's output is returned.
	// +optional
	Output *CompositeToolOutput `json:"output,omitempty"`
	// Annotations are MCP tool annotations the tool declares.
	// +optional
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
}

// WorkflowStep is one step of a composite tool: vmcp's WorkflowStepConfig.
type WorkflowStep struct {
	// ID names the step for dependsOn and templates.
	// +required
	ID string `json:"id"`
	// Type of the step.
	// +kubebuilder:validation:Enum=tool;elicitation;forEach
	// +kubebuilder:default=tool
	// +optional
	Type string `json:"type,omitempty"`
	// Tool to call, for a tool step.
	// +optional
	Tool string `json:"tool,omitempty"`
	// Arguments of the call; string values may be templates.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Arguments *runtime.RawExtension `json:"arguments,omitempty"`
	// Condition is a template; the step runs only when it is true.
	// +optional
	Condition string `json:"condition,omitempty"`
	// DependsOn are the ids of the steps that must complete first.
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`
	// OnError is what a failure of the step does.
	// +optional
	OnError *StepErrorHandling `json:"onError,omitempty"`
	// Message of an elicitation step.
	// +optional
	Message string `json:"message,omitempty"`
	// Schema of the response an elicitation step asks for.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Schema *runtime.RawExtension `json:"schema,omitempty"`
	// Timeout of the step, a Go duration.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	Timeout string `json:"timeout,omitempty"`
	// OnDecline is what a declined elicitation does.
	// +optional
	OnDecline *ElicitationResponse `json:"onDecline,omitempty"`
	// OnCancel is what a cancelled elicitation does.
	// +optional
	OnCancel *ElicitationResponse `json:"onCancel,omitempty"`
	// DefaultResults stand in for the step's output when it is skipped or
	// fails with onError continue.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	DefaultResults *runtime.RawExtension `json:"defaultResults,omitempty"`
	// Collection is the template a forEach step iterates over.
	// +optional
	Collection string `json:"collection,omitempty"`
	// ItemVar names the current item in a forEach step's templates.
	// +optional
	ItemVar string `json:"itemVar,omitempty"`
	// MaxParallel iterations of a forEach step.
	// +optional
	MaxParallel int `json:"maxParallel,omitempty"`
	// MaxIterations of a forEach step.
	// +optional
	MaxIterations int `json:"maxIterations,omitempty"`
	// InnerStep is the tool step a forEach step runs per item. It is kept
	// as written (a step nests a step).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	InnerStep *runtime.RawExtension `json:"step,omitempty"`
}

// StepErrorHandling is what a failed step does.
type StepErrorHandling struct {
	// Action on error.
	// +kubebuilder:validation:Enum=abort;continue;retry
	// +kubebuilder:default=abort
	// +optional
	Action string `json:"action,omitempty"`
	// RetryCount is the most retries, for action retry.
	// +optional
	RetryCount int `json:"retryCount,omitempty"`
	// RetryDelay between retries, a Go duration.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	RetryDelay string `json:"retryDelay,omitempty"`
}

// ElicitationResponse is what a declined or cancelled elicitation does.
type ElicitationResponse struct {
	// Action to take.
	// +kubebuilder:validation:Enum=skip_remaining;abort;continue
	// +kubebuilder:default=abort
	// +optional
	Action string `json:"action,omitempty"`
}

// CompositeToolOutput is the structured output of a composite tool.
type CompositeToolOutput struct {
	// Properties of the output, by name.
	// +required
	Properties map[string]OutputProperty `json:"properties"`
	// Required property names.
	// +optional
	Required []string `json:"required,omitempty"`
}

// OutputProperty is one property of a composite tool's output.
type OutputProperty struct {
	// Type is the JSON Schema type.
	// +kubebuilder:validation:Enum=string;integer;number;boolean;object;array
	// +required
	Type string `json:"type"`
	// Description for clients and models.
	// +optional
	Description string `json:"description"`
	// Value is the template of the property's value.
	// +optional
	Value string `json:"value,omitempty"`
	// Properties of an object property, kept as written (a property nests
	// properties).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	// +optional
	Properties *runtime.RawExtension `json:"properties,omitempty"`
	// Default is the value used when the template cannot be expanded.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Default *runtime.RawExtension `json:"default,omitempty"`
}

// ToolAnnotations are MCP tool annotations.
type ToolAnnotations struct {
	// +optional
	Title *string `json:"title,omitempty"`
	// +optional
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// +optional
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// +optional
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// +optional
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// VirtualMCPCompositeToolDefinitionStatus is the shared config status
// (Valid, configHash, referencingWorkloads, deletion protection) plus
// ToolHive's own fields for the kind, derived from it.
type VirtualMCPCompositeToolDefinitionStatus struct {
	ConfigStatus `json:",inline"`
	// ValidationStatus is Valid or Invalid, as the Valid condition says.
	// +kubebuilder:validation:Enum=Valid;Invalid;Unknown
	// +optional
	ValidationStatus string `json:"validationStatus,omitempty"`
	// ValidationErrors are the problems found when it is Invalid.
	// +listType=atomic
	// +optional
	ValidationErrors []string `json:"validationErrors,omitempty"`
	// ReferencingVirtualServers are the names of the VirtualMCPServers
	// that reference the definition, sorted.
	// +listType=set
	// +optional
	ReferencingVirtualServers []string `json:"referencingVirtualServers,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// VirtualMCPCompositeToolDefinitionList is a list of
// VirtualMCPCompositeToolDefinitions.
type VirtualMCPCompositeToolDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the definitions.
	Items []VirtualMCPCompositeToolDefinition `json:"items"`
}
