#!/usr/bin/env bash
# One command from a fresh clone to a running hivekeeper (`make run`).
#
# Starts the same cluster the fuller integration tests use (through
# test/integration/framework/cmd/apiserver --cluster): etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler and kwok's fake
# nodes, so the examples' Deployments get pods that become Running and
# Ready. It installs config/crd, applies examples/, and runs bin/hivekeeper
# against it in the foreground with metrics on 127.0.0.1:8080 and health on
# 127.0.0.1:8081. Ctrl-C (or SIGTERM) stops hivekeeper and every server and
# removes every temporary file. Needs only Go: objects are applied by the
# framework helper, not by kubectl.
#
# Environment:
#   HIVEKEEPER_METRICS_ADDR  metrics address (default 127.0.0.1:8080)
#   HIVEKEEPER_HEALTH_ADDR   health probe address (default 127.0.0.1:8081)
#   HIVEKEEPER_EXAMPLES      manifests to apply, comma-separated (default examples)
# Extra arguments are passed to hivekeeper, e.g. `hack/local-up.sh -v=4`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"

metrics_addr=${HIVEKEEPER_METRICS_ADDR:-127.0.0.1:8080}
health_addr=${HIVEKEEPER_HEALTH_ADDR:-127.0.0.1:8081}
examples=${HIVEKEEPER_EXAMPLES:-examples}

log() { echo "local-up: $*" >&2; }

# Building the control plane takes minutes the first time; say so rather
# than look hung.
bins=$(hack/test-binaries.sh)

if [[ ! -x bin/hivekeeper ]]; then
  log "building bin/hivekeeper"
  CGO_ENABLED=0 go build -o bin/hivekeeper ./cmd/controller
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hivekeeper-local-up.XXXXXX")
apiserver_pid=""
hivekeeper_pid=""

# stop TERMs a child and waits for it; waiting matters, because the API
# server helper removes its folder only on its way out.
stop() {
  local pid=$1
  [[ -n ${pid} ]] || return 0
  kill -TERM "${pid}" 2>/dev/null || true
  wait "${pid}" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop "${hivekeeper_pid}"
  stop "${apiserver_pid}"
  rm -rf "${work}"
  log "stopped; removed ${work}"
  exit "${rc}"
}
trap cleanup EXIT
# `wait` returns early when a trapped signal arrives, so these run at once
# even while hivekeeper is in the foreground.
trap 'exit 130' INT
trap 'exit 143' TERM

log "building the local API server helper"
go build -o "${work}/apiserver" ./test/integration/framework/cmd/apiserver

kubeconfig="${work}/kubeconfig"
"${work}/apiserver" \
  --binaries="${bins}" \
  --dir="${work}" \
  --crds="${root}/config/crd" \
  --apply="${examples}" \
  --cluster \
  --kubeconfig-out="${kubeconfig}" &
apiserver_pid=$!

# The helper writes the kubeconfig last, once the CRDs are Established and
# the examples applied.
for _ in $(seq 1 3000); do
  [[ -f ${kubeconfig} ]] && break
  if ! kill -0 "${apiserver_pid}" 2>/dev/null; then
    apiserver_pid=""
    log "the local API server failed to start (see above)"
    exit 1
  fi
  sleep 0.1
done
if [[ ! -f ${kubeconfig} ]]; then
  log "the local cluster was not ready after 300s"
  exit 1
fi

cat >&2 <<EOF

  hivekeeper local environment
    kubectl:  export KUBECONFIG=${kubeconfig}
              kubectl get mcpservers,mcpoidcconfigs,mcptoolconfigs,mcpauthzconfigs,mcpexternalauthconfigs,mcptelemetryconfigs,mcpwebhookconfigs,mcpserverentries,virtualmcpcompositetooldefinitions,mcpgroups,mcpremoteproxies,virtualmcpservers,embeddingservers,mcpregistries
              kubectl get deploy,sts,svc,cm,sa,rolebinding
              kubectl get pods -o wide
    metrics:  http://${metrics_addr}/metrics
    health:   http://${health_addr}/healthz  http://${health_addr}/readyz
  Pods run on kwok's fake nodes: scheduled and reported Ready, no container
  runs. Ctrl-C stops everything.

EOF

bin/hivekeeper \
  --kubeconfig="${kubeconfig}" \
  --metrics-bind-address="${metrics_addr}" \
  --health-probe-bind-address="${health_addr}" \
  "$@" &
hivekeeper_pid=$!
wait "${hivekeeper_pid}"
