#!/usr/bin/env bash
# Fails when a change lowers the mutation score (gremlins' test efficacy:
# killed over killed and survived mutants) of a package that has a floor
# in hack/mutation-floor.txt. Only the floored packages whose Go files the
# change touches are run, one at a time, with their unit tests (-short):
# with nothing to run it exits 0 at once.
#
# The change is the diff from a base to the work tree: MUTATION_BASE if
# set, else the merge base with origin/main when there is one, else HEAD~
# (in a fresh clone of main, as CI has, that is the last commit). gremlins
# is the go.mod tool; nothing but the Go module proxy is reached.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"
floor=hack/mutation-floor.txt

base=${MUTATION_BASE:-}
if [[ -z ${base} ]]; then
  if git rev-parse -q --verify origin/main >/dev/null; then
    base=$(git merge-base origin/main HEAD)
  elif git rev-parse -q --verify HEAD~ >/dev/null; then
    base=HEAD~
  else
    echo "verify-mutation: no base to compare with; nothing to check"
    exit 0
  fi
fi
changed=$( { git diff --name-only "${base}" -- '*.go'; git ls-files --others --exclude-standard -- '*.go'; } | sort -u)

pkgs=()
while read -r pkg _; do
  [[ -z ${pkg} || ${pkg} == \#* ]] && continue
  # A package's own files, not its subpackages' (each has its own floor).
  if grep -qE "^${pkg}/[^/]+\.go$" <<<"${changed}"; then
    pkgs+=("${pkg}")
  fi
done <"${floor}"
if [[ ${#pkgs[@]} -eq 0 ]]; then
  echo "verify-mutation: no package with a mutation floor changed since ${base}"
  exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "${out}"' EXIT
args=()
for pkg in "${pkgs[@]}"; do
  json="${out}/$(tr / _ <<<"${pkg}").json"
  echo "== gremlins ${pkg}"
  GOFLAGS=-short nice -n 10 go tool gremlins unleash --silent --workers "${MUTATION_WORKERS:-2}" \
    --timeout-coefficient "${MUTATION_TIMEOUT_COEFFICIENT:-10}" -o "${json}" "./${pkg}"
  args+=("${pkg}=${json}")
done
go run ./hack/mutationreport -floor "${floor}" "${args[@]}"
