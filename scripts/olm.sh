#!/usr/bin/env bash
# Installs Operator Lifecycle Manager on a local cluster and serves this
# project's catalog to it, offline, the way a cluster admin in a disconnected
# network does:
#
#   1. OLM's olm and catalog operators, built from the module
#      scripts/tools/olm pins into the image workshop.local/olm (imported into
#      the real node's containerd), run as pods in the namespace olm, as
#      OLM's own manifests from the same module say (its CRDs, and its
#      quickstart olm.yaml, adapted by kustomize: see manifests below);
#   2. the operator, bundle and catalog images (scripts/olm-images.sh) go to
#      a registry on this machine (127.0.0.1:5000, scripts/images/registry),
#      which the real node's containerd uses as the mirror of the registry
#      they are named in (ghcr.io): the committed catalog, unchanged, is what
#      OLM reads and pulls from;
#   3. the CatalogSource operator-workshops (namespace olm) runs the catalog
#      image, and the OperatorGroup global-operators (namespace operators)
#      takes Subscriptions for every namespace, as upstream OLM sets it up.
#
# Then a Subscription installs an operator, as catalog/README.md shows. OLM's
# pods, its bundle unpack Jobs and the operators it installs all run on the
# real node: a local cluster without one cannot run OLM (status 3).
#
# On a kind cluster (scripts/kind.sh up NAME, its context kind-NAME current)
# the same happens in kind's node: the OLM image is loaded into it, and the
# registry listens on Docker's gateway of kind's network, which the node
# reaches, instead of the loopback.
#
# usage: scripts/olm.sh up|down|status [NAME]
#   up      install OLM on cluster NAME and serve the catalog (idempotent)
#   down    remove the CatalogSource and OLM's operators, stop the registry
#           (OLM's CRDs, Subscriptions and installed operators stay)
#   status  print the catalog's connection state; status 1 when not READY
# NAME defaults to $CLUSTER_NAME, else "workshop". $REGISTRY is where the
# images are named (ghcr.io/operator-workshops, as in catalog/), $OLM_MIRROR the
# local registry's address (127.0.0.1:5000; on kind, Docker's gateway, port 5000).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/toolbox.sh
. "$root/scripts/toolbox.sh"
cluster_script "$@"
olm_dir=$dir/olm
pidfiles=$olm_dir/pids
registry=${REGISTRY:-ghcr.io/operator-workshops}
registry_host=${registry%%/*}
ns=olm
catalog_source=operator-workshops

say() { echo "olm.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# A directory of this run's own, removed when it exits, failed or not.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# On kind, the cluster's node is kind's, and kubectl's current context
# names it; else the local cluster's own kubeconfig does.
if on_kind "$name"; then
	kind=1
	nodes=$root/scripts/kind.sh
	k() { kubectl --context "kind-$name" "$@"; }
	default_mirror=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | awk '{print $1}'):5000
else
	kind=
	nodes=$root/scripts/node.sh
	k() { kubectl --kubeconfig "$dir/kubeconfig-$name.yaml" "$@"; }
	default_mirror=127.0.0.1:5000
fi
mirror=${OLM_MIRROR:-$default_mirror}

# shellcheck source=scripts/wait.sh
. "$root/scripts/wait.sh"

# module_dir prints where Go keeps the OLM module scripts/tools/olm pins.
module_dir() {
	pinned_source "$root/scripts/tools/olm" github.com/operator-framework/operator-lifecycle-manager
}

# start_registry runs the mirror registry, unless it already answers.
start_registry() {
	if alive "$pidfiles/registry.pid" registry && curl -fsS "http://$mirror/v2/" >/dev/null 2>&1; then
		return 0
	fi
	if curl -fsS --max-time 2 "http://$mirror/v2/" >/dev/null 2>&1; then
		die "something else answers on $mirror: stop it, or set OLM_MIRROR to a free address"
	fi
	mkdir -p "$pidfiles"
	(cd "$root/scripts/images" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -o "$bin/registry" ./registry)
	setsid nohup "$bin/registry" --addr "$mirror" --dir "$olm_dir/blobs" </dev/null >>"$olm_dir/registry.log" 2>&1 &
	echo $! >"$pidfiles/registry.pid"
	wait_until "registry on $mirror" 30 curl -fsS "http://$mirror/v2/"
}

# manifests prints OLM's own install manifest (deploy/upstream/quickstart/
# olm.yaml of the module scripts/tools/olm pins: its namespaces, its
# operators' ServiceAccount, ClusterRoles and Deployments, the global
# OperatorGroup) as kustomize makes it run here: OLM's image built from the
# same module, pods as Pod Security's restricted level asks, the catalog
# operator told which opm and util images its bundle unpack Jobs run, and
# this project's CatalogSource in place of OperatorHub's (no internet). Left
# out: packageserver (a CSV for the aggregated API behind `kubectl get
# packagemanifests`, whose image nothing builds here).
manifests() {
	local olm_image=$1 catalog_image=$2 work
	work=$(mktemp -d "$scratch/manifests.XXXXXX")
	cp "$(module_dir)/deploy/upstream/quickstart/olm.yaml" "$work/olm.yaml"
	cat >"$work/kustomization.yaml" <<EOF
resources: [olm.yaml, catalogsource.yaml]
patches:
- patch: |
    \$patch: delete
    apiVersion: operators.coreos.com/v1alpha1
    kind: ClusterServiceVersion
    metadata: {name: packageserver, namespace: $ns}
- patch: |
    \$patch: delete
    apiVersion: operators.coreos.com/v1alpha1
    kind: CatalogSource
    metadata: {name: operatorhubio-catalog, namespace: $ns}
- target: {kind: Deployment}
  patch: |
    - {op: replace, path: /spec/template/spec/containers/0/image, value: $olm_image}
    - op: add
      path: /spec/template/spec/securityContext
      value: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
    - op: add
      path: /spec/template/spec/containers/0/securityContext
      value: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    - {op: add, path: /spec/template/spec/containers/0/readinessProbe/periodSeconds, value: 2}
    # Upstream's liveness probe restarts an operator that misses /healthz
    # three times 10 s apart from its start, as a busy 2-core machine may
    # make it: a restart only delays every install that waits on it, and
    # a stuck operator shows in this script's waits and in kubectl.
    - {op: remove, path: /spec/template/spec/containers/0/livenessProbe}
# The bundle unpack Jobs run opm from the catalog image and copy cpb with
# /bin/cp from the OLM image, as upstream's images do.
- target: {kind: Deployment, name: catalog-operator}
  patch: |
    - op: replace
      path: /spec/template/spec/containers/0/args
      value: [--namespace=$ns, --opmImage=$catalog_image, --util-image=$olm_image, --set-workload-user-id=true]
EOF
	cat >"$work/catalogsource.yaml" <<EOF
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: $catalog_source, namespace: $ns}
spec:
  sourceType: grpc
  image: $catalog_image
  displayName: Operator workshops
  publisher: operator-workshops
  grpcPodConfig: {securityContextConfig: restricted}
EOF
	kubectl kustomize "$work"
}

# catalog_state prints the CatalogSource's connection state (READY when OLM
# reads the catalog over gRPC).
catalog_state() {
	k -n "$ns" get catalogsource "$catalog_source" -o 'jsonpath={.status.connectionState.lastObservedState}' 2>/dev/null
}

catalog_ready() { [ "$(catalog_state)" = READY ]; }

olm_ready() {
	k -n "$ns" rollout status deployment/olm-operator --timeout=2s && k -n "$ns" rollout status deployment/catalog-operator --timeout=2s
}

up() {
	local start=$SECONDS holder olm_image catalog_image mod
	if [ -z "$kind" ]; then
		[ -f "$dir/kwok.yaml" ] || die "cluster $name does not exist: run scripts/cluster.sh up $name (or scripts/kind.sh up $name)"
		holder=$("$root/scripts/node.sh" status 2>/dev/null || true)
		if [ "$holder" != "$name" ]; then
			say "OLM runs its operators, its bundle unpack Jobs and the operators it installs as pods:"
			say "cluster $name has no real node${holder:+ (cluster $holder holds it)}; see scripts/node.sh"
			exit 3
		fi
	fi
	mkdir -p "$olm_dir" "$pidfiles"

	say "building OLM (scripts/tools/olm; 3 to 5 minutes the first time) and its image"
	"$root/scripts/build-tools.sh" olm
	olm_image=$("$root/scripts/images.sh" olm-image)
	"$nodes" import "$name" olm

	# push builds the images, then pushes them: built once.
	say "building the operator, bundle and catalog images and pushing them to the registry (scripts/olm-images.sh push)"
	catalog_image=$registry/catalog:v$(cat "$root/catalog/VERSION")
	start_registry
	REGISTRY=$registry "$root/scripts/olm-images.sh" push "$mirror" | sed 's/^/olm.sh: /' >&2
	"$nodes" mirror "$name" "$registry_host" "http://$mirror"
	# The real node's containerd outlives clusters: an operator, bundle or
	# catalog image an earlier up (or make deploy) left there under the same
	# tag would run instead of these. kind's node is new with each cluster.
	[ -n "$kind" ] || "$nodes" forget "$name" "$registry/"
	# The local cluster's placement policy sends pods of images without a
	# stand-in to its fake nodes; kind has no other node.
	[ -n "$kind" ] || "$root/scripts/node.sh" admit "$name" "$registry/" "$olm_image"

	mod=$(module_dir)
	k apply --server-side -f "$mod/deploy/chart/crds" >/dev/null
	k wait --for=condition=Established --timeout=60s -f "$mod/deploy/chart/crds" >/dev/null
	manifests "$olm_image" "$catalog_image" | k apply --server-side -f - >/dev/null
	# A catalog pod of an earlier up serves the catalog it pulled then.
	k -n "$ns" delete pod -l "olm.catalogSource=$catalog_source" --ignore-not-found >/dev/null
	wait_until "OLM's operators ready" 180 olm_ready
	wait_until "catalog $catalog_source READY" 240 catalog_ready
	say "OLM serves the catalog $catalog_source on cluster $name in $((SECONDS - start))s; subscribe as catalog/README.md shows"
}

down() {
	if k get --raw /readyz --request-timeout=5s >/dev/null 2>&1 &&
		k get crd catalogsources.operators.coreos.com >/dev/null 2>&1; then
		k -n "$ns" delete catalogsource "$catalog_source" --ignore-not-found --wait=false >/dev/null
		k -n "$ns" delete deployment olm-operator catalog-operator --ignore-not-found >/dev/null
	fi
	if alive "$pidfiles/registry.pid" registry; then
		kill "$(cat "$pidfiles/registry.pid")" 2>/dev/null || true
		say "stopped the registry on $mirror"
	fi
	rm -rf "$pidfiles" "$olm_dir/blobs"
}

case $cmd in
up) up ;;
down) down ;;
status)
	state=$(catalog_state || true)
	echo "${state:-no catalog}"
	[ "$state" = READY ]
	;;
*)
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
