# The workshop's operators: build, generate, test and run them on a local
# cluster. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
export PATH := $(BIN):$(PATH)

# Every module of the workspace, and the operators among them.
MODULES := $(shell go list -m -f '{{.Dir}}' | sed 's|^$(ROOT)/||')
OPERATORS := $(patsubst operators/%/cmd/main.go,%,$(wildcard operators/*/cmd/main.go))
# Operators with an API, including those whose controller is still to come.
APIS := $(patsubst operators/%/api,%,$(wildcard operators/*/api))

# The OLM bundle and catalog generator: a module outside go.work (it depends
# on operator-registry, which no operator module should), with the build tag
# operator-registry's image libraries need without gpgme.
CATALOG_GEN := catalog/gen
CATALOG_TAGS := containers_image_openpgp
# Modules outside go.work too, for their dependencies: lab 8's operator
# (kustomize's) and the Helm charts' generator (Helm's and kustomize's).
STANDALONE_MODULES := labs/kustomize charts/gen
# The registry the bundles and the catalog name images in.
REGISTRY ?= ghcr.io/operator-workshops

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Build the pinned tools and control plane into bin/ (minutes the first time, then seconds).
	scripts/build-tools.sh

##@ Development

.PHONY: generate
generate: generate-code bundle catalog charts ## Regenerate deepcopy code, the CRDs in crds/, each operator's RBAC, the OLM bundles, the catalog and the Helm charts.

