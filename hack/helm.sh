#!/usr/bin/env bash
# Builds helm (pinned by HELM_VERSION in hack/versions.env) from the Go module
# proxy into <cache>/tools/helm-<version>/helm (~/.cache/hivekeeper), outside git.
#
# Idempotent: when the binary already exists it only prints its path. The
# path is the only thing printed on stdout, so callers can do:
#   helm=$(hack/helm.sh)
#
# helm's go.mod has no replace directives, so `go install module@version`
# builds it as published, with its own go.sum, without touching our go.mod.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/versions.env
source "${root}/hack/versions.env"

# The cache lives outside the checkout so every clone on a machine (CI
# runs each in a fresh one) reuses it.
cache=${HIVEKEEPER_BIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hivekeeper}
dir="${cache}/tools/helm-${HELM_VERSION}"
if [[ -x "${dir}/helm" ]]; then
  echo "${dir}/helm"
  exit 0
fi

echo "helm.sh: building helm ${HELM_VERSION} (about a minute, once)" >&2
mkdir -p "${dir}"
tmp=$(mktemp -d "${dir}/.build.XXXXXX")
trap 'rm -rf "${tmp}"' EXIT
# Stamp the version so `helm version` reports it; helm leaves it empty
# otherwise. GOFLAGS/GOWORK are cleared so a caller's settings cannot make
# the build use our module or a workspace.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
GOBIN="${tmp}" GOFLAGS='' GOWORK=off CGO_ENABLED=0 \
  go install -trimpath -ldflags "${ldflags}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2
mv "${tmp}/helm" "${dir}/helm"
echo "${dir}/helm"
