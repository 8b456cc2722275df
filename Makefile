# blis-operator Makefile (kubebuilder v4 conventions).
#
# Every tool the build needs is built from pinned Go modules into bin/ on first use and reused
# afterwards; nothing is downloaded as a prebuilt binary.

# Image the manager and engine Jobs run (the same image holds `manager` and `blis`).
IMG ?= blis-operator:dev

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec
export GOTOOLCHAIN = local

LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

## Tool versions (pinned).
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION ?= v5.8.2
GOLANGCI_LINT_VERSION ?= v2.15.0
HELM_VERSION ?= v3.19.5
# Kubernetes and etcd versions of the test clusters are pinned by hack/tools/{kube,etcd}/go.mod.
K8S_VERSION := $(shell awk '/^require k8s.io\/kubernetes /{print $$3}' hack/tools/kube/go.mod)
K8S_BIN ?= $(LOCALBIN)/k8s/$(K8S_VERSION)

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
KUBECTL ?= $(K8S_BIN)/kubectl

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC from the API types and kubebuilder markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd:allowDangerousTypes=true paths="./api/..." paths="./cmd/..." $(if $(wildcard internal/controller),paths="./internal/controller/...") output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run gofmt on the module.
	gofmt -l -w $$(go list -f '{{.Dir}}' ./...)

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: test
test: manifests generate fmt vet envtest ## Run all unit, engine and controller tests (against a real kube-apiserver and etcd).
	KUBEBUILDER_ASSETS="$(K8S_BIN)" go test ./... -count=1

.PHONY: bench
bench: ## Run the engine benchmarks.
	go test ./internal/engine/... -run '^$$' -bench . -benchmem

.PHONY: test-browser
test-browser: ## Render the HTML reports in headless Chromium (installed by hack/install-browser.sh) and check their charts; BROWSER_ARTIFACTS=DIR keeps the pages and screenshots.
	hack/install-browser.sh
	go test -tags browser ./test/browser -count=1 -v

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager and the blis CLI into bin/.
	CGO_ENABLED=0 go build -trimpath -o $(LOCALBIN)/manager ./cmd
	CGO_ENABLED=0 go build -trimpath -o $(LOCALBIN)/blis ./cmd/blis

.PHONY: run
run: manifests generate fmt vet ## Run the manager from your host against the cluster in ~/.kube/config (or $$KUBECONFIG).
	go run ./cmd

# The image: one layer holding /manager and /blis, static (CGO_ENABLED=0), user 65532, entrypoint
# /manager. Packed from the binaries by hack/tools/mkimage, so no container engine is involved.
IMAGE_DIR ?= $(LOCALBIN)/image
IMAGE_TAR ?= $(IMAGE_DIR)/blis-operator.tar
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_ARCH ?= $(shell go env GOARCH)
IMAGE_GOFLAGS = CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH)
IMAGE_LDFLAGS = -s -w -X main.version=$(VERSION)

.PHONY: image
image: mkimage ## Build image $(IMG) into bin/image/ and import it into the single-node cluster's containerd when it runs.
	mkdir -p $(IMAGE_DIR)
	$(IMAGE_GOFLAGS) go build -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o $(IMAGE_DIR)/manager ./cmd
	$(IMAGE_GOFLAGS) go build -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o $(IMAGE_DIR)/blis ./cmd/blis
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) $(MKIMAGE) -out $(IMAGE_TAR) -tag $(IMG) \
		-file $(IMAGE_DIR)/manager:/manager:755 -file $(IMAGE_DIR)/blis:/blis:755 \
		-user 65532:65532 -entrypoint /manager -env PATH=/ -platform linux/$(IMAGE_ARCH) \
		-label org.opencontainers.image.title=blis-operator -label org.opencontainers.image.version=$(VERSION)
	@if [ -S node/containerd.sock ]; then \
		ctr --address node/containerd.sock --namespace k8s.io images import $(IMAGE_TAR) && \
		echo "imported $(IMG) into the single-node cluster"; \
	else echo "single-node cluster not running: $(IMAGE_TAR) not imported"; fi

# A container engine is not needed for any of the above; docker-build is for users who have one.
CONTAINER_TOOL ?= docker

.PHONY: docker-build
docker-build: ## Build image $(IMG) with a container engine from the Dockerfile (multi-stage, static, non-root).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push image $(IMG) with a container engine.
	$(CONTAINER_TOOL) push $(IMG)

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Remove the CRDs from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy the manager (config/default) with image $(IMG).
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: kustomize ## Remove the manager from the cluster.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: build-installer
build-installer: manifests generate kustomize ## Write dist/install.yaml (CRDs and the manager) for image $(IMG).
	mkdir -p dist
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default > dist/install.yaml

##@ Helm

