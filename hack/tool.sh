#!/usr/bin/env bash
# Builds a release tool pinned in hack/versions.env from the Go module proxy
# into <cache>/tools/<name>-<version>/<name> (~/.cache/hivekeeper), outside
# git, once, and prints its path (the only thing on stdout):
#   syft=$(hack/tool.sh syft)
# Tools: syft, validate-krew-manifest, actionlint.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/versions.env
source "${root}/hack/versions.env"

name=${1:?usage: hack/tool.sh syft|validate-krew-manifest|actionlint}
case "${name}" in
  syft) pkg=github.com/anchore/syft/cmd/syft version=${SYFT_VERSION}
    ldflags="-X main.version=${SYFT_VERSION#v}" ;;
  validate-krew-manifest) pkg=sigs.k8s.io/krew/cmd/validate-krew-manifest version=${KREW_VERSION} ldflags= ;;
  actionlint) pkg=github.com/rhysd/actionlint/cmd/actionlint version=${ACTIONLINT_VERSION}
    ldflags= ;;
  *) echo "tool.sh: unknown tool ${name}" >&2; exit 2 ;;
esac

cache=${HIVEKEEPER_BIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hivekeeper}
dir="${cache}/tools/${name}-${version}"
if [[ -x "${dir}/${name}" ]]; then
  echo "${dir}/${name}"
  exit 0
fi
echo "tool.sh: building ${name} ${version} (once)" >&2
mkdir -p "${dir}"
tmp=$(mktemp -d "${dir}/.build.XXXXXX")
trap 'rm -rf "${tmp}"' EXIT
# Each tool is built as published, with its own go.sum; GOFLAGS/GOWORK are
# cleared so a caller's settings cannot make the build use our module.
GOBIN="${tmp}" GOFLAGS='' GOWORK=off CGO_ENABLED=0 \
  go install -trimpath -ldflags "-s -w ${ldflags}" "${pkg}@${version}" >&2
mv "${tmp}/${name}" "${dir}/${name}"
echo "${dir}/${name}"
