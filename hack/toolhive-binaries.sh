#!/usr/bin/env bash
# Builds ToolHive's own runtime, the oracle of hivekeeper's compatibility
# suites, from the Go module proxy: thv-proxyrunner (runs what hivekeeper
# writes for MCPServer and MCPRemoteProxy), vmcp (runs a VirtualMCPServer's
# config) and thv-operator (ToolHive's operator, whose output the
# differential and handover suites compare with hivekeeper's). Two releases
# are built (hack/versions.env): TOOLHIVE_VERSION, the release users run and
# the suites judge by, and TOOLHIVE_PREVIOUS_VERSION, an older release a
# user may still be on, which the handover suite also switches from.
#
# A release with a build module in hack/toolhive-build/<release>/ is built
# from there: ToolHive v0.63.0 needs Go 1.27 (TOOLHIVE_GOTOOLCHAIN) and five
# modules the proxy does not serve; that go.mod replaces four of them with
# served neighbours and the fifth (toolhive-core/redisconn) with
# hack/toolhive-build/redisconn, a small module written for hivekeeper. Any
# other release is built as published with `go install module@version`.
#
# Idempotent: when every binary exists for both releases this prints the
# folder of TOOLHIVE_VERSION's and returns at once; TOOLHIVE_PREVIOUS_VERSION's
# is its sibling folder named after that release. The folder is the only
# thing printed on stdout, so callers can do: dir=$(hack/toolhive-binaries.sh).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "${root}/hack/versions.env"

# The cache lives outside the checkout so every clone on a machine (CI runs
# each in a fresh one) reuses it.
cache=${HIVEKEEPER_BIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hivekeeper}
cmds=(thv-proxyrunner vmcp thv-operator)

build() {
  local version=$1 out="${cache}/toolhive/$1" missing=() c
  for c in "${cmds[@]}"; do
    [[ -x "${out}/${c}" ]] || missing+=("${c}")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  mkdir -p "${out}"
  local tmp
  tmp=$(mktemp -d "${out}/.build.XXXXXX")
  # GOFLAGS/GOWORK are cleared so a caller's settings cannot make the build
  # use hivekeeper's module or a workspace.
  local mod="${root}/hack/toolhive-build/${version}"
  if [[ -f "${mod}/go.mod" ]]; then
    echo "toolhive-binaries: building ToolHive ${version} (${cmds[*]}) with ${TOOLHIVE_GOTOOLCHAIN} from hack/toolhive-build/${version} (about 15 minutes on 2 cores, once)" >&2
    (cd "${mod}" && GOTOOLCHAIN="${TOOLHIVE_GOTOOLCHAIN}" GOBIN="${tmp}" GOFLAGS='-mod=readonly' GOWORK=off CGO_ENABLED=0 \
      go install -ldflags "-s -w" tool) >&2 || { rm -rf "${tmp}"; return 1; }
  else
    for c in "${missing[@]}"; do
      echo "toolhive-binaries: building ${c} ${version} (a few minutes, once)" >&2
      GOBIN="${tmp}" GOFLAGS='' GOWORK=off CGO_ENABLED=0 \
        go install -trimpath -ldflags "-s -w" "github.com/stacklok/toolhive/cmd/${c}@${version}" >&2 || { rm -rf "${tmp}"; return 1; }
    done
  fi
  for c in "${missing[@]}"; do
    mv "${tmp}/${c}" "${out}/${c}"
  done
  rm -rf "${tmp}"
}

build "${TOOLHIVE_VERSION}"
build "${TOOLHIVE_PREVIOUS_VERSION}"
echo "${cache}/toolhive/${TOOLHIVE_VERSION}"