.PHONY: helm-sync
helm-sync: manifests kustomize ## Regenerate the Helm chart's CRDs and RBAC (charts/blis-operator/templates/generated) from config/.
	KUSTOMIZE=$(KUSTOMIZE) hack/sync-chart.sh

.PHONY: helm-check
helm-check: manifests kustomize helm ## Fail when the Helm chart drifts from config/; lint it and compare its objects with config/default.
	KUSTOMIZE=$(KUSTOMIZE) HELM=$(HELM) hack/sync-chart.sh --check

##@ Test clusters

.PHONY: envtest
envtest: $(LOCALBIN) ## Build etcd, kube-apiserver and kubectl for controller tests (once, into bin/k8s).
	hack/build-k8s.sh envtest

.PHONY: node-binaries
node-binaries: $(LOCALBIN) ## Build the binaries of the single-node test cluster (once, into bin/k8s).
	hack/build-k8s.sh node

# The single-node cluster: state under node/ (git-ignored), admin kubeconfig node/kubeconfig.
NODE_KUBECONFIG ?= $(shell pwd)/node/kubeconfig
# Keep the cluster running after test-e2e (E2E_KEEP=1) to inspect it; `make node-down` later.
E2E_KEEP ?= 0
E2E_TIMEOUT ?= 15m
# How test-e2e deploys the manager: kustomize (config/default, as `make deploy`) or helm (the chart).
E2E_DEPLOY ?= kustomize

.PHONY: node-deps
node-deps: ## Install the Debian packages of the single-node cluster (containerd, runc, CNI plugins, ...) if missing.
	hack/install-node-deps.sh

.PHONY: node-up
node-up: node-binaries node-deps ## Start the single-node cluster where pods really run (no-op when up). Needs root.
	hack/node-up.sh

.PHONY: node-down
node-down: ## Stop the single-node cluster and clean the host (keeps PKI, imported images and node/logs).
	hack/node-down.sh

.PHONY: test-e2e
test-e2e: node-binaries node-deps manifests kustomize mkimage $(if $(filter helm,$(E2E_DEPLOY)),helm) ## Start the node, load the image, deploy (E2E_DEPLOY=kustomize|helm), run test/e2e, tear down.
	@trap 'echo "TIMING test-e2e total $$SECONDS s"; [ "$(E2E_KEEP)" = 1 ] || hack/node-down.sh' EXIT; \
	phase() { echo "TIMING $$1: $$((SECONDS - t)) s"; t=$$SECONDS; }; t=0; \
	hack/node-up.sh; phase node-up; \
	export KUBECONFIG="$(NODE_KUBECONFIG)"; \
	$(MAKE) --no-print-directory image IMG="$(IMG)"; phase image; \
	existed=$$($(KUBECTL) -n blis-system get deployment blis-operator-controller-manager -o name 2>/dev/null || true); \
	if [ "$(E2E_DEPLOY)" = helm ]; then \
		img="$(IMG)"; \
		$(HELM) upgrade --install blis-operator charts/blis-operator --namespace blis-system --create-namespace \
			--set image.repository="$${img%:*}" --set image.tag="$${img##*:}"; \
	else $(MAKE) --no-print-directory deploy IMG="$(IMG)"; fi; \
	if [ -n "$$existed" ]; then $(KUBECTL) -n blis-system rollout restart deployment/blis-operator-controller-manager; fi; \
	phase deploy; \
	E2E_KUBECTL="$(KUBECTL)" go test -tags e2e ./test/e2e -count=1 -v -timeout $(E2E_TIMEOUT); phase tests

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN): | $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: kustomize
kustomize: $(KUSTOMIZE)
$(KUSTOMIZE): | $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT)
$(GOLANGCI_LINT): | $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

MKIMAGE ?= $(LOCALBIN)/mkimage

.PHONY: mkimage
mkimage: $(MKIMAGE)
$(MKIMAGE): hack/tools/mkimage/main.go hack/tools/mkimage/go.mod | $(LOCALBIN)
	cd hack/tools/mkimage && CGO_ENABLED=0 go build -trimpath -o $(MKIMAGE) .

.PHONY: helm
helm: $(HELM)
$(HELM): | $(LOCALBIN)
	$(call go-install-tool,$(HELM),helm.sh/helm/v3/cmd/helm,$(HELM_VERSION))

# go-install-tool builds package $(2) at version $(3) and installs it as $(1) (a versioned name,
# so a version bump rebuilds it).
define go-install-tool
@[ -f "$(1)" ] || { \
set -e; \
package=$(2)@$(3) ;\
echo "Installing $${package}" ;\
rm -f "$(1)" ;\
GOBIN="$(LOCALBIN)" CGO_ENABLED=0 go install -trimpath "$${package}" ;\
mv "$(LOCALBIN)/$$(basename "$$(echo "$(2)" | sed -E 's#/v[0-9]+$$##')")" "$(1)" ;\
}
endef
