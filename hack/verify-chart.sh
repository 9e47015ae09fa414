#!/usr/bin/env bash
# Checks the Helm chart deploy/charts/hivekeeper:
#   1. its CRDs and dashboard are identical to config/crd and deploy/grafana
#      (hack/sync-chart.sh --verify);
#   2. helm lint --strict passes with every values file in the chart's ci/;
#   3. helm template renders each of them, and the objects that must (or must
#      not) appear for that value set are there;
#   4. values the chart refuses are refused.
# helm is built once by hack/helm.sh. With an argument, the rendered
# manifests are also written to that folder (<name>.yaml per values file).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chart="${root}/deploy/charts/hivekeeper"
out=${1:-}
helm=$("${root}/hack/helm.sh")
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
fail() { echo "verify-chart: $*" >&2; exit 1; }

"${root}/hack/sync-chart.sh" --verify

# Every CRD hivekeeper serves (config/crd) ships in the chart.
crds=$(find "${root}/config/crd" -name '*.yaml' | wc -l)

# count KIND FILE: how many objects of that kind a rendered file holds.
count() { grep -c "^kind: $1\$" "$2" || true; }

for values in "${chart}"/ci/*-values.yaml; do
  name=$(basename "${values}" -values.yaml)
  echo "== ${name}"
  "${helm}" lint "${chart}" --strict -f "${values}" >"${work}/lint.log" 2>&1 || { cat "${work}/lint.log" >&2; fail "helm lint failed for ${name}"; }
  rendered="${work}/${name}.yaml"
  "${helm}" template hivekeeper "${chart}" --namespace hivekeeper-system --include-crds -f "${values}" >"${rendered}" \
    || fail "helm template failed for ${name}"
  [[ $(count CustomResourceDefinition "${rendered}") == "${crds}" ]] || fail "${name}: want the ${crds} CRDs"
  [[ $(count Deployment "${rendered}") == 1 ]] || fail "${name}: want one Deployment"
  grep -q -- '- --leader-elect$' "${rendered}" || fail "${name}: --leader-elect missing"
  grep -q 'fieldPath: metadata.namespace' "${rendered}" || fail "${name}: POD_NAMESPACE missing"
  grep -q 'readOnlyRootFilesystem: true' "${rendered}" || fail "${name}: restricted securityContext missing"
  case "${name}" in
    default)
      # The controller's, the three runners', the registry API's, the two
      # vMCP modes', the metrics reader; the controller's binding and the
      # metrics auth-delegator binding.
      [[ $(count ClusterRole "${rendered}") == 8 && $(count ClusterRoleBinding "${rendered}") == 2 ]] || fail "default: want 8 ClusterRoles and 2 bindings"
      [[ $(count ValidatingAdmissionPolicy "${rendered}") == 1 && $(count ValidatingAdmissionPolicyBinding "${rendered}") == 1 ]] || fail "default: want the admission policy and its binding"
      grep -q -- '- --metrics-secure$' "${rendered}" || fail "default: --metrics-secure missing"
      [[ $(count Role "${rendered}") == 1 ]] || fail "default: want only the leader-election Role"
      [[ $(count PodDisruptionBudget "${rendered}") == 1 ]] || fail "default: want a PodDisruptionBudget"
      [[ $(count ServiceMonitor "${rendered}") == 0 ]] || fail "default: ServiceMonitor must be off"
      grep -q -- '--namespaces' "${rendered}" && fail "default: must watch all namespaces"
      ;;
    namespaces)
      # Only the runner, registry API, vMCP and metrics reader ClusterRoles,
      # which grant nothing until bound, and the metrics auth-delegator
      # binding.
      [[ $(count ClusterRole "${rendered}") == 7 && $(count ClusterRoleBinding "${rendered}") == 1 ]] || fail "namespaces: want only the runner, registry API, vMCP and metrics ClusterRoles"
      grep -q 'key: kubernetes.io/metadata.name' "${rendered}" || fail "namespaces: the admission policy binding must match the watched namespaces"
      [[ $(count Role "${rendered}") == 3 && $(count RoleBinding "${rendered}") == 3 ]] || fail "namespaces: want Roles in team-a, team-b and the leader-election one"
      grep -q -- '"--namespaces=team-a,team-b"' "${rendered}" || fail "namespaces: --namespaces=team-a,team-b missing"
      ;;
    monitoring)
      [[ $(count ServiceMonitor "${rendered}") == 1 ]] || fail "monitoring: want a ServiceMonitor"
      [[ $(count PodDisruptionBudget "${rendered}") == 0 ]] || fail "monitoring: no PDB with one replica"
      grep -q 'grafana_dashboard: "1"' "${rendered}" || fail "monitoring: dashboard ConfigMap missing"
      grep -q -- '--log-format=json' "${rendered}" || fail "monitoring: --log-format=json missing"
      grep -q 'scheme: https' "${rendered}" || fail "monitoring: the ServiceMonitor must scrape over HTTPS"
      sed -n '/^kind: ServiceMonitor$/,/^---$/p' "${rendered}" | grep -q 'bearerTokenFile\|insecureSkipVerify' \
        && fail "monitoring: the ServiceMonitor must use no bearerTokenFile and verify TLS"
      grep -q 'name: hivekeeper-metrics-scraper$' "${rendered}" || fail "monitoring: the scrape token Secret missing"
      grep -q 'type: kubernetes.io/tls' "${rendered}" || fail "monitoring: the chart's metrics certificate Secret missing"
      grep -q 'serverName: hivekeeper-metrics.hivekeeper-system.svc' "${rendered}" || fail "monitoring: the scrape must verify the Service's name"
      [[ $(count PrometheusRule "${rendered}") == 1 ]] || fail "monitoring: want a PrometheusRule"
      ;;
    certmanager)
      [[ $(count Certificate "${rendered}") == 1 ]] || fail "certmanager: want a Certificate"
      grep -q 'type: kubernetes.io/tls' "${rendered}" && fail "certmanager: cert-manager writes the Secret, not the chart"
      grep -q 'name: prometheus-scrape-token$' "${rendered}" || fail "certmanager: the ServiceMonitor must use the named token Secret"
      grep -q -- '--metrics-cert-path=' "${rendered}" || fail "certmanager: the pods must serve cert-manager's certificate"
      ;;
  esac
  if [[ -n "${out}" ]]; then
    mkdir -p "${out}"
    cp "${rendered}" "${out}/${name}.yaml"
  fi
done

echo "== refused values"
refuse() {
  if "${helm}" template hivekeeper "${chart}" "$@" >/dev/null 2>&1; then
    fail "helm template accepted $*"
  fi
}
refuse --set replicaCount=2 --set leaderElection.enabled=false
refuse --set logging.format=yaml
refuse --set workers=0
refuse --set 'watchNamespaces={Not_A_Namespace}'
refuse --set unknownValue=1
refuse --set 'admissionPolicy.validationActions={Block}'
refuse --set metrics.certManager.enabled=true
refuse --set serviceMonitor.enabled=true --set rbac.create=false
refuse --set serviceMonitor.enabled=true --set serviceMonitor.namespace=monitoring

echo "verify-chart: ok"
