# hivekeeper developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: help build test test-unit test-integration generate verify lint run bench test-binaries clean

help: ## List targets.
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

build: ## Build bin/hivekeeper.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/hivekeeper ./cmd/controller

test-binaries: ## Build (once, cached in bin/k8s) the kube-apiserver and etcd used by tests.
	@hack/test-binaries.sh >/dev/null

test: test-binaries ## Run every test: unit and integration (real kube-apiserver + etcd).
	HIVEKEEPER_TEST_BINARIES=$$(hack/test-binaries.sh) go test -count=1 ./...

test-unit: ## Run the unit tests only (no API server).
	go test -count=1 -short ./...

generate: ## Regenerate clients, deepcopy and CRDs.
	hack/update-codegen.sh

verify: ## Fail if generated code is stale, code is unformatted or vet complains.
	hack/verify-codegen.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	go vet ./...

lint: verify ## Alias of verify.

run: test-binaries build ## Start a local API server, apply examples/, run hivekeeper against it.
	hack/local-up.sh

clean: ## Remove build outputs (keeps the cached API server binaries).
	rm -f bin/hivekeeper
