// Package crd holds hivekeeper's CustomResourceDefinitions, generated into
// this folder by hack/update-codegen.sh, so that a binary can apply them:
// `kubectl hivekeeper switch` replaces ToolHive's with these.
package crd

import "embed"

// FS holds one YAML file per CRD.
//
//go:embed *.yaml
var FS embed.FS
