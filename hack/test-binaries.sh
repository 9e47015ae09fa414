#!/usr/bin/env bash
# Builds the control plane used by integration tests, benchmarks and
# `make run`, from the Go module proxy, into a cache folder outside git:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler of one
# Kubernetes release, and kwok, which plays the kubelet of fake nodes (the
# scheduler binds pods to them and kwok reports the pods Running and Ready).
#
# Idempotent: when every binary already exists for the pinned versions this
# prints their folder and returns immediately. The folder is printed on stdout
# (and nothing else), so callers can do: dir=$(hack/test-binaries.sh).
#
# The Kubernetes commands cannot be `go install`ed: k8s.io/kubernetes points
# its staging modules at ./staging with replace directives. So we build them
# from a throwaway module that requires k8s.io/kubernetes and replaces every
# staging module (the list is read from k8s.io/kubernetes' own go.mod) with
# its published version. etcd's server module also uses replace directives,
# so it gets a throwaway module with a three-line main as well. kwok's module
# has none, so `go install module@version` builds it as published; it lives
# in a folder of its own version, linked from the Kubernetes folder together
# with the stages it runs (node and pod lifecycles), which come from the
# same module.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
source "${root}/hack/versions.env"

# The cache lives outside the checkout so every clone on a machine (CI
# runs each in a fresh one) reuses it.
cache=${HIVEKEEPER_BIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/hivekeeper}
out="${cache}/k8s/${KUBE_VERSION}-etcd-${ETCD_VERSION}"
kwok_dir="${cache}/kwok/${KWOK_VERSION}"
kube_cmds=(kube-apiserver kube-controller-manager kube-scheduler)

complete() {
  local b
  for b in "${kube_cmds[@]}" etcd; do
    [[ -x "${out}/${b}" ]] || return 1
  done
  [[ -x "${out}/kwok" && "$(readlink "${out}/kwok")" == "${kwok_dir}/kwok" ]] || return 1
  [[ -f "${out}/kwok-stages.yaml" && "$(readlink "${out}/kwok-stages.yaml")" == "${kwok_dir}/stages.yaml" ]]
}
if complete; then
  echo "${out}"
  exit 0
fi
mkdir -p "${out}" "${kwok_dir}"

log() { echo "test-binaries: $*" >&2; }
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0

# kube_module writes, once, the throwaway module all Kubernetes commands are
# built in.
kube_module() {
  [[ -f "${work}/kube/go.mod" ]] && return 0
  mkdir -p "${work}/kube"
  local modfile
  modfile=$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module hivekeeper.local/kube-build"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes ${KUBE_VERSION}"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "${modfile}" | awk -v v="${KUBE_STAGING_VERSION}" '/=>/ {print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > "${work}/kube/go.mod"
}

for c in "${kube_cmds[@]}"; do
  [[ -x "${out}/${c}" ]] && continue
  log "building ${c} ${KUBE_VERSION} (several minutes, once)"
  kube_module
  (
    cd "${work}/kube"
    go get "k8s.io/kubernetes/cmd/${c}@${KUBE_VERSION}" >&2
    minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
    ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}"
    ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
    go build -trimpath -ldflags "${ldflags}" -o "${out}/${c}.tmp" "k8s.io/kubernetes/cmd/${c}" >&2
  )
  mv "${out}/${c}.tmp" "${out}/${c}"
done

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

if [[ ! -x "${kwok_dir}/kwok" ]]; then
  log "building kwok ${KWOK_VERSION} (a minute, once)"
  # GOFLAGS/GOWORK are cleared so a caller's settings cannot make the build
  # use our module or a workspace.
  GOBIN="${work}/kwok" GOFLAGS='' GOWORK=off \
    go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" >&2
  mv "${work}/kwok/kwok" "${kwok_dir}/kwok"
fi
if [[ ! -f "${kwok_dir}/stages.yaml" ]]; then
  # The stages kwok's own cluster tool runs by default: nodes become Ready
  # and renew their Leases; pods become Running and Ready, and a deleted pod
  # goes at once (no kubelet confirms it).
  moddir=$(cd "${work}" && GOFLAGS='' go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  stages="${moddir}/kustomize/stage"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    echo "---"
    cat "${stages}/${f}"
  done > "${kwok_dir}/stages.yaml.tmp"
  mv "${kwok_dir}/stages.yaml.tmp" "${kwok_dir}/stages.yaml"
fi
ln -sfn "${kwok_dir}/kwok" "${out}/kwok"
ln -sfn "${kwok_dir}/stages.yaml" "${out}/kwok-stages.yaml"

echo "${out}"