.PHONY: generate-code
generate-code: ## Regenerate deepcopy code, the CRDs in crds/ and each operator's RBAC (its own, and its users' editor and viewer roles).
	scripts/build-tools.sh controller-gen
	rm -f crds/*_*.yaml
	for op in $(APIS); do \
		cd $(ROOT)/operators/$$op; \
		controller-gen object paths=./api/...; \
		controller-gen crd paths=./api/... output:crd:artifacts:config=$(ROOT)/crds; \
	done
	for op in $(OPERATORS); do \
		cd $(ROOT)/operators/$$op; \
		controller-gen rbac:roleName=$$op-operator paths=./internal/... output:rbac:artifacts:config=config/rbac; \
	done
	scripts/gen-config.sh $(OPERATORS)

.PHONY: bundle
bundle: ## Write the OLM bundles of the release in catalog/VERSION from crds/ and each operator's config/ (REGISTRY=... for another registry).
	cd $(CATALOG_GEN) && GOWORK=off go run -tags $(CATALOG_TAGS) . -root $(ROOT) -registry $(REGISTRY) -platforms $(PLATFORMS) bundle

# What make release builds: its version, the platforms of its images and
# the directory it writes.
VERSION ?=
PLATFORMS ?= linux/amd64,linux/arm64
RELEASE_DIR ?= $(ROOT)/dist

.PHONY: release
release: ## Write release VERSION (make release VERSION=0.3.0) into dist/: each operator's install manifest (CRDs, namespace, RBAC, Deployment naming its image by digest), its image for PLATFORMS as an OCI archive, an SBOM per binary (CycloneDX, checked), the OLM bundles, SHA256SUMS.
	@if [ -z "$(VERSION)" ]; then echo "make release needs a version: make release VERSION=0.3.0" >&2; exit 2; fi
	scripts/build-tools.sh kubernetes
	PLATFORMS='$(PLATFORMS)' scripts/release.sh '$(VERSION)' '$(RELEASE_DIR)'

.PHONY: release-push
release-push: ## Push the images make release wrote into RELEASE_DIR to the registry their names say, every platform (docker login first).
	scripts/release.sh push '$(RELEASE_DIR)'

.PHONY: images
images: ## Build the operator, bundle and catalog images as docker archives in bin/images, without a daemon.
	scripts/olm-images.sh build

.PHONY: images-push
images-push: ## Build the operator, bundle and catalog images and push them to REGISTRY (docker login first).
	scripts/olm-images.sh push

.PHONY: charts
charts: ## Write a Helm chart per operator, charts/NAME, from its config/ (both variants), its CRDs and its CSV base (charts/gen).
	cd charts/gen && GOWORK=off go run . -root $(ROOT) -registry $(REGISTRY)

.PHONY: catalog
catalog: ## Render the file-based catalog catalog/index from catalog/template.yaml and the bundles.
	cd $(CATALOG_GEN) && GOWORK=off go run -tags $(CATALOG_TAGS) . -root $(ROOT) -registry $(REGISTRY) catalog

.PHONY: verify-generate
verify-generate: generate ## Fail when generated files differ from what is committed.
	@if [ -n "$$(git status --porcelain -- crds operators catalog charts)" ]; then \
		git status --short -- crds operators catalog charts; git diff --stat -- crds operators catalog charts; \
		echo "generated files are stale: run 'make generate' and commit the result"; exit 1; \
	fi

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $(MODULES) $(CATALOG_GEN) $(STANDALONE_MODULES)

# The operators' Job scripts are shellchecked by their own tests
# (TestShellcheck), as the Jobs run them, common part included.
.PHONY: lint
lint: ## Lint the Go code of every module, the shell scripts and the GitHub workflows.
	scripts/build-tools.sh golangci-lint actionlint
	for m in $(MODULES); do (cd $$m && golangci-lint run --config $(ROOT)/.golangci.yml ./...); done
	cd $(CATALOG_GEN) && GOWORK=off golangci-lint run --config $(ROOT)/.golangci.yml --build-tags $(CATALOG_TAGS) ./...
	for m in $(STANDALONE_MODULES); do (cd $$m && GOWORK=off golangci-lint run --config $(ROOT)/.golangci.yml ./...); done
	@command -v shellcheck >/dev/null || { echo "shellcheck is missing: apt-get install shellcheck"; exit 1; }
	shellcheck scripts/*.sh .ci/run scripts/kind-docker/docker scripts/kind-docker/prologue scripts/images/kube-proxy/kube-proxy
	actionlint

##@ Test

.PHONY: test
test: verify-generate verify-tree lint test-clusters ## Everything CI runs: generate and tree checks, lint, unit, fuzzing, envtest and e2e tests, the kind tests' part, a small run of the benchmark.

# What test-clusters' lanes run after their suites (make test: the
# operators' tests under the race detector, the benchmark's smoke run, the
# unit tests and fuzzing), where the machine has cores to spare: each is
# taken, in this order (the longest first), by the first lane whose suites
# are done, and the next by whichever lane is free then, so that both lanes
# end together whichever ends its suites first (each lane prints when each
# of its steps ended).
LANES_ALSO ?=
test: LANES_ALSO = test-integration bench-smoke test-unit fuzz
LANES_ALSO_DIR = $(BIN)/lanes-also

# The labs that need the local cluster's real node (their "needs: real
# node" marker) and the others, as patterns of TestLabs' subtests.
LABS_REAL_NODE := $(shell grep -l 'needs: real node' labs/[0-9]*.md | sed 's|^labs/\([0-9]*\).*|\1|' | paste -sd'|' -)
LABS_FAKE_NODES := $(shell grep -L 'needs: real node' labs/[0-9]*.md | sed 's|^labs/\([0-9]*\).*|\1|' | paste -sd'|' -)

# The cluster suites run through scripts/gotest.sh: go test -v, printing
# each test's and each lab's time, and a failed run's whole output.
GOTEST := $(ROOT)/scripts/gotest.sh

# make test-e2e and make test-kind-part, in two lanes side by side, each
# taking the targets of LANES_ALSO when its suites are done: scripts/lanes.sh
# says how (tested by scripts/lanes_test.sh, in make test-unit).
LANES = LANES_ALSO='$(LANES_ALSO)' LABS_REAL_NODE='$(LABS_REAL_NODE)' LABS_FAKE_NODES='$(LABS_FAKE_NODES)' \
	FAULTS_SEEDS=$(FAULTS_SEEDS) BIN=$(BIN) MAKE='$(MAKE)' scripts/lanes.sh
.PHONY: test-clusters
test-clusters: ## make test-e2e and make test-kind-part, in two lanes side by side.
	scripts/build-tools.sh kubernetes etcd kwok
	@mkdir -p $(BIN)
	@$(LANES) clusters

# test-clusters' second lane alone: the labs on kind (make test-kind-part's),
# the labs on fake nodes, tests/deploy on kind, tests/e2e.
.PHONY: test-lane
test-lane:
	@mkdir -p $(LANES_ALSO_DIR)
	@$(LANES) lane

.PHONY: verify-tree
verify-tree: ## Fail when git tracks a build output: a binary, or a file over 1 MiB.
	scripts/check-tree.sh

.PHONY: test-unit
test-unit: ## Unit tests of every module (no cluster; the e2e module is test-e2e's).
	for m in $(filter-out tests,$(MODULES)); do (cd $$m && go test -short -timeout 10m ./...); done
	cd $(CATALOG_GEN) && GOWORK=off go test -count=1 -timeout 15m -tags $(CATALOG_TAGS) ./...
	for m in $(STANDALONE_MODULES); do (cd $$m && GOWORK=off go test -timeout 5m ./...); done
	cd tests && go test -short -timeout 5m ./labs/
	scripts/lanes_test.sh

# The fuzz targets of the pure logic: operator/package:target. Each runs for
# FUZZTIME; their seeds also run as plain tests in test-unit. A count of
# inputs, not a duration: Go 1.26's fuzzing can fail a target with "context
# deadline exceeded" when a duration ends while a worker runs an input
# (golang/go#75804, fixed in Go 1.27).
FUZZ_TARGETS := etcd-cluster/membership:FuzzNext etcd-cluster/membership:FuzzOrdinal \
	gordon/replicas:FuzzCompute gordon/replicas:FuzzBatches
FUZZTIME ?= 25000x

.PHONY: fuzz
fuzz: ## Fuzz the membership planner, member names and gordon's replica arithmetic for FUZZTIME each (25000 inputs, about 10 s).
	for f in $(FUZZ_TARGETS); do \
		op=$${f%%/*}; rest=$${f#*/}; pkg=$${rest%%:*}; target=$${rest#*:}; \
		(cd operators/$$op && go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) ./internal/$$pkg/); \
	done

