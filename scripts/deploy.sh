#!/usr/bin/env bash
# Deploys operators as a cluster admin installs them from this repository:
# each operator's shipped manifests (operators/<name>/config/<variant>: its
# namespace, ServiceAccount, generated RBAC and Deployment) applied with
# kubectl, running its image: the one scripts/olm-images.sh builds without
# a daemon, which the catalog ships too, imported into the real node's
# containerd on the local cluster, or into the node of a kind cluster.
#
# usage: scripts/deploy.sh NAME OPERATOR[:VARIANT]...
#        scripts/deploy.sh apply OPERATOR VARIANT IMAGE
#        scripts/deploy.sh delete OPERATOR[:VARIANT]...
#   NAME       a local cluster with its real node (scripts/cluster.sh up NAME),
#              or a kind cluster (scripts/kind.sh up NAME) when kubectl's
#              current context is kind-NAME
#   OPERATOR   database, gordon, mysql-backup or etcd-cluster; VARIANT is the
#              folder of its config/ to apply: default (namespaced), or
#              cluster-wide (database:cluster-wide)
#   apply      install OPERATOR's CRDs and apply its config/VARIANT to the
#              current kubectl context with IMAGE, and wait for its rollout
#   delete     delete what apply applied of each config/VARIANT from the
#              current kubectl context: the operator, its namespace (not the
#              one it serves), its RBAC and its users' roles; its CRDs, and
#              so every custom resource, stay (make uninstall deletes them)
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

# crds OPERATOR prints the files of crds/ that define OPERATOR's API: those of
# its API group.
crds() {
	local group
	group=$(sed -n 's/.*schema.GroupVersion{Group: "\([^"]*\)".*/\1/p' "$root"/operators/"$1"/api/*/groupversion_info.go)
	[ -n "$group" ] || die "operators/$1 has no API group"
	ls "$root/crds/${group}"_*.yaml
}

# apply OPERATOR VARIANT IMAGE installs the operator's CRDs, applies its
# manifests with IMAGE in place of the one they name, and waits for its
# Deployment to roll out.
apply() {
	local op=$1 variant=$2 image=$3 dir manifests ns f start=$SECONDS
	dir=$root/operators/$op/config/$variant
	[ -f "$dir/kustomization.yaml" ] || die "operators/$op/config/$variant: no such variant (see operators/$op/config)"
	for f in $(crds "$op"); do
		kubectl apply --server-side -f "$f" >/dev/null
		kubectl wait --for=condition=Established --timeout=60s -f "$f" >/dev/null
	done
	# The manifests name the image $op-operator:dev, which no registry has.
	manifests=$(kubectl kustomize "$dir" | sed "s|^\( *image: \)$op-operator:dev\$|\1$image|")
	# The namespace the manifests put the operator in: <op>-operator-system,
	# or etc for the namespaced etcd operator, which acts on the namespace it
	# runs in.
	ns=$(awk '/^kind: Deployment$/{d=1} d && /^  namespace: /{print $2; exit}' <<<"$manifests")
	[ -n "$ns" ] || die "operators/$op/config/$variant has no namespaced Deployment"
	kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	grep -q "^ *image: $image\$" <<<"$manifests" || die "operators/$op/config/$variant does not name the image $op-operator:dev"
	kubectl apply -f - <<<"$manifests" >/dev/null
	kubectl -n "$ns" rollout status "deployment/$op-operator" --timeout=3m >/dev/null
	say "$op ($variant) runs $image in namespace $ns ($((SECONDS - start))s)"
}

# delete OPERATOR VARIANT deletes the objects of the operator's
# config/VARIANT, and waits for them to go.
delete() {
	local op=$1 variant=$2 dir start=$SECONDS
	dir=$root/operators/$op/config/$variant
	[ -f "$dir/kustomization.yaml" ] || die "operators/$op/config/$variant: no such variant (see operators/$op/config)"
	kubectl kustomize "$dir" | kubectl delete --ignore-not-found --timeout=3m -f - >/dev/null
	say "$op ($variant) deleted ($((SECONDS - start))s); its CRDs and custom resources stay"
}

[ $# -ge 1 ] || usage
case $1 in
apply)
	[ $# = 4 ] || usage
	apply "$2" "$3" "$4"
	exit
	;;
delete)
	shift
	[ $# -ge 1 ] || usage
	for spec in "$@"; do
		variant=default
		[[ $spec != *:* ]] || variant=${spec#*:}
		delete "${spec%%:*}" "$variant"
	done
	exit
	;;
esac
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
if [ "$(kubectl config current-context 2>/dev/null)" = "kind-$name" ]; then
	"$root/scripts/kind.sh" load "$name" "${archives[@]}"
else
	"$root/scripts/node.sh" load "$name" "${archives[@]}"
	# The placement policy sends a pod whose image has no stand-in on the
	# real node to the fake ones: these have one now.
	"$root/scripts/node.sh" admit "$name" "$registry/" >/dev/null
fi
for spec in "$@"; do
	op=${spec%%:*} variant=default
	[[ $spec != *:* ]] || variant=${spec#*:}
	apply "$op" "$variant" "$registry/$op-operator:v$version"
done
