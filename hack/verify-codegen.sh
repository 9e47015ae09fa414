#!/usr/bin/env bash
# Fails when generated code or CRDs are stale: regenerates in a scratch copy
# of the tree and compares the generated folders with the working tree.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "${scratch}"' EXIT

# Copy everything but build outputs; the generated folders are wiped so that
# a file that should no longer exist is caught as well.
tar -C "${root}" --exclude=./bin --exclude=./.git -cf - . | tar -C "${scratch}" -xf -
rm -rf "${scratch}/pkg/generated"
# config/crd also holds crd.go, which embeds the YAML: only the YAML is
# generated.
find "${scratch}/config/crd" -name '*.yaml' -delete
# kube_codegen.sh scans its output folders for stale files before writing.
mkdir -p "${scratch}/pkg/generated/"{clientset,listers,informers}
find "${scratch}/pkg/apis" -name 'zz_generated.*' -delete
# Share the generator binaries kube_codegen.sh installs, so a second run
# does not rebuild them.
mkdir -p "${scratch}/bin" "${root}/bin/tools"
ln -s "${root}/bin/tools" "${scratch}/bin/tools"

(cd "${scratch}" && hack/update-codegen.sh) >/dev/null

status=0
for dir in pkg/generated pkg/apis config/crd; do
  if ! diff -ruN "${root}/${dir}" "${scratch}/${dir}"; then
    status=1
  fi
done
if [[ ${status} -ne 0 ]]; then
  echo "generated code is stale: run hack/update-codegen.sh and commit the result" >&2
  exit 1
fi
echo "generated code is up to date"