# The older etcd releases scripts/build-tools.sh builds (3.2.13, the
# workshops' release: no learners, no MoveLeader; 3.3.27: MoveLeader;
# 3.5.21), which test-integration runs the membership tests on.
ETCD_RELEASES := etcd-3.2 etcd-3.3 etcd-3.5

.PHONY: test-integration
test-integration: ## Unit and envtest integration tests of the operators, with the race detector, against the project-built kube-apiserver and etcd.
	scripts/build-tools.sh kubernetes etcd $(ETCD_RELEASES)
	for m in $(filter operators/%,$(MODULES)); do (cd $$m && go test -race -count=1 -timeout 20m ./...); done
	# The etcd operator's membership changes again, on real servers of each
	# of ETCD_RELEASES, its server binary named by build-tools.sh.
	for tool in $(ETCD_RELEASES); do \
		server=$$(scripts/build-tools.sh --binaries $$tool | tr ' ' '\n' | grep '^etcd-[0-9]') && \
		(cd operators/etcd-cluster && echo "membership tests on $$server" && \
		ETCD_RELEASE_BINARY=$(BIN)/$$server go test -count=1 -timeout 5m -run '^TestEtcd' ./internal/membership/) || exit 1; done

.PHONY: test-e2e
test-e2e: ## End-to-end tests on a local cluster (E2E_PROVIDER=local|kind|kubeconfig).
	scripts/build-tools.sh kubernetes etcd kwok
	cd tests && go test -count=1 -p 1 -timeout 50m $(E2E_ARGS) ./...

