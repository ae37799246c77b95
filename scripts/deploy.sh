#!/usr/bin/env bash
# Deploys operators as a cluster admin installs them from this repository:
# each operator's shipped manifests (operators/<name>/config/<variant>: its
# namespace, ServiceAccount, generated RBAC and Deployment) applied with
# kubectl, running its image. On the local cluster the image is the one
# scripts/olm-images.sh builds without a daemon, imported into the real
# node's containerd, where the operator's pod runs; scripts/kind.sh deploy
# applies the same manifests with an image ko built.
#
# usage: scripts/deploy.sh NAME OPERATOR[:VARIANT]...
#        scripts/deploy.sh apply OPERATOR VARIANT IMAGE
#   NAME       a local cluster with its real node (scripts/cluster.sh up NAME)
#   OPERATOR   database, gordon, mysql-backup or etcd-cluster; VARIANT is the
#              folder of its config/ to apply: default (namespaced), or
#              cluster-wide (database:cluster-wide)
#   apply      apply OPERATOR's config/VARIANT to the current kubectl context
#              with IMAGE, and wait for its rollout
# $REGISTRY names the images (ghcr.io/operator-workshops, as catalog/ does).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="${BIN:-$root/bin}:$PATH"
registry=${REGISTRY:-ghcr.io/operator-workshops}

say() { echo "deploy.sh: $*" >&2; }
die() { say "$*"; exit 1; }
usage() {
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# apply OPERATOR VARIANT IMAGE applies the manifests and waits for the
# operator's Deployment to roll out.
apply() {
	local op=$1 variant=$2 image=$3 dir manifests ns start=$SECONDS
	dir=$root/operators/$op/config/$variant
	[ -f "$dir/kustomization.yaml" ] || die "operators/$op/config/$variant: no such variant (see operators/$op/config)"
	manifests=$(kubectl kustomize "$dir")
	# The namespace the manifests put the operator in: <op>-operator-system,
	# or etc for the namespaced etcd operator, which acts on the namespace it
	# runs in.
	ns=$(awk '/^kind: Deployment$/{d=1} d && /^  namespace: /{print $2; exit}' <<<"$manifests")
	[ -n "$ns" ] || die "operators/$op/config/$variant has no namespaced Deployment"
	kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	kubectl apply -f - <<<"$manifests" >/dev/null
	kubectl -n "$ns" set image "deployment/$op-operator" "operator=$image" >/dev/null
	kubectl -n "$ns" rollout status "deployment/$op-operator" --timeout=3m >/dev/null
	say "$op ($variant) runs $image in namespace $ns ($((SECONDS - start))s)"
}

[ $# -ge 1 ] || usage
if [ "$1" = apply ]; then
	[ $# = 4 ] || usage
	apply "$2" "$3" "$4"
	exit
fi
[ $# -ge 2 ] || usage
name=$1
shift
version=$(cat "$root/catalog/VERSION")
out=${OLM_IMAGES_DIR:-$root/bin/images}
"$root/scripts/olm-images.sh" build
archives=()
for spec in "$@"; do
	archives+=("$out/${spec%%:*}-operator.tar")
done
"$root/scripts/node.sh" load "$name" "${archives[@]}"
# The placement policy sends a pod whose image has no stand-in on the real
# node to the fake ones: these have one now.
"$root/scripts/node.sh" admit "$name" "$registry/" >/dev/null
for spec in "$@"; do
	op=${spec%%:*} variant=default
	[[ $spec != *:* ]] || variant=${spec#*:}
	apply "$op" "$variant" "$registry/$op-operator:v$version"
done
