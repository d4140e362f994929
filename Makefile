# tenant-operator. `make demo` bootstraps a simulated tenant end to end;
# `make test` runs the unit tests and every e2e suite. Both build the test
# world's binaries from the Go module proxy first (cached in bin/; ~25-35 min
# on 2 cores the first time, seconds afterwards).

SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
E2E_TIMEOUT ?= 60m

.PHONY: all
all: build

##@ Build

.PHONY: world-bins
world-bins: ## Build etcd, kube-*, kwok, Flux controllers and the registry into bin/ (only what is missing or re-pinned).
	hack/build-world.sh

.PHONY: upstream
upstream: ## Unpack the real upstream trees (Cozystack's packages, OpenStack charts) into bin/upstream/ (UPSTREAM_DIR, UPSTREAM_CLONE=1: see hack/upstream.sh).
	hack/upstream.sh

.PHONY: build
# Static binaries: with cgo, kustomize's plugin loader (pulled in by Helm's
# kube client) makes the linker export every symbol and link dynamically.
# Stripped and path-free as the world's Flux controllers are built, so the
# binaries compare like for like and ship as they are tested.
GO_BUILD = CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w"
build: ## Build our binaries into bin/ (static, CGO_ENABLED=0, stripped).
	$(GO_BUILD) -o $(BIN)/tenant-operator ./cmd/tenant-operator
	$(GO_BUILD) -o $(BIN)/kubectl-tenant ./cmd/kubectl-tenant
	$(GO_BUILD) -o $(BIN)/tenant-seeder ./cmd/tenant-seeder

.PHONY: generate
generate: ## Regenerate deepcopy code and CRDs from operator/apis; copy the pinned Flux CRDs.
	cd hack/tools/controller-gen && GOFLAGS=-mod=mod $(GO) build -o $(BIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
	$(BIN)/controller-gen object paths=./operator/apis/... crd:crdVersions=v1 output:crd:dir=./manifests/crds
	mv manifests/crds/seeder.tenant.cozystack.io_*.yaml manifests/seeder-crds/
	hack/flux-crds.sh
	$(GO) run ./hack/seedgen manifests/seed

##@ Run

.PHONY: demo
demo: world-bins upstream build ## Bootstrap a simulated tenant cluster end to end and leave it up (Ctrl-C stops it).
	$(GO) run ./e2e/cmd/demo $(DEMO_ARGS)

.PHONY: world
world: world-bins ## Start an empty test world with 3 fake nodes and print its KUBECONFIG.
	$(GO) run ./e2e/cmd/world

##@ Test

.PHONY: fmt
fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

.PHONY: vet
vet:
	$(GO) vet ./... ./e2e/testdata/charts/...

.PHONY: unit
unit: upstream ## Unit tests (pure logic; the chart tests read the real trees).
	$(GO) test $$($(GO) list ./... | grep -v /e2e/) ./e2e/packages/... ./e2e/world/... ./e2e/testdata/charts/...

.PHONY: e2e
e2e: world-bins upstream build ## e2e suites, one at a time (each starts its own worlds).
	$(GO) test -p 1 -timeout $(E2E_TIMEOUT) ./e2e/smoke/... ./e2e/bootstrap/... ./e2e/variants/... ./e2e/addons/... ./e2e/seeding/... ./e2e/catalog/... -ginkgo.v

.PHONY: test
test: fmt vet unit e2e ## Everything CI runs.

.PHONY: help
help:
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

##@ Benchmarks

.PHONY: bench
bench: world-bins upstream build ## Measure bootstrap vs the critical-path limit vs the Flux-only chain (3, 1, 10, 50 nodes), idle footprint, toggle latency and fault trials; writes BENCHMARKS.md.
	$(GO) run ./bench $(BENCH_ARGS)

.PHONY: bench-ci
bench-ci: world-bins upstream build ## The reduced bench CI runs: one run, one size, a few fault trials; fails only when a trial does not converge cleanly.
	$(GO) run ./bench -runs 1 -sizes "" -idle 30s -toggles 5 -dependency-rounds 2 -kill-trials 2 -fault-trials 1 -tenant-runs 1 -strict -out $(BIN)/BENCHMARKS-ci.md
	cat $(BIN)/BENCHMARKS-ci.md
