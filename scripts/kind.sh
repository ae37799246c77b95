#!/usr/bin/env bash
# Runs the workshop's cluster on kind, for learners with Docker; without
# Docker, scripts/cluster.sh runs the same workshop offline.
#
# usage: scripts/kind.sh up|down|check [NAME] | node-image
#        scripts/kind.sh load NAME ARCHIVE... | import NAME IMAGE...
#        scripts/kind.sh mirror NAME REGISTRY URL
#   up          create cluster NAME from scripts/kind-config.yaml, or reuse it;
#               kind makes kind-NAME kubectl's current context
#   down        delete cluster NAME (no error if absent)
#   check       prove the node of cluster NAME runs what the labs rely on
#               (scripts/check-node.sh), its context kind-NAME current
#   node-image  print the node image up uses, loading or building it first
#   load        load docker archives into the nodes of cluster NAME
#               (make deploy does, with the operators' images)
#   import      build images of scripts/images.sh (olm) and load them
#   mirror      pull the images of REGISTRY (a host, ghcr.io) from the
#               registry at URL instead (scripts/olm.sh runs one), as
#               scripts/node.sh mirror does for the real node
# NAME defaults to $CLUSTER_NAME, else "workshop".
#
# The node image is $KIND_NODE_IMAGE when set, else kind's released image for
# the pinned kind (pulled once). Where it cannot be pulled (offline) or cannot
# boot (its systemd refuses cgroup v1), up builds the project's own instead
# (scripts/images.sh kind-node, a few minutes the first time) and loads it.
# Where Docker cannot start privileged containers at all, kind runs through
# scripts/kind-docker's wrapper (which says why). kind and kubectl are the
# ones on PATH when kind is the pinned release and kubectl answers, else the
# project's builds (scripts/build-tools.sh kind kubectl).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$root/bin}
cmd=${1:-}
name=${CLUSTER_NAME:-workshop}

say() { echo "kind.sh: $*" >&2; }
die() { say "$*"; exit 1; }
usage() {
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}
# shellcheck source=scripts/wait.sh
. "$root/scripts/wait.sh"
# shellcheck source=scripts/toolbox.sh
. "$root/scripts/toolbox.sh"

case $cmd in
up | down | check) name=${2:-$name} ;;
load | import) [ $# -ge 3 ] || usage ;;
mirror) [ $# = 4 ] || usage ;;
node-image) ;;
*) usage ;;
esac
if ! docker info >/dev/null 2>&1; then
	die "no Docker daemon answers 'docker info': install or start Docker (scripts/dockerd.sh start starts Debian's docker.io daemon), or use scripts/cluster.sh, which needs no Docker"
fi

# tools puts the pinned kind and a kubectl first on PATH.
tools() {
	local want
	want=$(pinned_version "$root/scripts/tools/kind" sigs.k8s.io/kind)
	if ! kind version 2>/dev/null | grep -q "^kind $want "; then
		"$root/scripts/build-tools.sh" kind
		export PATH="$bin:$PATH"
	fi
	if ! kubectl version --client >/dev/null 2>&1; then
		"$root/scripts/build-tools.sh" kubectl
		export PATH="$bin:$PATH"
	fi
}

# released prints kind's own node image for the pinned release.
released() {
	local dir
	dir=$(pinned_source "$root/scripts/tools/kind" sigs.k8s.io/kind)
	sed -n 's/^const Image = "\(.*\)"$/\1/p' "$dir/pkg/apis/config/defaults/image.go"
}

# node_image prints the node image to create nodes from, which docker holds.
node_image() {
	if [ -n "${KIND_NODE_IMAGE:-}" ]; then
		echo "$KIND_NODE_IMAGE"
		return
	fi
	local image out archive tag
	image=$(released)
	if [ "$(docker info -f '{{.CgroupVersion}}')" = 1 ]; then
		say "Docker runs on cgroup v1, where the systemd of kind's released node image ($image) does not boot: using the project's own node image"
	elif docker image inspect "$image" >/dev/null 2>&1; then
		echo "$image"
		return
	elif out=$(docker pull "$image" 2>&1); then
		echo "$image"
		return
	else
		say "cannot pull kind's node image $image ($(tail -n 1 <<<"$out")): using the project's own node image"
	fi
	read -r archive tag < <("$root/scripts/images.sh" kind-node)
	# Load it again when Docker holds another build under the same name: an
	# image's ID is the digest of its config, which the archive names.
	local previous
	previous=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
	if [ "$previous" != "$(tar -xOf "$archive" manifest.json | jq -r '.[0].Config')" ]; then
		local start=$SECONDS
		docker load -i "$archive" >/dev/null
		say "loaded $tag into Docker in $((SECONDS - start))s"
		# The build it replaces under that name (a gigabyte) goes, unless
		# a cluster's node still runs it.
		[ -z "$previous" ] || docker image rm "$previous" >/dev/null 2>&1 ||
			say "the previous $tag ($previous) stays: a kind cluster's node runs it"
	fi
	echo "$tag"
}

