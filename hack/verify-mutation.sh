#!/usr/bin/env bash
# Mutation check of a change, cheap enough for CI: gremlins mutates only
# the lines the change added or modified (unleash --diff) in the packages
# of hack/mutation-floor.txt whose non-test Go files it touches, runs each
# package's unit tests (-short) against every such mutant, and fails when
# one survives that hack/mutation-equivalent.txt does not list. With no
# such package changed it exits 0 at once; otherwise the cost is one
# coverage run of the package plus one test build and run per mutant on a
# changed line (pkg/framework: about 30 s each on 2 cores).
#
# Why "no unlisted survivor" and not the package's floor: a diff's lines
# hold a handful of mutants, so their efficacy is 100 % or far below any
# floor, and only a floor under 100 would let a survivor through, by how
# many mutants the diff happened to hold. The floors below 100 stand for
# survivors judged equivalent; the equivalent file names those, with the
# reason, so the check is exact. Mutants on changed lines that no test of
# the package runs (not covered) are printed but do not fail, as the
# package's efficacy does not count them either.
#
# The change is the diff from a base to the work tree: MUTATION_BASE if
# set, else the merge base with origin/main when HEAD has commits of its
# own, else HEAD~ (in a fresh clone of main, as CI has, that is the last
# commit). Untracked files are not in a diff: `git add -N` them first.
# MUTATION_WHOLE=1 instead mutates each such package whole (tens of
# minutes) and checks its efficacy against its floor in
# hack/mutation-floor.txt; make mutate records those runs in
# docs/mutation.md. gremlins is the go.mod tool; nothing but the Go
# module proxy is reached.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${root}"
floor=hack/mutation-floor.txt
equivalent=hack/mutation-equivalent.txt

base=${MUTATION_BASE:-}
if [[ -z ${base} ]]; then
  if git rev-parse -q --verify origin/main >/dev/null; then
    base=$(git merge-base origin/main HEAD)
  fi
  if [[ -z ${base} || ${base} == "$(git rev-parse HEAD)" ]]; then
    if ! git rev-parse -q --verify HEAD~ >/dev/null; then
      echo "verify-mutation: HEAD has no parent to compare with (a shallow clone?); nothing to check" >&2
      exit 0
    fi
    base=HEAD~
  fi
fi
base=$(git rev-parse --verify "${base}^{commit}")
# gremlins diffs from the merge base too (git diff --merge-base).
changed=$(git diff --merge-base --name-only --diff-filter=d "${base}" -- '*.go' ':(exclude)*_test.go')

pkgs=()
while read -r pkg _; do
  [[ -z ${pkg} || ${pkg} == \#* ]] && continue
  # A package's own files, not its subpackages' (each has its own floor).
  if grep -qE "^${pkg}/[^/]+\.go$" <<<"${changed}"; then
    pkgs+=("${pkg}")
  fi
  untracked=$(git ls-files --others --exclude-standard -- "${pkg}/*.go" ':(exclude)*_test.go')
  if [[ -n ${untracked} ]]; then
    echo "verify-mutation: not checked, untracked (git add -N to include): ${untracked//$'\n'/ }" >&2
  fi
done <"${floor}"
if [[ ${#pkgs[@]} -eq 0 ]]; then
  echo "verify-mutation: no non-test Go file of a package with a mutation floor changed since $(git rev-parse --short "${base}")"
  exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "${out}"' EXIT
go build -o "${out}/mutationreport" ./hack/mutationreport
args=()
for pkg in "${pkgs[@]}"; do
  json="${out}/$(tr / _ <<<"${pkg}").json"
  flags=(--silent --workers "${MUTATION_WORKERS:-2}" --timeout-coefficient "${MUTATION_TIMEOUT_COEFFICIENT:-10}" -o "${json}")
  if [[ ${MUTATION_WHOLE:-} == 1 ]]; then
    echo "== gremlins ${pkg}, the whole package"
  else
    echo "== gremlins ${pkg}, the lines changed since $(git rev-parse --short "${base}")"
    flags+=(--diff "${base}")
  fi
  # Two quirks of gremlins v0.6.0's --diff, both checked with --dry-run:
  # it matches the diff's file names with its own, which are relative to
  # the directory it mutates, while git names them from the repository
  # root, so from the root every mutant is skipped; git names them
  # relative to the directory it runs in with diff.relative, so both run in
  # the package's (gremlins runs git diff before it changes directory).
  # And it takes a hunk's changed lines to be its first added line and
  # the next LinesAdded-1, which with context between two changes mutates
  # an unchanged line and skips a changed one; with no context
  # (diff.context=0) a hunk's added lines are consecutive.
  (
    cd "${pkg}"
    GIT_CONFIG_COUNT=5 \
      GIT_CONFIG_KEY_0=diff.relative GIT_CONFIG_VALUE_0=true \
      GIT_CONFIG_KEY_1=diff.context GIT_CONFIG_VALUE_1=0 \
      GIT_CONFIG_KEY_2=diff.interHunkContext GIT_CONFIG_VALUE_2=0 \
      GIT_CONFIG_KEY_3=diff.noprefix GIT_CONFIG_VALUE_3=false \
      GIT_CONFIG_KEY_4=diff.mnemonicPrefix GIT_CONFIG_VALUE_4=false \
      GOFLAGS=-short nice -n 10 go tool gremlins unleash "${flags[@]}" "${root}/${pkg}"
  )
  args+=("${pkg}=${json}")
done
if [[ ${MUTATION_WHOLE:-} == 1 ]]; then
  "${out}/mutationreport" -floor "${floor}" "${args[@]}"
else
  "${out}/mutationreport" -changed -equivalent "${equivalent}" "${args[@]}"
fi
