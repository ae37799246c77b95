#!/usr/bin/env bash
# Runs the workshop's cluster on kind, for learners with Docker; without
# Docker, scripts/cluster.sh runs the same workshop offline.
#
# usage: scripts/kind.sh up|down [NAME] | deploy NAME OPERATOR[:VARIANT]...
#   up      create cluster NAME from scripts/kind-config.yaml, or reuse it;
#           kind makes kind-NAME kubectl's current context
#   down    delete cluster NAME (no error if absent)
#   deploy  build each operator's image with ko, load it into NAME and run the
#           operator there from its config/VARIANT manifests (default, or
#           cluster-wide: database:cluster-wide)
# NAME defaults to $CLUSTER_NAME, else "workshop".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmd=${1:-}
name=${2:-${CLUSTER_NAME:-workshop}}

die() { echo "kind.sh: $*" >&2; exit 1; }

# kind and kubectl are the project's own builds (scripts/tools), like every
# other tool: nothing to install but Docker.
export PATH="$root/bin:$PATH"

case $cmd in
up | down | deploy) ;;
*)
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
if ! docker info >/dev/null 2>&1; then
	die "no Docker daemon answers 'docker info': install or start Docker (or use scripts/cluster.sh, which needs no Docker)"
fi

"$root/scripts/build-tools.sh" kubernetes kind

case $cmd in
up)
	start=$SECONDS
	if kind get clusters 2>/dev/null | grep -qx "$name"; then
		kind export kubeconfig --name "$name"
		echo "kind.sh: reused cluster $name in $((SECONDS - start))s" >&2
	else
		kind create cluster --name "$name" --config "$root/scripts/kind-config.yaml" --wait 2m
		echo "kind.sh: created cluster $name in $((SECONDS - start))s" >&2
	fi
	;;
down) kind delete cluster --name "$name" ;;
deploy)
	shift 2 || die "usage: scripts/kind.sh deploy NAME OPERATOR[:VARIANT]..."
	"$root/scripts/build-tools.sh" ko
	for spec in "$@"; do
		op=${spec%%:*} variant=default
		[[ $spec != *:* ]] || variant=${spec#*:}
		# ko builds from the Go sources (no Dockerfile) and, with kind.local,
		# loads the image straight into the cluster's nodes.
		image=$(cd "$root" && KO_DOCKER_REPO=kind.local KIND_CLUSTER_NAME=$name \
			"$root/bin/ko" build --bare "./operators/$op/cmd")
		"$root/scripts/deploy.sh" apply "$op" "$variant" "$image"
	done
	;;
esac