# The suites and the labs make test-kind runs (a pattern of the labs'
# numbers; empty: all). make test runs the deploy suite and labs 4, 5 and 7
# on kind; without a Docker daemon it says it skips them, unless
# E2E_KIND=required (.ci/run), which makes that a failure.
KIND_SUITES ?= ./deploy/ ./olm/
KIND_LABS ?=

.PHONY: test-kind
test-kind: ## On kind (Docker; scripts/dockerd.sh starts a daemon here): the operators deployed from their manifests (tests/deploy) and through OLM (tests/olm), a CR of each Ready, and every lab (KIND_LABS=0[457] for some).
	scripts/build-tools.sh kubernetes kind
	$(if $(KIND_SUITES),cd tests && E2E_PROVIDER=kind $(GOTEST) -count=1 -p 1 -timeout 40m $(KIND_SUITES))
	cd tests && E2E_PROVIDER=kind $(GOTEST) -count=1 -timeout 120m -run 'TestLabs/$(KIND_LABS)' ./labs/

.PHONY: test-kind-part
test-kind-part: ## make test's part of make test-kind: the deploy suite, labs 4, 5 and 7.
	@if docker info >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory test-kind KIND_SUITES=./deploy/ KIND_LABS='0[457]'; \
	elif [ "$$E2E_KIND" = required ]; then \
		echo "test-kind-part: no Docker daemon answers 'docker info', and E2E_KIND=required: start one (scripts/dockerd.sh start)" >&2; exit 1; \
	else \
		echo "test-kind-part: SKIPPED, no Docker daemon answers 'docker info' (scripts/dockerd.sh start starts one; E2E_KIND=required makes this a failure)" >&2; \
	fi

##@ Benchmarks

BENCH_ARGS ?=

# The seeds of tests/faults that make test runs: the schedule of each is the
# same every run (FAULTS_SEED=N go test ./faults/ reruns one).
FAULTS_SEEDS ?= 1,2
# How long make soak injects faults, seed after seed, and the bound of the
# whole run (a seed begun before SOAK ends runs to its end).
SOAK ?= 1h
SOAK_TIMEOUT ?= 2h

.PHONY: soak
soak: ## Inject faults on the real node, seed after seed, for SOAK (1h), every invariant checked after each; the seeds and faults also go to bin/logs/soak.log.
	scripts/build-tools.sh kubernetes etcd kwok
	@mkdir -p $(BIN)/logs
	cd tests && E2E_REAL_NODE=required FAULTS_FOR=$(SOAK) FAULTS_SEEDS=$(FAULTS_SEEDS) \
		go test -count=1 -v -timeout $(SOAK_TIMEOUT) -run TestFaults ./faults/ 2>&1 | tee $(BIN)/logs/soak.log

# The packages make mutate judges: the common module's plumbing and the
# operators' pure logic, whose tests take seconds per mutant. A controller's
# envtest suite takes a minute or more per mutant, hours per package: name
# it in MUTATE_PACKAGES to judge it (operators/gordon/internal/controller).
MUTATE_PACKAGES ?= operators/common/conditions operators/common/reconciler operators/common/secrets \
	operators/common/apply operators/etcd-cluster/internal/membership \
	operators/gordon/internal/replicas

.PHONY: mutate
mutate: ## Mutation testing (scripts/mutate) of MUTATE_PACKAGES, one mutant at a time through go test -overlay: a report per package in scripts/mutate/results. Long; not part of make test.
	scripts/build-tools.sh kubernetes etcd
	go run ./scripts/mutate -out scripts/mutate/results $(MUTATE_PACKAGES)

.PHONY: bench
bench: ## Measure each operator on many CRs against the floor and the seed (about 36 min): bench/results and bench/README.md's table (BENCH_ARGS=-help lists the sizes).
	scripts/build-tools.sh kubernetes etcd kwok
	go run ./bench -readme bench/README.md $(BENCH_ARGS)

