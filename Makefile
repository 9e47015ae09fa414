# hivekeeper developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: help build test test-unit toolhive-binaries conformance generate verify lint run bench bench-sweep reliability test-binaries helm sync-chart image dashboard-png clean

help: ## List targets.
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## Build bin/hivekeeper.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/hivekeeper ./cmd/controller

test-binaries: ## Build (once, cached in ~/.cache/hivekeeper) the kube-apiserver and etcd used by tests.
	@hack/test-binaries.sh >/dev/null

test: test-binaries toolhive-binaries ## Run every test: unit, integration against a real kube-apiserver + etcd, and ToolHive runtime conformance.
	HIVEKEEPER_TEST_BINARIES=$$(hack/test-binaries.sh) HIVEKEEPER_TOOLHIVE_BINARIES=$$(hack/toolhive-binaries.sh) \
	  go test -count=1 -timeout 30m ./...

toolhive-binaries: ## Build (once, cached in ~/.cache/hivekeeper) ToolHive's thv-proxyrunner, vmcp and thv-operator at the pinned release.
	@hack/toolhive-binaries.sh >/dev/null

conformance: test-binaries toolhive-binaries ## Run only the ToolHive runtime conformance suite.
	HIVEKEEPER_TEST_BINARIES=$$(hack/test-binaries.sh) HIVEKEEPER_TOOLHIVE_BINARIES=$$(hack/toolhive-binaries.sh) \
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

run: test-binaries build ## Start a local API server, apply examples/, run hivekeeper against it.
	hack/local-up.sh

bench: test-binaries ## Benchmark N=300 MCPServers against a real API server; writes docs/performance.md.
	go run ./test/bench -n 300 -out docs/performance.md

bench-sweep: test-binaries ## Benchmark N=300,1000,3000,10000 (about an hour); writes docs/performance.md and docs/performance.png.
	go run ./test/bench -n 300,1000,3000,10000 -out docs/performance.md -plot docs/performance.png

reliability: test-binaries ## Run the fault suite against a real API server; writes docs/reliability.md.
	HIVEKEEPER_TEST_BINARIES=$$(hack/test-binaries.sh) HIVEKEEPER_WRITE_RELIABILITY=1 go test -count=1 -timeout 20m ./test/integration/faults/

helm: ## Build the pinned helm into ~/.cache/hivekeeper (once).
	@hack/helm.sh >/dev/null

sync-chart: ## Copy config/crd and the dashboard into the chart.
	hack/sync-chart.sh

image: ## Build the container image (needs a Docker engine with BuildKit).
	docker build --build-arg VERSION=$(VERSION) -t hivekeeper:$(VERSION) .

dashboard-png: ## Re-render docs/dashboard.png (needs Debian's chromium).
	hack/render-dashboard.sh

clean: ## Remove build outputs (keeps the cached API server and tool binaries).
	rm -f bin/hivekeeper bin/hivekeeper-bench
