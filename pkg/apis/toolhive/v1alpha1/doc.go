// Package v1alpha1 declares the one kind ToolHive serves only as
// v1alpha1: MCPWebhookConfig. It exists for the CRD alone, so that a
// manifest written for ToolHive's operator (apiVersion
// toolhive.stacklok.dev/v1alpha1) applies unchanged. The schema is
// v1beta1's, the conversion strategy is None, and v1beta1 is the stored
// version: hivekeeper reads and writes every MCPWebhookConfig as v1beta1,
// whatever version it was created with. No client, lister or deepcopy is
// generated for this package.
//
// +groupName=toolhive.stacklok.dev
package v1alpha1
