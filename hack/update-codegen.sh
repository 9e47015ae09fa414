#!/usr/bin/env bash
# Regenerates everything generated in this repository:
#   - deepcopy functions, typed clientset (+fake), listers and informers,
#     via k8s.io/code-generator's kube_codegen.sh;
#   - CRD YAML in config/crd/ via controller-gen, from the v1beta1 types,
#     then hack/crdversions adds the v1alpha1 version ToolHive also serves
#     (same schema; see that program for which version each kind stores).
# Generator versions come from go.mod (tool directives), so the output is
# reproducible.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${root}
cd "${root}"

module=github.com/hivekeeper/hivekeeper
boilerplate="${root}/hack/boilerplate.go.txt"
export GOBIN="${root}/bin/tools"
mkdir -p "${GOBIN}"

codegen_root=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
# shellcheck source=/dev/null
source "${codegen_root}/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "${boilerplate}" \
  "${out}/pkg/apis"

kube::codegen::gen_client \
  --with-watch \
  --output-dir "${out}/pkg/generated" \
  --output-pkg "${module}/pkg/generated" \
  --boilerplate "${boilerplate}" \
  "${out}/pkg/apis"

(cd "${out}" && go tool controller-gen \
  crd \
  paths=./pkg/apis/... \
  output:crd:artifacts:config=config/crd)
(cd "${out}" && go run ./hack/crdversions config/crd)
