# hivekeeper developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: help build test test-unit test-race toolhive-binaries conformance generate verify verify-mutation mutate lint run bench bench-sweep reliability test-binaries helm sync-chart image image-docker dashboard-png clean

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

conformance: test-binaries toolhive-binaries ## Run only the ToolHive runtime conformance suite.
	$(BINARIES); $(TOOLHIVE_BINARIES); \
	  go test -count=1 -timeout 20m ./test/conformance/...

test-unit: ## Run the unit tests only (no API server).
	go test -count=1 -short ./...

generate: ## Regenerate clients, deepcopy, CRDs and the chart's copies of them.
	hack/update-codegen.sh
	hack/sync-chart.sh

verify: ## Fail if generated code or the chart is stale, code is unformatted or vet complains.
	hack/verify-codegen.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	go vet ./...
	hack/verify-chart.sh

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
	go run ./test/bench -n 300 -peer-n 300 -out docs/performance.md

# BENCH_NOTE, when set, is a sentence on the conditions of the run (other
# load on the machine) that the report prints.
bench-sweep: test-binaries toolhive-binaries ## Benchmark N=300,1000,3000 (cold start 5, 3 and 3 rounds) and ToolHive's operator at 300 (75 minutes on 2 cores); writes docs/performance.md and docs/performance.png.
	go run ./test/bench -n 300,1000,3000 -rounds 5,3,3 -peer-n 300 -steady 30s -note "$(BENCH_NOTE)" -out docs/performance.md -plot docs/performance.png

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
	  --revision "$$(git rev-parse HEAD 2>/dev/null)" --created $(IMAGE_CREATED) \
	  --ca-certificates-version "$$(dpkg-query -W -f='$${Version}' ca-certificates 2>/dev/null)"

image-docker: ## Build the same image with a Docker engine (BuildKit) from the Dockerfile.
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$$(git rev-parse HEAD) -t hivekeeper:$(VERSION) .

dashboard-png: ## Re-render docs/dashboard.png (needs Debian's chromium).
	hack/render-dashboard.sh

clean: ## Remove build outputs (keeps the cached API server and tool binaries).
	rm -rf bin/hivekeeper bin/kubectl-hivekeeper bin/hivekeeper-bench bin/image
