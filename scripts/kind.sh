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
# (scripts/images.sh kind-node, a few minutes the first time) and loads it;
# a user who is not root uses the one Docker holds, which root builds
# (debootstrap needs root), as kind's is pulled once. It holds what kind's
# released image holds, and no more: every other image is pulled by its
# upstream name (mysql:5.7, quay.io/coreos/etcd:v3.2.13), as online, from
# a registry mirror of Docker Hub and quay.io on Docker's gateway of kind's
# network, port 5001, which serves the project's stand-ins under those
# names (scripts/images.sh mirrored). up starts it and points the node at
# it; down stops it with the last kind cluster. A registry that answers
# there and that up did not start (another user's, say) is used as it is.
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
# shellcheck source=scripts/kept-build.sh
. "$root/scripts/kept-build.sh"

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
	if [ "$(id -u)" != 0 ] && tag=$(built_node_image) && [ -n "$tag" ]; then
		say "using the project's node image that Docker holds, $tag (building it takes root)"
		echo "$tag"
		return
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

# built_node_image prints the project's node image for the pinned kind that
# Docker holds, if any.
built_node_image() {
	docker images --filter "label=workshop.local/kind=$(pinned_version "$root/scripts/tools/kind" sigs.k8s.io/kind)" \
		--format '{{.Repository}}:{{.Tag}}' | grep -m1 '^workshop.local/kind-node:'
}

# ours IMAGE reports whether IMAGE is the project's node image, which
# holds kind's own images only and needs the mirror for the rest.
ours() {
	[ -n "$(docker image inspect -f '{{index .Config.Labels "workshop.local/kind"}}' "$1" 2>/dev/null)" ]
}

# hosts NODE REGISTRY URL [PATH] makes the containerd of NODE pull the
# images of REGISTRY from URL, a registry whose API is at URL's path when
# PATH is set (the mirror of mirror_upstream), else at /v2.
hosts() {
	local node=$1 registry=$2 url=$3 server=https://$2
	[ "$registry" != docker.io ] || server=https://registry-1.docker.io
	docker exec "$node" grep -q 'config_path = "/etc/containerd/certs.d"' /etc/containerd/config.toml ||
		die "node $node reads no registry mirrors: its cluster predates them in scripts/kind-config.yaml; recreate it (make kind-down kind-up)"
	{
		printf 'server = "%s"\n\n[host."%s"]\n  capabilities = ["pull", "resolve"]\n' "$server" "$url"
		[ -z "${4:-}" ] || printf '  override_path = true\n'
	} | docker exec -i "$node" sh -c "mkdir -p /etc/containerd/certs.d/$registry && cat >/etc/containerd/certs.d/$registry/hosts.toml"
}

# The mirror of Docker Hub and quay.io for the project's node image.
mirror_dir=$bin/kind-mirror
mirrored_registries=(docker.io quay.io)

# mirror_address prints where the mirror listens: Docker's gateway of kind's
# network, which its nodes reach, port 5001 (OLM's registry has 5000).
mirror_address() {
	echo "$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | awk '{print $1}'):5001"
}

# mirror_upstream points the nodes of cluster NAME at the mirror, which it
# starts unless it runs, and fills with the stand-ins built last (their
# stamps say which it holds).
mirror_upstream() {
	local name=$1 addr node registry archives stamps start=$SECONDS
	addr=$(mirror_address)
	mkdir -p "$mirror_dir"
	(
		flock 9
		if ! alive "$mirror_dir/registry.pid" registry && curl -fsS --max-time 2 "http://$addr/v2/" >/dev/null 2>&1; then
			# Someone else's: it serves what a node pulls, or says so.
			curl -fsS --max-time 2 -o /dev/null -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
				"http://$addr/v2/docker.io/library/mysql/manifests/5.7" ||
				die "a registry answers on $addr but serves no docker.io/library/mysql:5.7: stop it, or fill it (scripts/images.sh mirrored, then scripts/images/push --mirror '$addr/{registry}' with those archives)"
			say "a registry that this script did not start answers on $addr: the nodes pull Docker Hub's and quay.io's images from it"
			exit 0
		fi
		mapfile -t archives < <("$root/scripts/images.sh" mirrored)
		stamps=$(cat "${archives[@]/%/.stamp}")
		if ! alive "$mirror_dir/registry.pid" registry; then
			images_program registry "$mirror_dir/registry"
			rm -rf "$mirror_dir/blobs" "$mirror_dir/pushed"
			# Without the lock's descriptor, which it would hold as long
			# as it runs.
			setsid nohup "$mirror_dir/registry" --addr "$addr" --dir "$mirror_dir/blobs" </dev/null >>"$mirror_dir/registry.log" 2>&1 9>&- &
			echo $! >"$mirror_dir/registry.pid"
			wait_until "registry mirror on $addr" 30 curl -fsS "http://$addr/v2/"
		fi
		if [ "$(cat "$mirror_dir/pushed" 2>/dev/null)" != "$stamps" ]; then
			images_program push "$mirror_dir/push"
			"$mirror_dir/push" --mirror "$addr/{registry}" "${archives[@]}" >/dev/null
			echo "$stamps" >"$mirror_dir/pushed"
			say "the mirror on $addr serves ${#archives[@]} images as Docker Hub's and quay.io's (filled in $((SECONDS - start))s)"
		fi
	) 9>"$mirror_dir/lock"
	for node in $(kind get nodes --name "$name"); do
		for registry in "${mirrored_registries[@]}"; do
			hosts "$node" "$registry" "http://$addr/v2/$registry" path
		done
	done
	say "cluster $name pulls Docker Hub's and quay.io's images from the mirror on $addr"
}

# mirror_down stops the mirror when it runs and no kind cluster is left.
mirror_down() {
	[ -f "$mirror_dir/registry.pid" ] || return 0
	(
		flock 9
		[ -z "$(kind get clusters 2>/dev/null)" ] || exit 0
		if alive "$mirror_dir/registry.pid" registry; then
			kill "$(cat "$mirror_dir/registry.pid")" 2>/dev/null || true
			say "stopped the registry mirror"
		fi
		rm -rf "$mirror_dir/registry.pid" "$mirror_dir/blobs" "$mirror_dir/pushed"
	) 9>"$mirror_dir/lock"
}

# cluster_image prints the image the node of kind cluster NAME runs.
cluster_image() { docker inspect -f '{{.Config.Image}}' "$1-control-plane"; }

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
		# kind execs into the node privileged, as load does: through the
		# wrapper where Docker cannot start privileged containers.
		image=$(cluster_image "$name")
		privileged "$image"
		kind export kubeconfig --name "$name"
		! ours "$image" || mirror_upstream "$name"
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
		! ours "$image" || mirror_upstream "$name"
		say "created cluster $name in $((SECONDS - start))s"
	fi
	;;
down)
	tools
	# OLM's registry (scripts/olm.sh), if it serves this cluster, goes too.
	"$root/scripts/olm.sh" down "$name" || say "scripts/olm.sh down $name failed: see above"
	kind delete cluster --name "$name"
	mirror_down
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
	privileged "$(cluster_image "$name")"
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
	privileged "$(cluster_image "$name")"
	# containerd reads the mirrors at every pull, from the directory
	# scripts/kind-config.yaml names.
	for node in $(kind get nodes --name "$name"); do hosts "$node" "$3" "$4"; done
	say "images of $3 are pulled from $4 in cluster $name"
	;;
esac
