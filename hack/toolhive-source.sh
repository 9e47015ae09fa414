#!/usr/bin/env bash
# Downloads the source of a ToolHive release from the Go module proxy into the
# Go module cache and prints its folder: TOOLHIVE_API_VERSION (hack/versions.env)
# by default, or the release given as the first argument. A second argument
# names another module, at that version, that a release's types come from
# (github.com/stacklok/toolhive-core at the version ToolHive's go.mod
# requires). Tests read ToolHive's CRD YAML, examples and Go types from there;
# nothing is copied into the checkout.
#
# Idempotent: the module cache is the cache, so a release already downloaded
# costs no network. The folder is the only thing printed on stdout, so callers
# can do: dir=$(hack/toolhive-source.sh) or dir=$(hack/toolhive-source.sh v0.47.0).
#
# Releases from v0.55.1 on need Go 1.27 even to be downloaded (`go` refuses a
# module whose go line is newer than itself), so GOTOOLCHAIN names the
# toolchain `go` fetches for that (TOOLHIVE_GOTOOLCHAIN).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "${root}/hack/versions.env"

version=${1:-${TOOLHIVE_API_VERSION}}
module=${2:-github.com/stacklok/toolhive}
# GOFLAGS/GOWORK are cleared so a caller's settings cannot pull in our module
# or a workspace; the download is run outside the checkout for the same reason.
dir=$(cd "${TMPDIR:-/tmp}" && GOTOOLCHAIN="${TOOLHIVE_GOTOOLCHAIN}" GOFLAGS='' GOWORK=off \
  go mod download -json "${module}@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
if [[ -z "${dir}" || ! -d "${dir}" ]]; then
  echo "toolhive-source: downloading ${module}@${version} failed" >&2
  exit 1
fi
echo "${dir}"
