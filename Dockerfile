# syntax=docker/dockerfile:1
#
# The blis-operator image for users with a container engine: `make docker-build IMG=...`.
# It holds /manager (the entrypoint) and /blis (what engine Jobs run), both static binaries, and
# runs as the non-root user 65532. `make image` builds an equivalent image without any container
# engine (hack/tools/mkimage), which is how the end-to-end tests get it.

ARG GO_VERSION=1.26.8

# ---- build: static binaries for the target platform
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS builder
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
ENV CGO_ENABLED=0 GOTOOLCHAIN=local
WORKDIR /workspace

# Dependencies first, so source edits reuse the module layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/manager ./cmd && \
    GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags "-s -w" -o /out/blis ./cmd/blis

# A user database naming the non-root user, as the final image has no tools to make one.
RUN mkdir -p /out/etc && \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/etc/passwd && \
    printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group

# ---- run: nothing but the two binaries and the user database
FROM scratch
COPY --from=builder /out/etc/passwd /out/etc/group /etc/
COPY --from=builder /out/manager /out/blis /
USER 65532:65532
ENV PATH=/
ENTRYPOINT ["/manager"]