.PHONY: bench-smoke
bench-smoke: ## Run make bench's harness on a few CRs of each operator, into bin/bench-smoke: it must measure them all, floor and seed included.
	scripts/build-tools.sh kubernetes etcd kwok
	go run ./bench -databases 4 -mysqls 2 -etcdclusters 2 -gordons 4 -idle 3s -timeout 3m \
		-cluster bench-smoke -out bin/bench-smoke

##@ Cluster

.PHONY: cluster-up
cluster-up: ## Start the local cluster (kwok, no Docker) and make it kubectl's current context.
	scripts/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Delete the local cluster.
	scripts/cluster.sh down

# What make deploy installs: operators, or operator:variant for another
# folder of its config/ (etcd-cluster:cluster-wide).
DEPLOY ?= $(OPERATORS)

# IMG: an image of the one operator DEPLOY names, already in a registry the
# cluster pulls from; make deploy then builds nothing and loads nothing.
IMG ?=

.PHONY: deploy
deploy: ## Deploy DEPLOY (all four operators) from their config/ on the local cluster (pods on its real node) or kind (when its context is current), images built without Docker; with IMG=, the one operator DEPLOY names, running IMG, on any cluster kubectl points at.
ifeq ($(IMG),)
	scripts/deploy.sh "$${CLUSTER_NAME:-workshop}" $(DEPLOY)
else
	@set -- $(DEPLOY); [ $$# = 1 ] || { echo "make deploy IMG=$(IMG): name the one operator it is an image of, DEPLOY=gordon (or gordon:cluster-wide)"; exit 2; }
	spec='$(DEPLOY)'; op=$${spec%%:*}; variant=default; case $$spec in *:*) variant=$${spec#*:};; esac; \
		scripts/deploy.sh apply "$$op" "$$variant" '$(IMG)'
endif

.PHONY: undeploy
undeploy: ## Delete DEPLOY (all four operators, default variant) from the cluster kubectl points at; their CRDs and custom resources stay (make uninstall deletes them).
	scripts/deploy.sh delete $(DEPLOY)

.PHONY: install
install: ## Install every operator's CRDs (crds/) in the cluster kubectl points at.
	kubectl apply --server-side -f crds/

.PHONY: uninstall
uninstall: ## Delete every operator's CRDs from the cluster kubectl points at, and with them every custom resource of their kinds.
	kubectl delete --ignore-not-found -f crds/

.PHONY: olm-up
olm-up: ## Install OLM on the local cluster (on its real node) and serve the catalog from a local registry mirror.
	scripts/olm.sh up

.PHONY: olm-down
olm-down: ## Remove OLM's operators and the catalog from the local cluster; stop the registry.
	scripts/olm.sh down

.PHONY: kind-up
kind-up: ## Start a kind cluster instead (needs Docker).
	scripts/kind.sh up

.PHONY: kind-down
kind-down: ## Delete the kind cluster.
	scripts/kind.sh down

##@ Run

.PHONY: run
run: ## Start the local cluster, install the CRDs, run every operator and apply the samples; Ctrl-C stops.
	scripts/run.sh $(OPERATORS)

##@ Labs

# -run is anchored: TestChecker, the checker's own unit test, is no check of
# anyone's cluster. LAB=42 and LAB=x are refused by the test, which lists the
# labs.
.PHONY: lab-start
lab-start: ## Copy the starters of lab LAB's tasks into labs/tasks/work/, where you write them (make lab-start LAB=7).
	scripts/lab-start.sh '$(LAB)'

.PHONY: lab-check
lab-check: ## Check your work on lab LAB (make lab-check LAB=7) against your current cluster: its steps, and the tasks you wrote in labs/tasks/work/.
	@if [ -z "$(LAB)" ]; then echo "make lab-check needs the lab's number: make lab-check LAB=7 checks lab 7 against your current cluster (labs/README.md lists the labs)" >&2; exit 2; fi
	cd tests && LAB='$(LAB)' go test -count=1 -run '^TestCheck$$' ./labs/ -v
