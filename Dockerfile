# hivekeeper container image.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t hivekeeper .
#
# Needs BuildKit (the default builder since Docker 23) for the cache mounts.
# Stage 1 compiles a static binary on the build machine's platform and
# cross-compiles for the target (buildx --platform linux/amd64,linux/arm64).
# Stage 2 is distroless: no shell, no package manager, a non-root user.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build

WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-mod=readonly

# Modules first, so source edits do not invalidate the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY cmd/ cmd/
COPY pkg/ pkg/
# The CRDs the kubectl plugin embeds.
COPY config/crd/ config/crd/

ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/hivekeeper ./cmd/controller && \
    GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/kubectl-hivekeeper ./cmd/kubectl-hivekeeper

# The same image `make image` builds without Docker (hack/image): the
# binary as entrypoint, the kubectl plugin beside it, user 65532, CA certificates, these labels.
FROM gcr.io/distroless/static:nonroot

ARG VERSION=dev
ARG REVISION=""
LABEL org.opencontainers.image.title="hivekeeper" \
      org.opencontainers.image.description="Kubernetes controller for the ToolHive MCP API (toolhive.stacklok.dev/v1beta1)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/hivekeeper/hivekeeper"

COPY --from=build /out/hivekeeper /hivekeeper
# The kubectl plugin, for a Job that runs `/kubectl-hivekeeper preflight`.
COPY --from=build /out/kubectl-hivekeeper /kubectl-hivekeeper
# 65532 is distroless' "nonroot"; numeric so runAsNonRoot can verify it.
USER 65532:65532
# Metrics and health probes (--metrics-bind-address, --health-probe-bind-address).
EXPOSE 8080 8081
ENTRYPOINT ["/hivekeeper"]
