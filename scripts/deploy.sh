#!/usr/bin/env bash
# Deploys operators as a cluster admin installs them from a release: each
# operator's install manifest (scripts/release.sh: its CRDs and
# operators/<name>/config/<variant>: its namespace, ServiceAccount, generated
# RBAC and Deployment) applied with kubectl, running its image by digest:
# the one make release builds, for this machine's platform, imported into the
# real node's containerd on the local cluster, or into the node of a kind
# cluster.
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
# shellcheck source=scripts/toolbox.sh
. "$root/scripts/toolbox.sh"
export PATH="${BIN:-$root/bin}:$PATH"
registry=${REGISTRY:-ghcr.io/operator-workshops}

say() { echo "deploy.sh: $*" >&2; }
die() { say "$*"; exit 1; }
usage() {
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# apply OPERATOR VARIANT IMAGE applies the operator's install manifest (its
# CRDs and config/VARIANT, as make release writes it) with IMAGE, and waits
# for its Deployment to roll out.
apply() {
	local op=$1 variant=$2 image=$3 manifests ns start=$SECONDS
	manifests=$("$root/scripts/release.sh" manifest "$op" "$variant" "$image")
	# The namespace the operator runs in: <op>-operator-system, which the
	# manifests hold, or etc for the namespaced etcd operator, which acts on
	# the namespace it runs in and which they do not hold.
	ns=$(awk '/^kind: Deployment$/{d=1} d && /^  namespace: /{print $2; exit}' <<<"$manifests")
	[ -n "$ns" ] || die "operators/$op/config/$variant has no namespaced Deployment"
	grep -q "^kind: Namespace$" <<<"$manifests" ||
		kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	# --force-conflicts: an earlier deploy applied these objects client-side.
	kubectl apply --server-side --force-conflicts -f - <<<"$manifests" >/dev/null
	# shellcheck disable=SC2046 # a name a line
	kubectl wait --for=condition=Established --timeout=60s \
		$(awk '/^kind: CustomResourceDefinition$/{c=1} c && /^  name: /{print "crd/" $2; c=0}' <<<"$manifests") >/dev/null
	if ! kubectl -n "$ns" rollout status "deployment/$op-operator" --timeout=3m >/dev/null; then
		# What kubectl describe would show of it: where its pods are stuck.
		say "$op-operator did not roll out in 3 minutes; its pods and namespace $ns's events:"
		kubectl -n "$ns" get pods -o wide -l "app.kubernetes.io/name=$op-operator" >&2 || true
		kubectl -n "$ns" get events --sort-by=.lastTimestamp >&2 || true
		kubectl -n "$ns" logs "deployment/$op-operator" --tail=20 >&2 || true
		exit 1
	fi
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
context=$(kubectl config current-context 2>/dev/null || echo "$name")
nodes=$root/scripts/node.sh
! on_kind "$name" || nodes=$root/scripts/kind.sh
# Per cluster (kubectl's context: a kind cluster and a local one may share a
# name): deploys to clusters side by side never write the same file.
out=${BIN:-$root/bin}/deploy/$context
declare -A images
for spec in "$@"; do
	op=${spec%%:*}
	[ -z "${images[$op]:-}" ] || continue
	digest=$(PLATFORMS=linux/$(go env GOARCH) "$root/scripts/release.sh" image "$op" "$out/$op-operator.tar" "$registry/$op-operator:v$version")
	images[$op]=$registry/$op-operator@$digest
	"$nodes" load "$name" "$out/$op-operator.tar"
done
# The placement policy sends a pod whose image has no stand-in on the real
# node to the fake ones: these have one now.
on_kind "$name" || "$nodes" admit "$name" "$registry/" >/dev/null
for spec in "$@"; do
	op=${spec%%:*} variant=default
	[[ $spec != *:* ]] || variant=${spec#*:}
	apply "$op" "$variant" "${images[$op]}"
done
