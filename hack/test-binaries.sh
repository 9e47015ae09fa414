#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd used by integration tests, benchmarks
# and `make run`, from the Go module proxy, into a cache folder outside git.
#
# Idempotent: when both binaries already exist for the pinned versions this
# prints their folder and returns immediately. The folder is printed on stdout
# (and nothing else), so callers can do: dir=$(hack/test-binaries.sh).
#
# kube-apiserver cannot be `go install`ed: k8s.io/kubernetes points its staging
# modules at ./staging with replace directives. So we build it from a throwaway
# module that requires k8s.io/kubernetes and replaces every staging module
# (the list is read from k8s.io/kubernetes' own go.mod) with its published
# version. etcd's server module also uses replace directives, so it gets a
# throwaway module with a three-line main as well.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "${root}/hack/versions.env"

# The cache lives outside the checkout so every clone on a machine (CI
# runs each in a fresh one) reuses it.
cache=${HIVEKEEPER_BIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hivekeeper}
out="${cache}/k8s/${KUBE_VERSION}-etcd-${ETCD_VERSION}"
if [[ -x "${out}/kube-apiserver" && -x "${out}/etcd" ]]; then
  echo "${out}"
  exit 0
fi
mkdir -p "${out}"

log() { echo "test-binaries: $*" >&2; }
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0

if [[ ! -x "${out}/kube-apiserver" ]]; then
  log "building kube-apiserver ${KUBE_VERSION} (several minutes, once)"
  mkdir -p "${work}/apiserver"
  cd "${work}/apiserver"
  modfile=$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module hivekeeper.local/kube-apiserver-build"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes ${KUBE_VERSION}"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "${modfile}" | awk -v v="${KUBE_STAGING_VERSION}" '/=>/ {print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > go.mod
  go get "k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION}" >&2
  minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
  go build -trimpath -ldflags "${ldflags}" -o "${out}/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
  mv "${out}/kube-apiserver.tmp" "${out}/kube-apiserver"
fi

if [[ ! -x "${out}/etcd" ]]; then
  log "building etcd ${ETCD_VERSION}"
  mkdir -p "${work}/etcd"
  cd "${work}/etcd"
  printf 'module hivekeeper.local/etcd-build\n\ngo 1.26\n' > go.mod
  cat > main.go <<'GO'
// Command etcd runs etcd's own entry point; it exists only so the server
// module can be built outside its repository.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
  go mod tidy >&2
  go build -trimpath -ldflags "-s -w" -o "${out}/etcd.tmp" . >&2
  mv "${out}/etcd.tmp" "${out}/etcd"
fi

echo "${out}"