# privileged makes kind use scripts/kind-docker's wrapper when Docker cannot
# start a privileged container from IMAGE because the machine forbids a
# capability, and fails when it cannot for another reason.
privileged() {
	local out
	if out=$(docker run --rm --privileged --entrypoint /bin/true "$1" 2>&1); then
		return 0
	fi
	if grep -q "unable to apply caps" <<<"$out"; then
		say "Docker cannot start privileged containers here (runc: unable to apply caps): kind runs through scripts/kind-docker/docker"
		export PATH="$root/scripts/kind-docker:$PATH"
		return 0
	fi
	die "docker run --privileged $1 failed: $out"
}

case $cmd in
up)
	tools
	start=$SECONDS
	if kind get clusters 2>/dev/null | grep -qx "$name"; then
		kind export kubeconfig --name "$name"
		say "reused cluster $name in $((SECONDS - start))s"
	else
		image=$(node_image)
		privileged "$image"
		kind create cluster --name "$name" --image "$image" --config "$root/scripts/kind-config.yaml" --wait 3m
		# Claims wait for a default StorageClass: kind's, or the node
		# image's provisioner's, which makes it when it starts.
		wait_until "default StorageClass standard" 120 kubectl get storageclass standard
		# kind's --wait waits for the node only: pods that look a name up
		# right away would find no DNS server answering.
		wait_until "cluster DNS (CoreDNS available)" 120 kubectl -n kube-system wait --for=condition=Available deployment/coredns --timeout=5s
		say "created cluster $name in $((SECONDS - start))s"
	fi
	;;
down)
	tools
	# OLM's registry (scripts/olm.sh), if it serves this cluster, goes too.
	"$root/scripts/olm.sh" down "$name" || say "scripts/olm.sh down $name failed: see above"
	kind delete cluster --name "$name"
	;;
check)
	tools
	on_kind "$name" ||
		die "kubectl's current context is not kind-$name: make kind-up makes it current (kubectl config use-context kind-$name)"
	node=$name-control-plane
	"$root/scripts/check-node.sh" "$node" "$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$node" | awk '{print $1}')"
	;;
node-image)
	node_image
	;;
load | import)
	name=$2
	shift 2
	tools
	kind get clusters 2>/dev/null | grep -qx "$name" || die "no kind cluster $name: make kind-up first"
	archives=("$@")
	if [ "$cmd" = import ]; then
		mapfile -t archives < <("$root/scripts/images.sh" archive "$@")
	fi
	# kind load runs commands in the node with docker exec --privileged.
	privileged "$(docker inspect -f '{{.Config.Image}}' "$name-control-plane")"
	for archive in "${archives[@]}"; do
		start=$SECONDS
		flags=$("$root/scripts/release.sh" import-flags "$archive")
		if [ -z "$flags" ]; then
			kind load image-archive "$archive" --name "$name"
		else
			# kind load names an OCI archive's image by tag only: a pod
			# naming it by digest would pull it.
			for node in $(kind get nodes --name "$name"); do
				# shellcheck disable=SC2086 # flags
				docker exec -i "$node" ctr -n k8s.io images import $flags - <"$archive" >/dev/null
			done
		fi
		say "loaded $(basename "$archive") into $name in $((SECONDS - start))s"
	done
	;;
mirror)
	name=$2
	tools
	# containerd reads the mirrors at every pull, from the directory
	# scripts/kind-config.yaml names.
	for node in $(kind get nodes --name "$name"); do
		docker exec "$node" grep -q 'config_path = "/etc/containerd/certs.d"' /etc/containerd/config.toml ||
			die "node $node reads no registry mirrors: its cluster predates them in scripts/kind-config.yaml; recreate it (make kind-down kind-up)"
		printf 'server = "https://%s"\n\n[host."%s"]\n  capabilities = ["pull", "resolve"]\n' "$3" "$4" |
			docker exec -i "$node" sh -c "mkdir -p /etc/containerd/certs.d/$3 && cat >/etc/containerd/certs.d/$3/hosts.toml"
	done
	say "images of $3 are pulled from $4 in cluster $name"
	;;
esac
