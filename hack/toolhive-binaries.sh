#!/usr/bin/env bash
# Builds ToolHive's own runtime at the pinned release (TOOLHIVE_VERSION in
# hack/versions.env) from the Go module proxy: thv-proxyrunner, which runs
# what hivekeeper writes for MCPServer and MCPRemoteProxy, vmcp, which runs
# a VirtualMCPServer's config, and thv-operator, ToolHive's own operator,
# whose RunConfigs the differential test compares with hivekeeper's. The
# conformance suite (test/conformance) starts all three against test API
# servers to prove compatibility.
#
# Idempotent: when every binary exists for the pinned version this prints
# their folder and returns at once. The folder is the only thing printed on
# stdout, so callers can do: dir=$(hack/toolhive-binaries.sh).
#
# ToolHive's go.mod has no replace directives, so `go install module@version`
# builds each command as published, with ToolHive's own go.sum, and leaves
# hivekeeper's module graph alone.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "${root}/hack/versions.env"

# The cache lives outside the checkout so every clone on a machine (CI runs
# each in a fresh one) reuses it.
cache=${HIVEKEEPER_BIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hivekeeper}
out="${cache}/toolhive/${TOOLHIVE_VERSION}"
cmds=(thv-proxyrunner vmcp thv-operator)
missing=()
for c in "${cmds[@]}"; do
  [[ -x "${out}/${c}" ]] || missing+=("${c}")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "${out}"
  exit 0
fi

mkdir -p "${out}"
tmp=$(mktemp -d "${out}/.build.XXXXXX")
trap 'rm -rf "${tmp}"' EXIT
for c in "${missing[@]}"; do
  echo "toolhive-binaries: building ${c} ${TOOLHIVE_VERSION} (a few minutes, once)" >&2
  # GOFLAGS/GOWORK are cleared so a caller's settings cannot make the build
  # use our module or a workspace.
  GOBIN="${tmp}" GOFLAGS='' GOWORK=off CGO_ENABLED=0 \
    go install -trimpath -ldflags "-s -w" "github.com/stacklok/toolhive/cmd/${c}@${TOOLHIVE_VERSION}" >&2
  mv "${tmp}/${c}" "${out}/${c}"
done
echo "${out}"
