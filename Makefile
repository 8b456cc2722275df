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

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager and the blis CLI into bin/.
	CGO_ENABLED=0 go build -trimpath -o $(LOCALBIN)/manager ./cmd
	CGO_ENABLED=0 go build -trimpath -o $(LOCALBIN)/blis ./cmd/blis

.PHONY: run
run: manifests generate fmt vet ## Run the manager from your host against the cluster in ~/.kube/config (or $$KUBECONFIG).
	go run ./cmd

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

##@ Test clusters

.PHONY: envtest
envtest: $(LOCALBIN) ## Build etcd, kube-apiserver and kubectl for controller tests (once, into bin/k8s).
	hack/build-k8s.sh envtest

.PHONY: node-binaries
node-binaries: $(LOCALBIN) ## Build the binaries of the single-node test cluster (once, into bin/k8s).
	hack/build-k8s.sh node

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
