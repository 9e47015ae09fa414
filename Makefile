# hivekeeper developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: help build test test-unit test-race toolhive-binaries toolhive-delta conformance generate verify verify-mutation mutate lint run bench bench-sweep reliability test-binaries helm sync-chart image image-docker release verify-workflows docs-fresh docs-stale docs-site docs-generate dashboard-png clean

help: ## List targets.
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build bin/hivekeeper and the kubectl plugin bin/kubectl-hivekeeper.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/hivekeeper ./cmd/controller
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/kubectl-hivekeeper ./cmd/kubectl-hivekeeper

test-binaries: ## Build (once, cached in ~/.cache/hivekeeper) etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok used by tests.
	@hack/test-binaries.sh >/dev/null

# The binary folders are read in a step of their own under set -e: in
# `VAR=$$(script) go test` the script's exit status is lost, and a script
# that failed would leave the variable empty (its suites skip) or wrong.
# With the variables set, a suite that finds its binaries missing or
# broken fails instead of skipping (framework.Missing).
BINARIES := set -euo pipefail; \
  test_binaries=$$(hack/test-binaries.sh); [[ -d $$test_binaries ]]; export HIVEKEEPER_TEST_BINARIES=$$test_binaries
TOOLHIVE_BINARIES := toolhive_binaries=$$(hack/toolhive-binaries.sh); [[ -d $$toolhive_binaries ]]; export HIVEKEEPER_TOOLHIVE_BINARIES=$$toolhive_binaries

test: test-binaries toolhive-binaries image ## Run every test: unit, integration against a real kube-apiserver + etcd (and a fuller cluster), ToolHive runtime conformance, the image.
	$(BINARIES); $(TOOLHIVE_BINARIES); \
	  HIVEKEEPER_IMAGE=$(CURDIR)/bin/image go test -count=1 -timeout 30m ./...

# RACE_PKGS are the packages test-race runs with the race detector: every
# unit test (-short) but those of the renderers and their golden files,
# pure functions that start no goroutine, whose tests would take 9 of the
# 30 minutes -race took on 2 busy cores; then the process tests, which
# build the binary with -race and fail on a race in it (SIGTERM, leader
# election). make test runs every package without -race as well.
RACE_PKGS ?= $(shell go list ./... | grep -v -e /pkg/toolhive/render/ -e /test/golden | sed "s|^github.com/hivekeeper/hivekeeper/|./|")
test-race: test-binaries ## Run the unit tests and the process tests (test/integration/process) with the race detector.
	$(BINARIES); \
	  go test -race -short -count=1 -timeout 30m $(RACE_PKGS); \
	  go test -race -count=1 -timeout 15m ./test/integration/process/

toolhive-binaries: ## Build (once, cached in ~/.cache/hivekeeper) ToolHive's thv-proxyrunner, vmcp and thv-operator at the pinned release.
	@hack/toolhive-binaries.sh >/dev/null

# FROM and TO are ToolHive releases hack/versions.env pins (both built).
toolhive-delta: test-binaries toolhive-binaries ## Run ToolHive FROM's and TO's operators over the same manifests and write what changed to docs/toolhive-releases.md (make toolhive-delta FROM=v0.63.0 TO=v0.66.0).
	@test -n "$(FROM)" -a -n "$(TO)" || { echo 'usage: make toolhive-delta FROM=<release> TO=<release>'; exit 2; }
	$(BINARIES); $(TOOLHIVE_BINARIES); \
	  TOOLHIVE_DELTA_FROM=$(FROM) TOOLHIVE_DELTA_TO=$(TO) go test -count=1 -timeout 40m -run TestToolHiveDelta ./test/toolhivedelta/ -args -out $(CURDIR)/docs/toolhive-releases.md

conformance: test-binaries toolhive-binaries ## Run only the ToolHive runtime conformance suite.
	$(BINARIES); $(TOOLHIVE_BINARIES); \
	  go test -count=1 -timeout 20m ./test/conformance/...

test-unit: ## Run the unit tests only (no API server).
	go test -count=1 -short ./...

generate: ## Regenerate clients, deepcopy, CRDs and the chart's copies of them.
	hack/update-codegen.sh
	hack/sync-chart.sh

