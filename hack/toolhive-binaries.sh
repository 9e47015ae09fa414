#!/usr/bin/env bash
# Builds ToolHive's own runtime, the oracle of hivekeeper's compatibility
# suites, from the Go module proxy: thv-proxyrunner (runs what hivekeeper
# writes for MCPServer and MCPRemoteProxy), vmcp (runs a VirtualMCPServer's
# config) and thv-operator (ToolHive's operator, whose output the
# differential and handover suites compare with hivekeeper's). The releases
# are hack/versions.env's: TOOLHIVE_VERSION, the release users run, and
# each of TOOLHIVE_PREVIOUS_VERSIONS, the older releases a user may still be
# on; the handover suite switches from each of them.
#
# A release with a build module in hack/toolhive-build/<release>/ is built
# from there with TOOLHIVE_GOTOOLCHAIN (v0.63.0 and v0.66.0 need Go 1.27):
# its go.mod replaces the modules the proxy does not serve with served
# neighbours, and toolhive-core/redisconn, of which no version is served,
# with hack/toolhive-build/redisconn, a small module written for hivekeeper.
# Where a neighbour lacks names the release calls, the build module's
# `overlays` file names the module (v0.66.0's: toolhive-core, whose v0.0.59
# stands for the unserved v0.0.60 but lacks one name vmcp calls). The build
# assembles it in its temporary folder from the neighbour's source in the Go
# module cache plus an overlay folder of files written for hivekeeper
# (hack/toolhive-build/_toolhive-core-v0.0.60), runs the overlay's tests
# there, and builds with a copy of go.mod (-modfile) whose replace points at
# it; the committed go.mod and go.sum are used as they are.
# Any other release is built as published with `go install module@version`.
#
# Idempotent: when every binary exists for every release this prints the
# folder of TOOLHIVE_SUITES_VERSION's (the release the suites' recorded
# expectations are of) and returns at once; every release's folder is a
# sibling named after it. The folder is the only thing
# printed on stdout, so callers can do: dir=$(hack/toolhive-binaries.sh).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "${root}/hack/versions.env"

# The cache lives outside the checkout so every clone on a machine (CI runs
# each in a fresh one) reuses it.
cache=${HIVEKEEPER_BIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hivekeeper}
cmds=(thv-proxyrunner vmcp thv-operator)

# assemble MOD TMP: for each line of MOD/overlays (module, required
# version, overlay folder), copies the source of the served neighbour that
# MOD/go.mod replaces the module with into TMP/src, adds the overlay's
# files (refusing any that would replace one of the neighbour's), runs the
# overlay's tests in the packages it adds them to, and points the replace
# in TMP/build.mod (a copy of MOD/go.mod, with TMP/build.sum) there. Runs
# under set -e: any failure ends the script.
assemble() {
  local mod=$1 tmp=$2 path want overlay base dir src shown f pkgs tests
  cp "${mod}/go.mod" "${tmp}/build.mod"
  cp "${mod}/go.sum" "${tmp}/build.sum"
  while read -r path want overlay; do
    [[ -z ${path} || ${path} == \#* ]] && continue
    base=$(cd "${mod}" && go list -m -f '{{with .Replace}}{{if .Version}}{{.Path}}@{{.Version}}{{end}}{{end}}' "${path}")
    if [[ -z ${base} ]]; then
      echo "toolhive-binaries: ${mod}/go.mod does not replace ${path} with a served version" >&2
      return 1
    fi
    dir=$(cd "${mod}" && go mod download -json "${base}" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
    src="${tmp}/src/${path}"
    shown=$(realpath -m --relative-to="${root}" "${mod}/${overlay}")
    mkdir -p "$(dirname "${src}")"
    cp -R "${dir}" "${src}"
    chmod -R u+w "${src}"
    while IFS= read -r f; do
      if [[ -e "${src}/${f}" ]]; then
        echo "toolhive-binaries: ${shown}/${f#./} would replace a file of ${base}" >&2
        return 1
      fi
    done < <(cd "${mod}/${overlay}" && find . -type f)
    cp -R "${mod}/${overlay}/." "${src}/"
    echo "toolhive-binaries: ${path} ${want} is ${base} plus ${shown}; testing the overlay" >&2
    pkgs=$(cd "${mod}/${overlay}" && find . -name '*_test.go' -exec dirname {} \; | sort -u)
    tests=$(cd "${mod}/${overlay}" && find . -name '*_test.go' -exec sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*/\1/p' {} + | paste -sd'|')
    if [[ -n ${pkgs} ]]; then
      # shellcheck disable=SC2086 # pkgs is a list of ./folders
      (cd "${src}" && go test -count=1 -run "^(${tests})\$" ${pkgs}) >&2
    fi
    go mod edit -replace "${path}@${want}=${src}" "${tmp}/build.mod"
  done < "${mod}/overlays"
}

# The build folders under way; whatever ends the script removes them (made
# writable first: an assembled module is a copy of read-only module cache).
tmps=()
cleanup() {
  local t
  for t in "${tmps[@]}"; do
    chmod -R u+w "${t}" 2>/dev/null || true
    rm -rf "${t}"
  done
}
trap cleanup EXIT

build() {
  local version=$1 out="${cache}/toolhive/$1" missing=() c start=${SECONDS}
  for c in "${cmds[@]}"; do
    [[ -x "${out}/${c}" ]] || missing+=("${c}")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  mkdir -p "${out}"
  local tmp
  tmp=$(mktemp -d "${out}/.build.XXXXXX")
  tmps+=("${tmp}")
  # GOFLAGS/GOWORK are cleared so a caller's settings cannot make the build
  # use hivekeeper's module or a workspace.
  local mod="${root}/hack/toolhive-build/${version}"
  if [[ -f "${mod}/go.mod" ]]; then
    echo "toolhive-binaries: building ToolHive ${version} (${cmds[*]}) with ${TOOLHIVE_GOTOOLCHAIN} from hack/toolhive-build/${version} (15 to 30 minutes on 2 cores, once)" >&2
    local modfile=()
    if [[ -f "${mod}/overlays" ]]; then
      (export GOTOOLCHAIN="${TOOLHIVE_GOTOOLCHAIN}" GOFLAGS='-mod=readonly' GOWORK=off CGO_ENABLED=0
        assemble "${mod}" "${tmp}")
      modfile=(-modfile="${tmp}/build.mod")
    fi
    (cd "${mod}" && GOTOOLCHAIN="${TOOLHIVE_GOTOOLCHAIN}" GOBIN="${tmp}" GOFLAGS='-mod=readonly' GOWORK=off CGO_ENABLED=0 \
      go install "${modfile[@]}" -ldflags "-s -w" tool) >&2
  else
    for c in "${missing[@]}"; do
      echo "toolhive-binaries: building ${c} ${version} (a few minutes, once)" >&2
      GOBIN="${tmp}" GOFLAGS='' GOWORK=off CGO_ENABLED=0 \
        go install -trimpath -ldflags "-s -w" "github.com/stacklok/toolhive/cmd/${c}@${version}" >&2
    done
  fi
  for c in "${missing[@]}"; do
    mv "${tmp}/${c}" "${out}/${c}"
  done
  rm -rf "${tmp}"
  echo "toolhive-binaries: ToolHive ${version} built in $((SECONDS - start)) s" >&2
}

build "${TOOLHIVE_VERSION}"
for v in ${TOOLHIVE_PREVIOUS_VERSIONS}; do
  build "${v}"
done
echo "${cache}/toolhive/${TOOLHIVE_SUITES_VERSION}"