verify: ## Fail if generated code, the chart or a generated document is stale, code is unformatted, vet complains or a workflow does not pass actionlint.
	hack/verify-codegen.sh
	go run ./hack/docfresh
	go run ./hack/compatdoc -check
	$(MAKE) --no-print-directory docs-site
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	go vet ./...
	hack/verify-chart.sh
	$$(hack/tool.sh actionlint) .github/workflows/*.yml

verify-workflows: ## Check the forge's workflows with actionlint (built once by hack/tool.sh).
	$$(hack/tool.sh actionlint) .github/workflows/*.yml

# A generated document (docs/performance.md, reliability.md,
# toolhive-releases.md, mutation.md) is current while no commit after the
# run it names changed its generator or the code it measures; see
# hack/docfresh for what counts, and hack/docs-unaffected.txt for commits
# judged to change none of its figures.
docs-fresh: ## Fail if a generated document's inputs changed after its run, unless the page says it is not current.
	go run ./hack/docfresh

docs-generate: ## Rewrite docs/compatibility.md's table of deliberate differences from test/deliberate, the list the suites' exceptions are checked against.
	go run ./hack/compatdoc

docs-site: ## Build the documentation site into bin/site (MkDocs, Material theme: Debian's mkdocs and mkdocs-material) and fail on a broken link or anchor.
	@command -v mkdocs >/dev/null || { echo 'docs-site needs MkDocs with the Material theme: apt-get install mkdocs mkdocs-material'; exit 1; }
	mkdocs build --strict --quiet
	go run ./hack/sitelinks bin/site

docs-stale: ## Write a "not current" notice on each generated document whose inputs changed after its run (and remove stale notices).
	go run ./hack/docfresh -fix

lint: verify ## Alias of verify.

verify-mutation: ## Fail if a mutant on a line the change touched, in a package of hack/mutation-floor.txt, survives (gremlins --diff; base: origin/main or HEAD~, MUTATION_BASE=<rev>; MUTATION_WHOLE=1: whole packages vs their floors).
	hack/verify-mutation.sh

# PKGS are package directories; each is mutated on its own (its own tests
# only, -short), its result kept in bin/mutation/, and docs/mutation.md is
# rebuilt from every result kept there. A whole pkg/ run takes hours on 2
# cores: run the packages a change touches, e.g. make mutate PKGS=./pkg/drift
PKGS ?= $(shell go list -f '{{.Dir}}' ./pkg/... | grep -v -e /generated/ -e /apis/ | sed "s|^$(CURDIR)/|./|")
MUTATION_WORKERS ?= 2

mutate: ## Mutation-test PKGS (default: pkg/ but generated code; e.g. make mutate PKGS=./pkg/drift) with gremlins; writes docs/mutation.md.
	@mkdir -p bin/mutation
	@set -e; for p in $(PKGS); do \
	  p=$${p#./}; echo "== gremlins $$p"; \
	  GOFLAGS=-short nice -n 10 go tool gremlins unleash --workers $(MUTATION_WORKERS) --timeout-coefficient 10 \
	    -o bin/mutation/$$(echo $$p | tr / _).json ./$$p; \
	done
	go run ./hack/mutationreport -intro hack/mutation-notes.md -equivalent hack/mutation-equivalent.txt \
	  $$(for f in bin/mutation/*.json; do b=$$(basename $$f .json); echo "$$(echo $$b | tr _ /)=$$f"; done) > docs/mutation.md

run: test-binaries build ## Start a local API server, apply examples/, run hivekeeper against it.
	hack/local-up.sh

bench: test-binaries toolhive-binaries ## Benchmark N=300 MCPServers (cold start 5 rounds), and ToolHive's operator beside it, on a local cluster; writes docs/performance.md.
	go run ./test/bench -n 300 -peer-n 300 -command "make bench" -out docs/performance.md

# BENCH_NOTE, when set, is a sentence on the conditions of the run (other
# load on the machine) that the report prints.
bench-sweep: test-binaries toolhive-binaries ## Benchmark N=300,1000,3000 (cold start 5, 3 and 3 rounds) and ToolHive's operator at 300 (75 minutes on 2 cores); writes docs/performance.md and docs/performance.png.
	go run ./test/bench -n 300,1000,3000 -rounds 5,3,3 -peer-n 300 -steady 30s -note "$(BENCH_NOTE)" -command "make bench-sweep" -out docs/performance.md -plot docs/performance.png

reliability: test-binaries ## Run the fault suite against a real API server; writes docs/reliability.md.
	$(BINARIES); \
	  HIVEKEEPER_WRITE_RELIABILITY=1 go test -count=1 -timeout 30m ./test/integration/faults/

helm: ## Build the pinned helm into ~/.cache/hivekeeper (once).
	@hack/helm.sh >/dev/null

sync-chart: ## Copy config/crd and the dashboard into the chart.
	hack/sync-chart.sh

# The image's files carry the commit's time, so the same commit gives the
# same image.
IMAGE_CREATED ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

image: ## Build the container image without Docker: bin/image/oci (OCI layout) and bin/image/hivekeeper.tar (docker load, crane push).
	CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags '$(LDFLAGS)' -o bin/image/hivekeeper ./cmd/controller
	CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags '$(LDFLAGS)' -o bin/image/kubectl-hivekeeper ./cmd/kubectl-hivekeeper
	GOOS= GOARCH= go run ./hack/image --binary bin/image/hivekeeper --plugin bin/image/kubectl-hivekeeper --arch $$(go env GOARCH) --version $(VERSION) --out bin/image \
	  --revision "$$(git rev-parse HEAD 2>/dev/null)" --created $(IMAGE_CREATED)

# The release: semver without the v, from HEAD's tag (v0.1.0 is 0.1.0); on
# an untagged commit a development version that names it.
RELEASE_VERSION ?= $(or $(patsubst v%,%,$(shell git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null)),0.0.0-dev.$(shell git rev-parse --short HEAD 2>/dev/null || echo unknown))

release: ## Build a release into dist/: the multi-arch image (OCI layout), SBOM, provenance, the plugin for 6 platforms, krew manifest, chart, SHA256SUMS. A dry run; PUSH=1 pushes the image and the chart.
	go run ./hack/release -version "$(RELEASE_VERSION)" -out dist $(if $(PUSH),-push ghcr.io/hivekeeper/hivekeeper)

image-docker: ## Build the same image with a Docker engine (BuildKit) from the Dockerfile.
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$$(git rev-parse HEAD) -t hivekeeper:$(VERSION) .

dashboard-png: ## Re-render docs/dashboard.png (needs Debian's chromium).
	hack/render-dashboard.sh

clean: ## Remove build outputs (keeps the cached API server and tool binaries).
	rm -rf bin/hivekeeper bin/kubectl-hivekeeper bin/hivekeeper-bench bin/image dist
